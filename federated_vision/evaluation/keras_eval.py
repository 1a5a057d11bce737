"""Centralized evaluation of federated model weights with a Keras model.

Why the Keras model is built lazily and rebuilt when needed: Keras 2.14 picks a
model's v1 or v2 base class when a model is *constructed* and does so by
rewriting the class's `__bases__` in place (`keras.src.utils.version_utils.
swap_class`): a model constructed inside a `tf.compat.v1.wrap_function` graph,
which is where TFF traces every `model_fn` when a learning process is built,
turns `Sequential`/`Functional` (and every layer class it uses) into their v1
classes for the whole process. A Keras model built earlier in eager mode then
runs v1 code and `evaluate` raises "Your Layer or Model is in an invalid
state". So the evaluation model is built at the first call (after the
processes are usually built), and built again, eagerly, which swaps the
classes back, whenever a process built since has swapped them. The weights are
assigned on every call, so a rebuild changes no number.
"""

from typing import Callable, Mapping

import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.training import run_files

EvaluateFn = Callable[[tff.learning.models.ModelWeights], Mapping[str, float]]


def built_as_v1(model: tf.keras.Model) -> bool:
  """Whether `model`'s class now runs Keras's v1 (graph-mode) training code."""
  return any(c.__module__.endswith(".training_v1") for c in type(model).__mro__)


def _compiled(keras_model_fn: Callable[[], tf.keras.Model],
              label_rank: int = 1) -> tf.keras.Model:
  """The model compiled with the loss and accuracy of its labels' rank
  (sequence labels skip their padding: `models.masked`)."""
  from federated_vision.models import masked  # pylint: disable=g-import-not-at-top
  model = keras_model_fn()
  loss, metrics = masked.loss_and_metrics(label_rank)
  model.compile(loss=loss, metrics=metrics)
  return model


def build_keras_evaluate_fn(keras_model_fn: Callable[[], tf.keras.Model],
                            eval_dataset: tf.data.Dataset) -> EvaluateFn:
  """Centralized evaluation of model weights on a batched {'x','y'} dataset.

  Safe in any order with building TFF learning processes (see the module
  docstring): the Keras model is made at the first call and remade when a
  process built since has switched Keras's classes to v1.

  Args:
    keras_model_fn: builds a fresh, uncompiled Keras model outputting logits,
      the one the process trains.
    eval_dataset: batched {'x', 'y'} elements, e.g.
      `FederatedDataset.test_batches()`.

  Returns:
    `model_weights -> {'loss', 'accuracy'}`: mean sparse softmax cross-entropy
    and accuracy over every example of `eval_dataset`.
  """
  label_rank = eval_dataset.element_spec["y"].shape.rank
  eval_dataset = eval_dataset.map(lambda b: (b["x"], b["y"]))
  models = []

  def evaluate(model_weights: tff.learning.models.ModelWeights):
    if not models or built_as_v1(models[0]):
      models[:] = [_compiled(keras_model_fn, label_rank)]
    model = models[0]
    model_weights.assign_weights_to(model)
    loss, accuracy = model.evaluate(eval_dataset, verbose=0)
    return {"loss": float(loss), "accuracy": float(accuracy)}
  return evaluate


FULL_TRAIN_LOSS = run_files.FULL_TRAIN_LOSS


def with_full_train_loss(evaluate_fn: EvaluateFn,
                         keras_model_fn: Callable[[], tf.keras.Model],
                         train_dataset: tf.data.Dataset) -> EvaluateFn:
  """`evaluate_fn` whose result also holds `FULL_TRAIN_LOSS`: the loss of
  the same weights over every example of `train_dataset` (McMahan et al.
  2017 §3: "FedAvg is effective at optimizing the training loss as well",
  their Figure 6).

  Args:
    evaluate_fn: the run's test-set evaluation.
    keras_model_fn: the model the process trains (as for
      `build_keras_evaluate_fn`).
    train_dataset: batched {'x', 'y'}: the pooled training data,
      `FederatedDataset.pooled_train_batches()` (every client's training
      examples, decoded without augmentation).

  Returns:
    `model_weights -> {**evaluate_fn(weights), FULL_TRAIN_LOSS: loss}`, the
    loss as the test loss is computed: mean sparse softmax cross-entropy
    over the examples plus the model's regularization losses (Keras
    `evaluate`).
  """
  on_train = build_keras_evaluate_fn(keras_model_fn, train_dataset)

  def evaluate(model_weights: tff.learning.models.ModelWeights):
    return {**evaluate_fn(model_weights),
            FULL_TRAIN_LOSS: on_train(model_weights)["loss"]}
  return evaluate
