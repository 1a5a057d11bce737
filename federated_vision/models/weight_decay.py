"""Weight decay as the papers' sources define it: wd * tf.nn.l2_loss(w).

`--weight_decay=wd` adds wd * sum(w**2) / 2 per decayed kernel to the training
loss, the convention of both public sources the presets take their values
from: the TensorFlow CIFAR-10 tutorial (`tensorflow/models`
tutorials/image/cifar10/cifar10.py: "weight_decay =
tf.multiply(tf.nn.l2_loss(var), wd, name='weight_loss')", 0.004 on its two
fully-connected layers) and slim's MobileNet training scope
(research/slim/nets/mobilenet/mobilenet.py: `slim.l2_regularizer(0.00004)` =
scale * tf.nn.l2_loss(weights), on `slim.conv2d` weights only). Keras' own
`l2(x)` is x * sum(w**2), twice this for the same number.

Which kernels a model decays is the model's (`federated_vision.models`); the
Keras model carries the terms as `model.losses`, which TFF's
`from_keras_model` adds to every client's batch loss and Keras' `fit` to the
centralized baseline's.
"""

from typing import Optional

import tensorflow as tf


class L2Loss(tf.keras.regularizers.Regularizer):
  """wd * tf.nn.l2_loss(w) = wd * sum(w**2) / 2."""

  def __init__(self, weight_decay: float):
    self.weight_decay = float(weight_decay)

  def __call__(self, w):
    return tf.cast(self.weight_decay, w.dtype) * tf.nn.l2_loss(w)

  def get_config(self):
    return {"weight_decay": self.weight_decay}


def regularizer(weight_decay: float) -> Optional[L2Loss]:
  """The decay of `weight_decay` (None for 0: the model is built without any
  regularizer, exactly as with no weight decay at all).

  Raises:
    ValueError: weight_decay is not a finite number >= 0.
  """
  if isinstance(weight_decay, bool) or not isinstance(
      weight_decay, (int, float)) or not 0 <= weight_decay < float("inf"):
    raise ValueError(f"weight_decay must be a finite number >= 0, got "
                     f"{weight_decay!r}")
  return L2Loss(weight_decay) if weight_decay > 0 else None
