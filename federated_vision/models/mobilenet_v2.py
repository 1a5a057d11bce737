"""MobileNetV2 with Group Normalization, the model of Hsu, Qi & Brown 2020.

Hsu, Qi & Brown, Federated Visual Classification with Real-World Data
Distribution, ECCV 2020, train MobileNetV2 (Sandler et al., MobileNetV2:
Inverted Residuals and Linear Bottlenecks, CVPR 2018) on iNaturalist-User-120k
and Landmarks-User-160k, optionally initialised from ImageNet, with Group
Normalization (Wu & He, Group Normalization, ECCV 2018) in place of Batch
Normalization: BN's batch statistics are unreliable with the small, non-IID
client batches of federated training (and its moving averages would have to be
averaged across clients), whereas GN normalises each example on its own. For
Landmarks they add a 64-dimensional bottleneck before the classifier, and they
also report training only the last two layers.

Architecture: exactly `tf.keras.applications.MobileNetV2` (Keras 2.14), with
the same layer names ("Conv1", "bn_Conv1", "block_3_expand", "block_3_expand_BN",
"block_3_depthwise", ..., "Conv_1", "Conv_1_bn"), so ImageNet weights map by
name. Each normalization layer keeps its BN name but is a `GroupNorm`, a
subclass of `tf.keras.layers.GroupNormalization` (epsilon 1e-3, as the BN
layers) whose forward pass is cheaper to build and differentiate. The head
is global average pooling -> [Dense(bottleneck_dim) "bottleneck", linear: no
activation is assumed for it] ->
Dense(num_classes) "logits", linear: the model outputs logits, like every model
in `federated_vision.models`.

Group rule: a normalization layer over C channels uses
`num_groups(C, groups)` = the largest divisor of C that is <= groups (so at
most `groups` groups, exactly `groups` when it divides C; with groups >= C it
is one channel per group, i.e. instance-norm-like). The default 32 is Wu &
He's default; Hsu et al.'s group count is not stated here (not verified
against the paper). All MobileNetV2 channel counts are multiples of 8.

Parameter count: GN has gamma and beta per channel (trainable) and no moving
statistics, so the GN model has exactly the stock model's count minus the 2
moving statistics per BN channel. For alpha=1.0, 224x224, 1000 classes:
stock 3,538,984 (34,112 non-trainable) -> GN 3,504,872, all trainable.

ImageNet weights: `load_pretrained_weights` reads a local Keras .h5 file (no
download here), copies conv/depthwise kernels and maps BN gamma/beta to GN
gamma/beta; BN moving statistics are dropped, so the pretrained features are
an initialisation for fine-tuning, not reproduced exactly. "predictions" (the
ImageNet classifier) is never loaded.

Inputs are float images in [0, 1] (what the data loaders produce); a
`Rescaling` layer maps them to [-1, 1], MobileNetV2's expected range.
"""

import os
from typing import List, Optional, Sequence, Union

import h5py  # A TensorFlow dependency, loaded with it.
import numpy as np
import tensorflow as tf

from federated_vision.models import mobilenet_ops
from federated_vision.models import weight_decay as weight_decay_lib

DEFAULT_INPUT_SHAPE = (224, 224, 3)
LANDMARKS_BOTTLENECK_DIM = 64  # Hsu et al. 2020, Landmarks-User-160k.
BN_EPSILON = 1e-3  # As tf.keras.applications.MobileNetV2's BN layers.
MIN_INPUT_SIZE = 32  # Five stride-2 stages; stock MobileNetV2's minimum too.
# Params of alpha=1.0, 224x224, 1000 classes (see module docstring).
STOCK_PARAMS_ALPHA1_1000 = 3_538_984
GN_PARAMS_ALPHA1_1000 = 3_504_872

# (filters, stride, expansion) of blocks 0..16, as in Keras / Sandler et al.
_BLOCKS = ((16, 1, 1),
           (24, 2, 6), (24, 1, 6),
           (32, 2, 6), (32, 1, 6), (32, 1, 6),
           (64, 2, 6), (64, 1, 6), (64, 1, 6), (64, 1, 6),
           (96, 1, 6), (96, 1, 6), (96, 1, 6),
           (160, 2, 6), (160, 1, 6), (160, 1, 6),
           (320, 1, 6))


