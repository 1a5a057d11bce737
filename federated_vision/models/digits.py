"""Small model for the 8x8 digits (the default, download-free experiment)."""

import tensorflow as tf


def create_digits_cnn(num_classes: int = 10, seed: int = 0) -> tf.keras.Model:
  """3x3 conv 32 + 2x2 max-pool, FC 64, linear classifier (logits).

  Args:
    num_classes: output logits.
    seed: initializer seed, so every method starts from the same weights.
  """
  init = lambda k: tf.keras.initializers.GlorotUniform(seed=seed + k)
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=(8, 8, 1)),
      tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu",
                             kernel_initializer=init(0)),
      tf.keras.layers.MaxPool2D(2),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(64, activation="relu", kernel_initializer=init(1)),
      tf.keras.layers.Dense(num_classes, kernel_initializer=init(2)),
  ])
