"""The CIFAR CNN of Hsu, Qi & Brown 2019 (and McMahan et al. 2017), logits out.

Hsu, Qi & Brown, Measuring the Effects of Non-Identical Data Distribution for
Federated Visual Classification, 2019, Section 4: "a CNN with two 5x5x64
convolution layers, each followed by 2x2 max-pooling, then two fully connected
layers with 384 and 192 neurons, and finally a softmax linear classifier"
(the TensorFlow CIFAR-10 tutorial model McMahan et al. 2017 also use, on
24x24 crops). Here the classifier is linear (logits); the softmax lives in the
loss. Weight decay is the tutorial's: wd * tf.nn.l2_loss(w) on the kernels of
the two fully-connected hidden layers only (`tensorflow/models`
tutorials/image/cifar10/cifar10.py: local3 and local4 "wd=0.004", conv1,
conv2 and softmax_linear "wd=0.0"; biases never).

With the default 24x24x3 input and 'same' padding (24 -> 12 -> 6):
  conv1 5*5*3*64 + 64 = 4,864; conv2 5*5*64*64 + 64 = 102,464;
  fc 2,304*384 + 384 = 885,120; fc 384*192 + 192 = 73,920;
  classifier 192*10 + 10 = 1,930; total 1,068,298.
"""

from typing import Optional, Sequence

import tensorflow as tf

from federated_vision.models import mnist as _mnist
from federated_vision.models import precision
from federated_vision.models import weight_decay as weight_decay_lib

CIFAR_INPUT_SHAPE = (24, 24, 3)  # The centre / random 24x24 crop.
CIFAR10_CNN_PARAMS = 1_068_298


def create_cifar_cnn(num_classes: int = 10,
                     input_shape: Sequence[int] = CIFAR_INPUT_SHAPE,
                     weight_decay: float = 0.0,
                     seed: Optional[int] = None,
                     mixed_precision: str = "float32") -> tf.keras.Model:
  """Hsu et al. 2019's CIFAR CNN.

  conv 5x5x64 ReLU -> maxpool 2x2 -> conv 5x5x64 ReLU -> maxpool 2x2 ->
  dense 384 ReLU -> dense 192 ReLU -> dense num_classes (linear).

  Args:
    num_classes: 10 (CIFAR-10) or 100 (CIFAR-100).
    input_shape: image shape, (24, 24, 3) for the cropped pipeline of
      `federated_vision.data.cifar`; (32, 32, 3) for uncropped images.
    weight_decay: wd of `weight_decay.L2Loss` (the loss gains wd *
      sum(w**2) / 2) on the two hidden dense kernels, as the tutorial; 0
      builds no regularizer.
    seed: seed of the Glorot-uniform kernel initialisers, None for random.
    mixed_precision: "float32", or "bfloat16" (layers compute in bfloat16,
      variables and the classifier float32; `precision.layer_dtypes`).

  Returns:
    An uncompiled Keras model; 1,068,298 parameters with the defaults.
  """
  shape = _mnist._check(num_classes, input_shape)  # pylint: disable=protected-access
  if len(shape) != 3:
    raise ValueError(f"input_shape must be (height, width, channels), got "
                     f"{input_shape!r}")
  reg = weight_decay_lib.regularizer(weight_decay)  # Dense 384 / 192 only.
  init = lambda k: _mnist._init(seed, k)  # pylint: disable=protected-access
  hidden, output = precision.layer_dtypes(mixed_precision)
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=shape),
      tf.keras.layers.Conv2D(64, 5, padding="same", activation="relu",
                             kernel_initializer=init(1), dtype=hidden),
      tf.keras.layers.MaxPool2D(2, padding="same", dtype=hidden),
      tf.keras.layers.Conv2D(64, 5, padding="same", activation="relu",
                             kernel_initializer=init(2), dtype=hidden),
      tf.keras.layers.MaxPool2D(2, padding="same", dtype=hidden),
      tf.keras.layers.Flatten(dtype=hidden),
      tf.keras.layers.Dense(384, activation="relu", kernel_initializer=init(3),
                            kernel_regularizer=reg, dtype=hidden),
      tf.keras.layers.Dense(192, activation="relu", kernel_initializer=init(4),
                            kernel_regularizer=reg, dtype=hidden),
      tf.keras.layers.Dense(num_classes, kernel_initializer=init(5),
                            dtype=output),
  ], name="cifar_cnn")