def _make_divisible(v, divisor=8, min_value=None):
  """Keras' channel rounding (identical to keras.applications.mobilenet_v2)."""
  if min_value is None:
    min_value = divisor
  new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
  if new_v < 0.9 * v:
    new_v += divisor
  return new_v


def num_groups(channels: int, groups: int) -> int:
  """The GN group count for `channels`: largest divisor of it that is <= groups."""
  g = min(groups, channels)
  while channels % g:
    g -= 1
  return g


def _correct_pad(size, kernel_size=3):
  """Keras' `imagenet_utils.correct_pad` for a static (height, width)."""
  adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
  c = kernel_size // 2
  return ((c - adjust[0], c), (c - adjust[1], c))


@tf.keras.utils.register_keras_serializable(package="federated_vision")
class GroupNorm(tf.keras.layers.GroupNormalization):
  """`tf.keras.layers.GroupNormalization` (Wu & He 2018) with a leaner `call`.

  Same weights, config and output as the Keras layer (up to float rounding),
  but for channels-last inputs without a mask it normalises with
  `mobilenet_ops.group_norm` (static spatial shape: two-stage moments, one
  multiply-add; ~40% less CPU per MobileNetV2-GN step than `tf.nn.moments`
  on [N, H, W, G, C/G], docs/performance.md) or `tf.nn.moments` (dynamic
  spatial shape) instead of Keras 2.14's masked `weighted_moments` with an
  all-ones mask built from dynamic shapes. That graph is ~3x slower to build
  and to differentiate; MobileNetV2 has 52 normalization layers. Other cases
  (a mask, another axis) use the Keras code.
  """

  def call(self, inputs, mask=None):
    return self._call_unconverted(inputs, mask)

  # Keras autograph-converts a user layer's `call`, which wraps each of its
  # ops in a `converted_call`; it has no tensor-dependent control flow, so
  # unconverted it builds the same graph, ~8% faster (mobilenet_ops.ReLU6).
  @tf.autograph.experimental.do_not_convert
  def _call_unconverted(self, inputs, mask):
    rank = inputs.shape.rank
    channels = inputs.shape[-1]
    if mask is not None or rank is None or channels is None or \
        self.axis not in (-1, rank - 1):
      return super().call(inputs, mask=mask)
    if all(d is not None for d in inputs.shape[1:-1]):
      return mobilenet_ops.group_norm(
          inputs, self.groups, self.epsilon,
          self.gamma if self.scale else None,
          self.beta if self.center else None)
    group_size = channels // self.groups
    dynamic = tf.shape(inputs)
    grouped_shape = tf.concat([dynamic[:-1], [self.groups, group_size]], 0)
    grouped = tf.reshape(inputs, grouped_shape)
    axes = list(range(1, rank - 1)) + [rank]  # All but batch and group.
    mean, variance = tf.nn.moments(grouped, axes, keepdims=True)
    x = (grouped - mean) * tf.math.rsqrt(variance + self.epsilon)
    x = tf.reshape(x, dynamic)
    if self.scale:
      x = x * self.gamma
    if self.center:
      x = x + self.beta
    return x


class _Builder:
  """Creates layers with per-layer seeds and the shared regularizer."""

  def __init__(self, groups, weight_decay, seed):
    self.groups = groups
    # slim's MobileNet training_scope: standard convolutions (and the
    # classifier, a 1x1 conv there, a Dense here) are decayed, depthwise
    # convolutions are not (`weight_decay` module docstring).
    self.reg = weight_decay_lib.regularizer(weight_decay)
    self.seed = seed
    self.count = 0

  def init(self):
    self.count += 1
    return tf.keras.initializers.GlorotUniform(
        seed=None if self.seed is None else self.seed * 1000 + self.count)

  def conv(self, x, filters, kernel_size, name, strides=1, padding="same"):
    return tf.keras.layers.Conv2D(
        filters, kernel_size, strides=strides, padding=padding, use_bias=False,
        kernel_initializer=self.init(), kernel_regularizer=self.reg,
        name=name)(x)

  def depthwise(self, x, strides, name):
    return tf.keras.layers.DepthwiseConv2D(
        3, strides=strides, padding="same" if strides == 1 else "valid",
        use_bias=False, depthwise_initializer=self.init(), name=name)(x)

  def norm(self, x, name):
    channels = int(x.shape[-1])
    return GroupNorm(
        groups=num_groups(channels, self.groups), axis=-1, epsilon=BN_EPSILON,
        name=name)(x)

  def dense(self, x, units, name):
    return tf.keras.layers.Dense(units, kernel_initializer=self.init(),
                                 kernel_regularizer=self.reg, name=name)(x)


