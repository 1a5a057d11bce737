"""Models. Every Keras model here outputs *logits* (no final softmax); the
softmax lives in the loss (`from_logits=True`), which is numerically safer and
lets FedIR compute per-example losses from the same predictions.
"""

from typing import Callable

import tensorflow as tf
import tensorflow_federated as tff


def per_example_loss(y_true: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
  """Per-example sparse softmax cross-entropy, shape [batch]."""
  return tf.keras.losses.sparse_categorical_crossentropy(
      tf.reshape(y_true, [-1]), logits, from_logits=True)


def build_tff_model_fn(keras_model_fn: Callable[[], tf.keras.Model],
                       input_spec) -> Callable[[], tff.learning.models.VariableModel]:
  """Wraps a no-arg Keras builder as a TFF `model_fn`.

  Args:
    keras_model_fn: builds a fresh, uncompiled Keras model outputting logits.
    input_spec: element spec of a *batched* training dataset, {'x', 'y'}.

  Returns:
    A no-arg function returning a `tff.learning.models.VariableModel` with mean
    sparse cross-entropy loss (+ the Keras model's regularization losses) and
    accuracy as the training metric; with sequence labels (`y` [batch,
    time]) both skip the padding (`masked.loss_and_metrics`).
  """
  from federated_vision.models import masked  # pylint: disable=g-import-not-at-top
  label_rank = input_spec["y"].shape.rank

  def model_fn():
    loss, metrics = masked.loss_and_metrics(label_rank)
    return tff.learning.models.from_keras_model(
        keras_model_fn(), input_spec=input_spec, loss=loss, metrics=metrics)
  # Read by components that need one label per example (FedIR).
  model_fn.sequence_labels = masked.is_sequence(label_rank)
  return model_fn
