"""Loss and accuracy of per-position labels with padding (sequence tasks).

A task whose labels are sequences (the Shakespeare character LSTM: `y` is
[80] per example, one target byte per position) pads them with `PAD_LABEL`
(0); padding is no target. The loss is the mean softmax cross-entropy over
the non-padding positions of the batch (Keras' `ignore_class`), and the
accuracy counts correct next-character predictions over the non-padding
positions only (`MaskedAccuracy`), as McMahan et al. 2017 §3 count "the
next character". Labels of one class per example (every image task) keep
the plain sparse loss and accuracy: `loss_and_metrics` chooses by the
labels' rank, so nothing changes for them.
"""

from typing import List, Tuple

import tensorflow as tf

PAD_LABEL = 0


class MaskedAccuracy(tf.keras.metrics.Mean):
  """Accuracy over the positions whose label is not `PAD_LABEL`:
  sum(argmax(logits) == y and y != pad) / sum(y != pad)."""

  def __init__(self, name: str = "accuracy", dtype=tf.float32):
    super().__init__(name=name, dtype=dtype)

  def update_state(self, y_true, y_pred, sample_weight=None):
    del sample_weight  # The padding is the weight.
    y_true = tf.cast(y_true, tf.int64)
    predicted = tf.argmax(y_pred, axis=-1, output_type=tf.int64)
    matches = tf.cast(tf.equal(predicted, y_true), self.dtype)
    weights = tf.cast(tf.not_equal(y_true, PAD_LABEL), self.dtype)
    return super().update_state(matches, sample_weight=weights)


def is_sequence(label_rank: int) -> bool:
  """Whether batched labels of this rank are sequences ([batch, time])."""
  return label_rank is not None and label_rank >= 2


def loss_and_metrics(label_rank: int) -> Tuple[tf.keras.losses.Loss,
                                               List[tf.keras.metrics.Metric]]:
  """(loss, [accuracy]) for batched labels of `label_rank`: rank 1 (one class
  per example) the plain sparse ones, rank >= 2 the masked ones."""
  if is_sequence(label_rank):
    return (tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=PAD_LABEL), [MaskedAccuracy()])
  return (tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
          [tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