def _inverted_res_block(b: _Builder, inputs, expansion, stride, alpha, filters,
                        block_id):
  """Keras' `_inverted_res_block` with GN; same layer names."""
  in_channels = int(inputs.shape[-1])
  pointwise_filters = _make_divisible(int(filters * alpha), 8)
  x = inputs
  prefix = f"block_{block_id}_"
  if block_id:
    x = b.conv(x, expansion * in_channels, 1, prefix + "expand")
    x = b.norm(x, prefix + "expand_BN")
    x = mobilenet_ops.ReLU6(name=prefix + "expand_relu")(x)
  else:
    prefix = "expanded_conv_"
  if stride == 2:
    x = tf.keras.layers.ZeroPadding2D(
        padding=_correct_pad(tuple(x.shape[1:3])), name=prefix + "pad")(x)
  x = b.depthwise(x, stride, prefix + "depthwise")
  x = b.norm(x, prefix + "depthwise_BN")
  x = mobilenet_ops.ReLU6(name=prefix + "depthwise_relu")(x)
  x = b.conv(x, pointwise_filters, 1, prefix + "project")
  x = b.norm(x, prefix + "project_BN")
  if in_channels == pointwise_filters and stride == 1:
    return tf.keras.layers.Add(name=prefix + "add")([inputs, x])
  return x


def _check_int(name, value, minimum, allow_none=False):
  if value is None and allow_none:
    return
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
      or value < minimum:
    raise ValueError(f"{name} must be an integer >= {minimum}"
                     f"{' or None' if allow_none else ''}, got {value!r}")


def _validate(input_shape, num_classes, alpha, groups, bottleneck_dim,
              pretrained_weights, trainable_last_layers, weight_decay, seed):
  try:
    shape = tuple(input_shape)
  except TypeError:
    raise ValueError(f"input_shape must be (height, width, channels), got "
                     f"{input_shape!r}") from None
  if len(shape) != 3 or any(isinstance(d, bool) or not isinstance(d, (int, np.integer))
                            or d <= 0 for d in shape):
    raise ValueError(f"input_shape must be 3 positive integers (height, width, "
                     f"channels), got {input_shape!r}")
  if shape[0] < MIN_INPUT_SIZE or shape[1] < MIN_INPUT_SIZE:
    raise ValueError(f"input_shape height and width must be >= {MIN_INPUT_SIZE}, "
                     f"got {input_shape!r}")
  _check_int("num_classes", num_classes, 2)
  if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or \
      not np.isfinite(alpha) or alpha <= 0:
    raise ValueError(f"alpha must be a positive number, got {alpha!r}")
  _check_int("groups", groups, 1)
  _check_int("bottleneck_dim", bottleneck_dim, 1, allow_none=True)
  if pretrained_weights is not None and \
      not isinstance(pretrained_weights, (str, os.PathLike)):
    raise ValueError(f"pretrained_weights must be a path or None, got "
                     f"{pretrained_weights!r}")
  _check_int("trainable_last_layers", trainable_last_layers, 1, allow_none=True)
  n_units = num_weighted_layers(bottleneck_dim)
  if trainable_last_layers is not None and trainable_last_layers > n_units:
    raise ValueError(f"trainable_last_layers must be <= {n_units} (the model's "
                     f"weighted layers), got {trainable_last_layers}")
  if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)) \
      or not weight_decay >= 0 or not np.isfinite(weight_decay):
    raise ValueError(f"weight_decay must be a finite number >= 0, got "
                     f"{weight_decay!r}")
  _check_int("seed", seed, 0, allow_none=True)
  return tuple(int(d) for d in shape)


def num_weighted_layers(bottleneck_dim: Optional[int] = None) -> int:
  """Length of `trainable_units`: Conv1, block 0's 2 convs, 3 convs in each of
  blocks 1-16, Conv_1, [bottleneck], logits = 53 (54 with a bottleneck)."""
  return 1 + 2 + 3 * (len(_BLOCKS) - 1) + 1 + (bottleneck_dim is not None) + 1


