"""McMahan et al. 2017's MNIST models: the 2NN and the CNN (logits out).

McMahan et al., Communication-Efficient Learning of Deep Networks from
Decentralized Data, AISTATS 2017, Section 3:
  * 2NN: "A simple multilayer-perceptron with 2-hidden layers with 200 units
    each using ReLu activations (199,210 total parameters)".
  * CNN: "two 5x5 convolution layers (the first with 32 channels, the second
    with 64, each followed with 2x2 max pooling), a fully connected layer with
    512 units and ReLu activation, and a final softmax output layer (1,663,370
    total parameters)". The count is reproduced with 'same' padding (28 -> 14
    -> 7, so the dense layer sees 7*7*64 = 3,136 inputs).

As everywhere in `federated_vision.models`, the final layer is linear: the
models return logits and the softmax lives in the loss.
"""

from typing import Optional, Sequence

import tensorflow as tf

from federated_vision.models import precision
from federated_vision.models import weight_decay as weight_decay_lib

MNIST_INPUT_SHAPE = (28, 28, 1)
TWO_NN_PARAMS = 199_210  # McMahan et al. 2017, 10 classes, 28x28 input.
CNN_PARAMS = 1_663_370


def _check(num_classes, input_shape):
  if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
    raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
  shape = tuple(input_shape)
  if not shape or any((not isinstance(d, int)) or d <= 0 for d in shape):
    raise ValueError(f"input_shape must be positive integers, got {input_shape!r}")
  return shape


def _init(seed: Optional[int], layer: int):
  return tf.keras.initializers.GlorotUniform(
      seed=None if seed is None else seed * 1000 + layer)


def _regularizer(weight_decay: float):
  """`weight_decay.regularizer`: wd * sum(w**2) / 2 per kernel, None for 0."""
  return weight_decay_lib.regularizer(weight_decay)


def create_2nn(num_classes: int = 10,
               input_shape: Sequence[int] = MNIST_INPUT_SHAPE,
               hidden_units: int = 200,
               seed: Optional[int] = None,
               mixed_precision: str = "float32") -> tf.keras.Model:
  """McMahan et al. 2017's 2NN: flatten -> 200 ReLU -> 200 ReLU -> logits.

  Args:
    num_classes: output logits (10 for MNIST).
    input_shape: shape of one image, (28, 28, 1) for MNIST.
    hidden_units: width of both hidden layers (200 in the paper).
    seed: seed of the Glorot-uniform kernel initialisers, None for random.
    mixed_precision: "float32", or "bfloat16" (layers compute in bfloat16,
      variables and the classifier float32; `precision.layer_dtypes`).

  Returns:
    An uncompiled Keras model; 199,210 parameters with the defaults.
  """
  shape = _check(num_classes, input_shape)
  if hidden_units < 1:
    raise ValueError(f"hidden_units must be >= 1, got {hidden_units}")
  hidden, output = precision.layer_dtypes(mixed_precision)
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=shape),
      tf.keras.layers.Flatten(dtype=hidden),
      tf.keras.layers.Dense(hidden_units, activation="relu",
                            kernel_initializer=_init(seed, 1), dtype=hidden),
      tf.keras.layers.Dense(hidden_units, activation="relu",
                            kernel_initializer=_init(seed, 2), dtype=hidden),
      tf.keras.layers.Dense(num_classes, kernel_initializer=_init(seed, 3),
                            dtype=output),
  ], name="mnist_2nn")


def create_cnn(num_classes: int = 10,
               input_shape: Sequence[int] = MNIST_INPUT_SHAPE,
               weight_decay: float = 0.0,
               seed: Optional[int] = None,
               mixed_precision: str = "float32") -> tf.keras.Model:
  """McMahan et al. 2017's MNIST CNN ('same' padding, logits out).

  conv 5x5x32 ReLU -> maxpool 2x2 -> conv 5x5x64 ReLU -> maxpool 2x2 ->
  dense 512 ReLU -> dense num_classes (linear).

  Args:
    num_classes: output logits.
    input_shape: shape of one image, (28, 28, 1) for MNIST.
    weight_decay: wd of `weight_decay.L2Loss` (the loss gains wd *
      sum(w**2) / 2) on every kernel (ours: McMahan et al. state none, and
      0 is the presets'); 0 builds no regularizer.
    seed: seed of the kernel initialisers, None for random.
    mixed_precision: "float32", or "bfloat16" (layers compute in bfloat16,
      variables and the classifier float32; `precision.layer_dtypes`).

  Returns:
    An uncompiled Keras model; 1,663,370 parameters with the defaults.
  """
  shape = _check(num_classes, input_shape)
  reg = _regularizer(weight_decay)
  hidden, output = precision.layer_dtypes(mixed_precision)
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=shape),
      tf.keras.layers.Conv2D(32, 5, padding="same", activation="relu",
                             kernel_initializer=_init(seed, 1),
                             kernel_regularizer=reg, dtype=hidden),
      tf.keras.layers.MaxPool2D(2, padding="same", dtype=hidden),
      tf.keras.layers.Conv2D(64, 5, padding="same", activation="relu",
                             kernel_initializer=_init(seed, 2),
                             kernel_regularizer=reg, dtype=hidden),
      tf.keras.layers.MaxPool2D(2, padding="same", dtype=hidden),
      tf.keras.layers.Flatten(dtype=hidden),
      tf.keras.layers.Dense(512, activation="relu",
                            kernel_initializer=_init(seed, 3),
                            kernel_regularizer=reg, dtype=hidden),
      tf.keras.layers.Dense(num_classes, kernel_initializer=_init(seed, 4),
                            kernel_regularizer=reg, dtype=output),
  ], name="mnist_cnn")
