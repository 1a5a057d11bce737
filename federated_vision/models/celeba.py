"""Models for CelebA smile classification (84 x 84 x 3 inputs in [0, 1])."""

import tensorflow as tf

from federated_vision.models import mobilenet_v2
from federated_vision.models import precision

INPUT_SHAPE = (84, 84, 3)
MODELS = ("cnn", "mobilenet_v2_gn")


def create_celeba_cnn(num_classes: int = 2, seed: int = 0,
                      mixed_precision: str = "float32") -> tf.keras.Model:
  """LEAF's CelebA CNN without batch norm: 4 x (3x3 conv 32, ReLU, 2x2
  max-pool) -> logits. 84 -> 42 -> 21 -> 10 -> 5, so 800 features; 30,242
  weights for 2 classes.

  Args:
    num_classes: output logits (2: not smiling / smiling).
    seed: initializer seed, so every method starts from the same weights.
    mixed_precision: "float32", or "bfloat16" (layers compute in bfloat16,
      variables and the classifier float32; `precision.layer_dtypes`).
  """
  if num_classes < 2:
    raise ValueError(f"num_classes must be >= 2, got {num_classes}")
  init = lambda k: tf.keras.initializers.GlorotUniform(seed=seed + k)
  hidden, output = precision.layer_dtypes(mixed_precision)
  layers = [tf.keras.layers.InputLayer(input_shape=INPUT_SHAPE)]
  for k in range(4):
    layers += [tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu",
                                      kernel_initializer=init(k), dtype=hidden),
               tf.keras.layers.MaxPool2D(2, dtype=hidden)]
  layers += [tf.keras.layers.Flatten(dtype=hidden),
             tf.keras.layers.Dense(num_classes, kernel_initializer=init(4),
                                   dtype=output)]
  return tf.keras.Sequential(layers, name="celeba_cnn")


def create_celeba_model(name: str = "cnn", num_classes: int = 2,
                        seed: int = 0, **kwargs) -> tf.keras.Model:
  """'cnn' (`create_celeba_cnn`, the default) or 'mobilenet_v2_gn'
  (`mobilenet_v2.create_mobilenet_v2_gn` at 84 x 84; kwargs go to it)."""
  if name == "cnn":
    if kwargs:
      raise ValueError(f"the celeba cnn takes no options, got {sorted(kwargs)}")
    return create_celeba_cnn(num_classes, seed)
  if name == "mobilenet_v2_gn":
    return mobilenet_v2.create_mobilenet_v2_gn(
        input_shape=INPUT_SHAPE, num_classes=num_classes, seed=seed, **kwargs)
  raise ValueError(f"celeba model must be one of {', '.join(MODELS)}, "
                   f"got {name!r}")