def trainable_units(model: tf.keras.Model) -> List[List[tf.keras.layers.Layer]]:
  """The model's weighted "layers" in order, as `trainable_last_layers` counts them.

  A unit is a layer with weights, with each normalization layer merged into
  the convolution it normalises (conv + its GN are one "layer", as conv + BN
  are in the usual layer count). For the default head the last two units are
  [Conv_1, Conv_1_bn] and [logits]; with a bottleneck, [bottleneck] and
  [logits].
  """
  units = []
  for layer in model.layers:
    if not layer.weights:
      continue
    if isinstance(layer, tf.keras.layers.GroupNormalization) and units:
      units[-1].append(layer)
    else:
      units.append([layer])
  return units


def backbone_layers(model: tf.keras.Model) -> List[tf.keras.layers.Layer]:
  """The layers with weights that ImageNet weights initialise (not the head)."""
  head = {"bottleneck", "logits"}
  return [l for l in model.layers if l.weights and l.name not in head]


def _weight_kind(name: str) -> str:
  """'Conv1/kernel:0' -> 'kernel'; 'bn_Conv1/moving_mean:0' -> 'moving_mean'."""
  return name.split("/")[-1].split(":")[0]


def load_pretrained_weights(model: tf.keras.Model,
                            path: Union[str, os.PathLike]) -> None:
  """Copies a Keras MobileNetV2 .h5 weights file into a GN model, by layer name.

  The file is what `tf.keras.applications.MobileNetV2(...).save_weights(p)`
  writes with an .h5 path (or `model.save(p)` in HDF5, or Keras' downloaded
  `mobilenet_v2_weights_tf_dim_ordering_tf_kernels_<alpha>_<size>[_no_top].h5`).
  Convolution and depthwise kernels (and biases, if any) are copied; each BN
  layer's gamma and beta become the same-named GN layer's gamma and beta. BN
  moving mean and variance are dropped: GN computes its statistics per example
  and has none, so the pretrained network's normalised activations are not
  reproduced exactly — the weights are an initialisation to fine-tune. The
  head (bottleneck, logits) is never loaded; a "predictions" layer in the file
  is ignored.

  Args:
    model: a model from `create_mobilenet_v2_gn`.
    path: local path of the weights file.

  Raises:
    FileNotFoundError: `path` does not exist.
    ValueError: a backbone layer (or one of its weights) is missing from the
      file, or a shape differs; the message names the layer.
  """
  path = os.fspath(path)
  if not os.path.isfile(path):
    raise FileNotFoundError(f"pretrained_weights file not found: {path!r}")
  assignments = []  # Validate everything before touching the model.
  with h5py.File(path, "r") as f:
    root = f["model_weights"] if "model_weights" in f else f
    for layer in backbone_layers(model):
      if layer.name not in root:
        raise ValueError(f"pretrained_weights {path!r} has no layer "
                         f"'{layer.name}'")
      group = root[layer.name]
      names = [n.decode("utf8") if isinstance(n, bytes) else n
               for n in group.attrs.get("weight_names", [])]
      stored = {_weight_kind(n): np.asarray(group[n]) for n in names}
      for var in layer.weights:
        kind = _weight_kind(var.name)
        if kind not in stored:
          raise ValueError(f"pretrained_weights {path!r}: layer '{layer.name}' "
                           f"has no '{kind}' weight (has {sorted(stored)})")
        value = stored[kind]
        if tuple(value.shape) != tuple(var.shape):
          raise ValueError(
              f"pretrained_weights {path!r}: layer '{layer.name}' weight "
              f"'{kind}' has shape {tuple(value.shape)}, the model expects "
              f"{tuple(var.shape)} (different alpha or input channels?)")
        assignments.append((var, value))
  for var, value in assignments:
    var.assign(value)


