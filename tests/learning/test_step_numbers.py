"""`local.step` traces the model inline (`runtime.learning_internals.
forward_pass`) and takes symbolic gradients, where it used to call TFF's
Keras wrapper's `forward_pass` (a `tf.function`) under a tape: the worker
must compute what that step computed, bit for bit. A client of a small CNN
with MobileNetV2-GN's normalization (a tensor with three consumers, whose
gradients a tape adds in another order), whole or with its first layer
frozen, trains in a TFF computation with the model's loss and with FedIR's
objective (whose per-example cross-entropy Grappler merges with the loss's
unless the model's outputs leave as a function's).
"""

from unittest import mock

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import methods
from federated_vision import models
from federated_vision.algorithms import fedir
from federated_vision.data import client_data as cdl
from federated_vision.learning import local
from federated_vision.models import mobilenet_v2
from federated_vision.runtime import learning_internals

C = 10


def _tff_loss_gradients(model, batch, client, objective):
  """`local.loss_gradients` as it was: TFF's `forward_pass` under a tape."""
  inputs = {k: v for k, v in batch.items() if k != cdl.LABEL_COUNTS_KEY}
  with tf.GradientTape() as tape:
    output = model.forward_pass(inputs, training=True)
    loss, term = objective(output, batch, client)
  gradients = tape.gradient(loss, client.weights)
  return output, tuple(gradients if term is None else
                       (g + t for g, t in zip(gradients, term)))


def _model_fn(frozen: bool):
  def keras_model():
    init = lambda k: tf.keras.initializers.GlorotUniform(seed=k)
    model = tf.keras.Sequential([
        tf.keras.layers.InputLayer(input_shape=(8, 8, 1)),
        tf.keras.layers.Conv2D(8, 3, kernel_initializer=init(0)),
        tf.keras.layers.Conv2D(8, 3, kernel_initializer=init(1)),
        # MobileNetV2-GN's normalization: its input has 3 consumers.
        mobilenet_v2.GroupNorm(groups=2, epsilon=1e-3),
        tf.keras.layers.ReLU(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(C, kernel_initializer=init(2))])
    model.layers[0].trainable = not frozen
    return model
  spec = {"x": tf.TensorSpec([None, 8, 8, 1], tf.float32),
          "y": tf.TensorSpec([None], tf.int64)}
  return models.build_tff_model_fn(keras_model, spec)


def _train(model_fn, objective):
  """A client's 3 steps (`local.train`) in the worker: its weights, its
  (examples, loss sum, steps) and its unfinalized metrics."""
  rng = np.random.default_rng(5)
  x = rng.random((9, 8, 8, 1)).astype(np.float32)
  y = rng.integers(0, C, 9).astype(np.int64)
  counts = np.bincount(y, minlength=C).astype(np.float32)
  optimizer = tff.learning.optimizers.build_sgdm(0.5)

  @tff.tensorflow.computation
  def client():
    model = model_fn()
    dataset = tf.data.Dataset.from_tensor_slices({"x": x, "y": y}).batch(3).map(
        lambda b: {**b, cdl.LABEL_COUNTS_KEY: tf.constant(counts)})

    @tf.function
    def run():
      weights = tuple(model.trainable_variables)
      start = tuple(tf.identity(w) for w in weights)
      state = optimizer.initialize(
          tuple(tf.TensorSpec(w.shape, w.dtype) for w in weights))
      totals = local.train(model, optimizer, state, dataset,
                           local.Client(start, weights, objective.message),
                           objective.fn)
      return start, weights, totals, model.report_local_unfinalized_metrics()
    return run()
  start, *trained = client()
  return start, [np.asarray(t) for t in tf.nest.flatten(trained)]


OBJECTIVES = {"loss": lambda: methods.LocalObjective(local.model_loss),
              "fedir": lambda: fedir.local_objective(C)}


@pytest.mark.parametrize("frozen", [False, True], ids=["all", "frozen"])
@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_step_computes_what_tff_forward_pass_under_a_tape_computed(frozen,
                                                                  name):
  objective = OBJECTIVES[name]()
  model_fn = _model_fn(frozen)
  start, new = _train(model_fn, objective)
  with mock.patch.object(local, "loss_gradients", _tff_loss_gradients):
    _, old = _train(model_fn, objective)
  assert len(new) == len(old)
  for a, b in zip(new, old):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()
  # The clients trained: every trainable weight moved.
  assert len(start) == (6 if frozen else 8)
  for w0, w in zip(start, new[:len(start)]):
    assert not np.array_equal(w0, w)


def test_forward_pass_of_another_model_is_its_own():
  calls = []

  class Model:
    def forward_pass(self, batch, training=True):
      calls.append((batch, training))
      return "output"

  assert learning_internals.forward_pass(Model(), {"x": 1}, False) == "output"
  assert calls == [({"x": 1}, False)]
