"""Small model for the 8x8 digits (the default, download-free experiment)."""

import tensorflow as tf

from federated_vision.models import precision


def create_digits_cnn(num_classes: int = 10, seed: int = 0,
                      mixed_precision: str = "float32") -> tf.keras.Model:
  """3x3 conv 32 + 2x2 max-pool, FC 64, linear classifier (logits).

  Args:
    num_classes: output logits.
    seed: initializer seed, so every method starts from the same weights.
    mixed_precision: "float32", or "bfloat16" (layers compute in bfloat16,
      variables and the classifier float32; `precision.layer_dtypes`).
  """
  init = lambda k: tf.keras.initializers.GlorotUniform(seed=seed + k)
  hidden, output = precision.layer_dtypes(mixed_precision)
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=(8, 8, 1)),
      tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu",
                             kernel_initializer=init(0), dtype=hidden),
      tf.keras.layers.MaxPool2D(2, dtype=hidden),
      tf.keras.layers.Flatten(dtype=hidden),
      tf.keras.layers.Dense(64, activation="relu", kernel_initializer=init(1),
                            dtype=hidden),
      tf.keras.layers.Dense(num_classes, kernel_initializer=init(2),
                            dtype=output),
  ])