def create_mobilenet_v2_gn(
    input_shape: Sequence[int] = DEFAULT_INPUT_SHAPE,
    num_classes: int = 1000,
    alpha: float = 1.0,
    groups: int = 32,
    bottleneck_dim: Optional[int] = None,
    pretrained_weights: Optional[Union[str, os.PathLike]] = None,
    trainable_last_layers: Optional[int] = None,
    weight_decay: float = 0.0,
    seed: Optional[int] = 0) -> tf.keras.Model:
  """MobileNetV2 (Sandler et al. 2018) with GroupNorm (Wu & He 2018), logits out.

  The model of Hsu, Qi & Brown 2020: BN replaced by GN for federated training,
  optional ImageNet initialisation, optional 64-d bottleneck (Landmarks), and
  optional training of only the last layers.

  Args:
    input_shape: (height, width, channels); height and width >= 32. Inputs
      are float images in [0, 1], rescaled to [-1, 1] inside the model.
    num_classes: number of output logits (>= 2).
    alpha: width multiplier of Sandler et al. / Keras (channel counts are
      `_make_divisible(c * alpha, 8)`; the last conv has 1280 channels unless
      alpha > 1). Keras publishes ImageNet weights for 0.35, 0.5, 0.75, 1.0,
      1.3 and 1.4.
    groups: maximum GN groups per layer; a layer over C channels uses the
      largest divisor of C that is <= groups (see `num_groups`).
    bottleneck_dim: if set, global pooling -> Dense(bottleneck_dim, linear)
      "bottleneck" -> Dense(num_classes) "logits" (64 for Landmarks in Hsu et
      al. 2020); None for pooling -> Dense(num_classes).
    pretrained_weights: local path of a Keras MobileNetV2 .h5 weights file of
      the same alpha (e.g. the downloaded `..._1.0_224_no_top.h5`), loaded by
      `load_pretrained_weights` (BN gamma/beta -> GN gamma/beta, BN moving
      statistics dropped). None: random (seeded Glorot) initialisation.
    trainable_last_layers: if set to k, only the last k weighted layers are
      trainable (see `trainable_units`; a conv and its GN count as one layer).
      k=2 trains [bottleneck, logits] with a bottleneck, else [Conv_1 +
      Conv_1_bn, logits]. None: everything trainable.
    weight_decay: wd of `weight_decay.L2Loss` (wd * sum(w**2) / 2) on every
      standard convolution kernel (stem, 1x1 expansions and projections,
      Conv_1) and the dense kernels (bottleneck, logits), not on depthwise
      kernels, biases or GN gamma/beta: slim's MobileNet training_scope
      (`slim.conv2d` regularized, `slim.separable_conv2d` not; its logits are
      a 1x1 `slim.conv2d`; the bottleneck is Hsu 2020's, decayed like the
      logits: ours). 0 builds no regularizer.
    seed: seed of the Glorot-uniform initialisers (distinct per layer), None
      for random.

  Returns:
    An uncompiled Keras functional model named "mobilenetv2_gn_<alpha>_<rows>".

  Raises:
    ValueError: an invalid argument (the message names it), or a weights file
      that does not match the architecture.
    FileNotFoundError: `pretrained_weights` does not exist.
  """
  shape = _validate(input_shape, num_classes, alpha, groups, bottleneck_dim,
                    pretrained_weights, trainable_last_layers, weight_decay, seed)
  if pretrained_weights is not None and \
      not os.path.isfile(os.fspath(pretrained_weights)):
    raise FileNotFoundError(
        f"pretrained_weights file not found: {os.fspath(pretrained_weights)!r}")
  b = _Builder(groups, float(weight_decay), seed)
  inputs = tf.keras.layers.Input(shape=shape, name="image")
  x = tf.keras.layers.Rescaling(2.0, offset=-1.0, name="rescale")(inputs)
  x = b.conv(x, _make_divisible(32 * alpha, 8), 3, "Conv1", strides=2)
  x = b.norm(x, "bn_Conv1")
  x = mobilenet_ops.ReLU6(name="Conv1_relu")(x)
  for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
    x = _inverted_res_block(b, x, expansion, stride, alpha, filters, block_id)
  last_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
  x = b.conv(x, last_filters, 1, "Conv_1")
  x = b.norm(x, "Conv_1_bn")
  x = mobilenet_ops.ReLU6(name="out_relu")(x)
  x = tf.keras.layers.GlobalAveragePooling2D(name="global_average_pooling")(x)
  if bottleneck_dim is not None:
    x = b.dense(x, int(bottleneck_dim), "bottleneck")
  logits = b.dense(x, int(num_classes), "logits")
  model = tf.keras.Model(inputs, logits,
                         name=f"mobilenetv2_gn_{alpha:0.2f}_{shape[0]}")

  if pretrained_weights is not None:
    load_pretrained_weights(model, pretrained_weights)
  if trainable_last_layers is not None:
    units = trainable_units(model)
    assert len(units) == num_weighted_layers(bottleneck_dim), len(units)
    for unit in units[:-trainable_last_layers]:
      for layer in unit:
        layer.trainable = False
  return model
