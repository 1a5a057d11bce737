"""Numpy references for exact-value tests of an algorithm (design rule 2).

A new algorithm is checked against the paper's algorithm written out in
numpy, in its test: this module gives the pieces such a reference needs.

* The linear model: logits = x W (no bias, F features, C classes) with mean
  softmax cross-entropy (`model_fn`, `keras_model`), and its numpy twins:
  the gradient (`np_grad`), the loss and correct predictions of a batch
  (`np_loss_and_correct`), local SGD over batches in order
  (`np_local_sgd`) and a FedAvg round (McMahan et al. 2017, Algorithm 1,
  `np_fedavg_round`); clients of given sizes for it (`federated_data`).
* A client's exact batches of a round (`client_batches`): what the TFF
  executor builds for a round key from the same `TrainingSpec` (its E
  epochs, batch size, shuffling, FedVC resampling and augmentation, all
  seeded by the key), as numpy arrays, so a reference trains on exactly
  the data the process does. With `shuffle_buffer=0` the order is the
  stored one.

    from federated_vision.learning import reference
    fed = reference.federated_data({"a": 5, "b": 7}, seed=1)
    spec = client_data.TrainingSpec(batch_size=3, epochs=2, seed=1)
    for x, y in reference.client_batches(fed, spec, "a@1"):
      w = w - reference.LR * reference.np_grad(w, x, y)

tests/algorithms/test_stateful.py and tests/algorithms/test_scaffold.py use them
for FedDyn, FedNova and SCAFFOLD; docs/extending.md shows a stateful method's
test.
"""

import collections
from typing import List, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import client_data

F, C = 4, 3     # The linear model's features and classes.
B = 3           # A batch size the tests use.
LR = 0.1        # A client learning rate the tests use.
INPUT_SPEC = collections.OrderedDict(
    x=tf.TensorSpec([None, F], tf.float32), y=tf.TensorSpec([None], tf.int64))


def keras_model(seed: int = 3) -> tf.keras.Model:
  """logits = x W, W [F, C] Glorot-initialised with `seed`."""
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=(F,)),
      tf.keras.layers.Dense(C, use_bias=False, kernel_initializer=
                            tf.keras.initializers.GlorotUniform(seed=seed))])


def model_fn() -> tff.learning.models.VariableModel:
  """The linear model as TFF's model (mean cross-entropy, accuracy)."""
  return tff.learning.models.from_keras_model(
      keras_model(), input_spec=INPUT_SPEC,
      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=[tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")])


def sgd(lr: float = LR) -> tff.learning.optimizers.Optimizer:
  return tff.learning.optimizers.build_sgdm(learning_rate=lr)


def np_grad(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
  """Gradient of mean softmax cross-entropy of logits x w."""
  logits = x @ w
  p = np.exp(logits - logits.max(axis=1, keepdims=True))
  p /= p.sum(axis=1, keepdims=True)
  p[np.arange(len(y)), y] -= 1.0
  return x.T @ p / len(y)


def np_loss_and_correct(w: np.ndarray, x: np.ndarray, y: np.ndarray
                        ) -> Tuple[float, int]:
  """(summed cross-entropy, correct predictions) of a batch at w."""
  logits = x @ w
  z = logits - logits.max(axis=1, keepdims=True)
  log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
  return -log_p[np.arange(len(y)), y].sum(), int((logits.argmax(1) == y).sum())


def np_local_sgd(w, x, y, lr=LR, batch=B, extra=None):
  """One epoch of SGD over (x, y) in order, batches of `batch`; `extra` is
  added to every gradient."""
  for i in range(0, len(y), batch):
    g = np_grad(w, x[i:i + batch], y[i:i + batch])
    w = w - lr * (g if extra is None else g + extra)
  return w


def np_fedavg_round(w, clients, extra=None):
  """clients: [(x, y)]; deltas weighted by examples trained on."""
  deltas = [w - np_local_sgd(w, x, y, extra=extra) for x, y in clients]
  n = np.array([len(y) for _, y in clients], np.float64)
  return w - sum(d * k for d, k in zip(deltas, n)) / n.sum()


def federated_data(sizes, seed: int = 0, num_test: int = 4):
  """A `FederatedDataset` for the linear model: client id -> its number of
  examples (`sizes`, in order), standard-normal x, uniform labels, seeded;
  `num_test` test examples."""
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  n = sum(sizes.values())
  x = rng.normal(size=(n + num_test, F)).astype(np.float32)
  y = rng.integers(0, C, n + num_test).astype(np.int64)
  bounds = np.cumsum([0] + list(sizes.values()))
  partition = {c: np.arange(bounds[i], bounds[i + 1])
               for i, c in enumerate(sizes)}
  return digits.from_arrays("linear", x[:n], y[:n], x[n:], y[n:], partition,
                            C)


def client_batches(fed_data, spec: client_data.TrainingSpec,
                   key: str) -> List[Tuple[np.ndarray, np.ndarray]]:
  """The (x, y) batches, as float64 / int64 numpy, that client round key
  `key` ('<client id>@<round>') trains on under `spec`: the executor's own
  pipeline (`client_data.build_training_dataset_fn`), run eagerly."""
  dataset_fn = client_data.build_training_dataset_fn(
      fed_data.client_data.serializable_dataset_fn, spec,
      fed_data.train_map_fn)
  return [(np.asarray(b["x"], np.float64), np.asarray(b["y"], np.int64))
          for b in dataset_fn(tf.constant(key))]
