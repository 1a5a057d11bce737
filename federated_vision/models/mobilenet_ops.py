"""MobileNetV2-GN's activation in a form the TFF worker runs fast.

Why (docs/performance.md, "MobileNetV2-GN"): in TFF's `worker_binary` the
`Relu6Grad` kernel is compiled to scalar, branching code (`vcmpnltss`,
`vblendvps` on xmm registers, one float at a time), whereas the pip
TensorFlow the plain loop uses vectorises it (`vcmpltps`/`vmulps` on 8-float
ymm registers). `perf record` of the worker on a MobileNetV2-GN round put
13% of its samples in that one kernel, against 0.9% in the plain loop.
oneDNN does not take over ReLU6 (its layout pass leaves `Relu6`/`Relu6Grad`
to Eigen in both processes). The worker's `ReluGrad` is scalar too (a
`seta` + `vcvtsi2ss` per element before a vector multiply), and autodiff of
min(6, relu(x)) adds a zeros fill and a `SelectV2` through Eigen's generic
4-d broadcasting evaluator.

`relu6` therefore computes min(6, relu(x)) forward (values identical to
`tf.nn.relu6`: relu is exact, min picks one of its arguments) and has its
own gradient, dy * sign(min(y, 6 - y)) with y its output. That is
`Relu6Grad`'s dy * [0 < x < 6] exactly, boundaries x = 0 and x = 6
included: y > 0 iff x > 0; 6 - y is exact for y in [3, 6] (Sterbenz) and
> 3 below, so 6 - y > 0 iff y < 6 iff x < 6; sign maps the positive minimum
to 1 and 0 to 0, and multiplying dy by 1 or 0 is what `Relu6Grad` does
(`tests/models/test_mobilenet_ops.py`: bitwise equal to `tf.nn.relu6`'s values
and gradients, also through a whole small model). Four vectorised element-wise
kernels (Sub, Minimum, Sign, Mul) replace LessEqual + Fill + SelectV2 + Sum +
ReluGrad: about 10% less CPU per MobileNetV2-GN round, in the worker and in
plain TensorFlow alike.
"""

import math
from typing import Optional, Sequence

import tensorflow as tf

RELU6_MAX = 6.0  # Sandler et al. 2018, Section 3.1 (ReLU6, as Keras' MobileNetV2).


@tf.custom_gradient
def relu6(x: tf.Tensor):
  """min(6, max(x, 0)), as `tf.nn.relu6`, with the same gradient (see module).

  ReLU6 of Sandler et al. 2018 (MobileNetV2), Section 3.1.
  """
  six = tf.constant(RELU6_MAX, x.dtype)
  y = tf.minimum(six, tf.nn.relu(x))

  def grad(dy):
    # dy * [0 < x < 6] as dy * {0, 1}: sign(min(y, 6 - y)) (see module).
    return dy * tf.math.sign(tf.minimum(y, six - y))

  return y, grad


@tf.keras.utils.register_keras_serializable(package="federated_vision")
class ReLU6(tf.keras.layers.ReLU):
  """`tf.keras.layers.ReLU(6.0)` computed by `relu6` (same config, no weights)."""

  def __init__(self, max_value=RELU6_MAX, **kwargs):
    if max_value != RELU6_MAX or kwargs.get("negative_slope", 0.0) or \
        kwargs.get("threshold", 0.0):
      raise ValueError(f"ReLU6 is ReLU(max_value={RELU6_MAX}) only, got "
                       f"max_value={max_value!r}, {kwargs!r}")
    super().__init__(max_value=max_value, **kwargs)

  def call(self, inputs):
    return _relu6_unconverted(inputs)


# Not autograph-converted when Keras converts `ReLU6.call` (no control flow:
# the same graph, built faster; see mobilenet_v2.GroupNorm).
_relu6_unconverted = tf.autograph.experimental.do_not_convert(relu6)


def group_norm(x: tf.Tensor, groups: int, epsilon: float,
               gamma: Optional[tf.Tensor], beta: Optional[tf.Tensor]
               ) -> tf.Tensor:
  """Group Normalization (Wu & He 2018, Eq. 1-2, Sec. 3.1) of channels-last `x`.

  `x` is [N, spatial..., C] with static spatial dims and C; statistics are
  per example and group of C // groups channels over all spatial positions,
  then y = x * scale + shift with per-(example, channel) scale =
  gamma / sqrt(var + epsilon) and shift = beta - mean * scale. The same
  function as (x - mean) / sqrt(var + epsilon) * gamma + beta up to float
  rounding, computed with fewer passes over the activation: both reductions
  run over the spatial axis of [N, S, C] first (a middle-axis reduction TF
  does in place, where a reduction over (spatial, channel-in-group) of
  [N, S, G, C/G] transposes the whole tensor first), then over the C/G
  channels of a group on the small [N, G, C/G] result; normalisation, gamma
  and beta are one multiply and one add.

  Args:
    x: float tensor [N, d1, ..., dk, C], k >= 0, d1..dk and C static.
    groups: number of groups; divides C.
    epsilon: added to the variance.
    gamma: [C] scale or None (1).
    beta: [C] offset or None (0).

  Returns:
    A tensor of `x`'s shape and dtype.
  """
  inner: Sequence[int] = x.shape[1:-1]
  channels = int(x.shape[-1])
  size = math.prod(int(d) for d in inner)
  group_size = channels // groups
  x3 = tf.reshape(x, [-1, size, channels])

  def group_mean(t):  # [N, S, C] -> [N, 1, C]: its group's mean per channel.
    per_channel = tf.reduce_mean(t, axis=1)  # Equal counts: mean of means.
    g = tf.reduce_mean(tf.reshape(per_channel, [-1, groups, group_size]),
                       axis=2, keepdims=True)
    return tf.reshape(tf.broadcast_to(g, [tf.shape(g)[0], groups, group_size]),
                      [-1, 1, channels])

  mean = group_mean(x3)
  variance = group_mean(tf.math.squared_difference(x3, tf.stop_gradient(mean)))
  scale = tf.math.rsqrt(variance + epsilon)
  if gamma is not None:
    scale = scale * tf.cast(gamma, x.dtype)
  shift = -mean * scale
  if beta is not None:
    shift = shift + tf.cast(beta, x.dtype)
  return tf.reshape(x3 * scale + shift, [-1] + list(x.shape[1:]))
