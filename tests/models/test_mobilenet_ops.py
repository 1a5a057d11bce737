"""`mobilenet_ops.relu6` / `ReLU6` equal `tf.nn.relu6` / `ReLU(6.0)` exactly:
values, gradients (boundaries 0 and 6 included) and a whole small
MobileNetV2-GN's logits and gradients."""

import numpy as np
import pytest
import tensorflow as tf

from federated_vision.models import mobilenet_ops
from federated_vision.models import mobilenet_v2 as mnv2

X = np.array([-1e30, -7.0, -1e-30, -0.0, 0.0, 1e-30, 0.5, 3.0, 5.999999,
              6.0, 6.000001, 7.0, 1e30, np.inf, -np.inf], np.float32)


def _value_and_grad(fn, x, dy):
  x = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = fn(x)
  return y.numpy(), tape.gradient(y, x, output_gradients=tf.constant(dy)).numpy()


def test_values_and_gradient_equal_relu6_and_numpy():
  rng = np.random.default_rng(0)
  x = np.concatenate([X, rng.uniform(-3, 9, 1000).astype(np.float32)])
  dy = rng.normal(size=x.shape).astype(np.float32)
  y, g = _value_and_grad(mobilenet_ops.relu6, x, dy)
  y_ref, g_ref = _value_and_grad(tf.nn.relu6, x, dy)
  np.testing.assert_array_equal(y, y_ref)
  np.testing.assert_array_equal(g, g_ref)
  # numpy reference: min(max(x, 0), 6); gradient dy where 0 < x < 6, else 0.
  np.testing.assert_array_equal(y, np.minimum(np.maximum(x, 0), 6))
  np.testing.assert_array_equal(g, np.where((x > 0) & (x < 6), dy, 0))
  assert g[list(X).index(6.0)] == 0 and g[4] == 0  # x = 6 and x = 0


@tf.function
def _graph_value_and_grad(x, dy):
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = mobilenet_ops.relu6(x)
  return y, tape.gradient(y, x, output_gradients=dy)


def test_same_in_a_graph_and_bfloat16_dtype_kept():
  dy = np.linspace(-1, 1, X.size).astype(np.float32)
  y, g = _graph_value_and_grad(tf.constant(X), tf.constant(dy))
  np.testing.assert_array_equal(y, np.minimum(np.maximum(X, 0), 6))
  np.testing.assert_array_equal(g, np.where((X > 0) & (X < 6), dy, 0))
  assert mobilenet_ops.relu6(tf.constant(X, tf.bfloat16)).dtype == tf.bfloat16


def test_bfloat16_values_and_gradient_equal_relu6():
  rng = np.random.default_rng(2)
  x = np.concatenate([X, rng.uniform(-3, 9, 500).astype(np.float32)])
  dy = rng.normal(size=x.shape).astype(np.float32)
  x16, dy16 = tf.cast(x, tf.bfloat16), tf.cast(dy, tf.bfloat16)
  y, g = _value_and_grad(mobilenet_ops.relu6, x16, dy16)
  y_ref, g_ref = _value_and_grad(tf.nn.relu6, x16, dy16)
  assert y.dtype == g.dtype == tf.bfloat16.as_numpy_dtype
  np.testing.assert_array_equal(y.astype(np.float32), y_ref.astype(np.float32))
  np.testing.assert_array_equal(g.astype(np.float32), g_ref.astype(np.float32))
  x32 = x16.numpy().astype(np.float32)
  np.testing.assert_array_equal(
      g.astype(np.float32),
      np.where((x32 > 0) & (x32 < 6), dy16.numpy().astype(np.float32), 0))


def test_backward_has_no_relu_grad_or_select_kernels():
  """The gradient graph is Sub/Minimum/Sign/Mul: none of the kernels the
  worker runs scalar (`Relu6Grad`, `ReluGrad`) or through the 4-d
  broadcasting `SelectV2` (module docstring)."""
  spec = tf.TensorSpec([2, 4, 4, 3], tf.float32)
  graph = _graph_value_and_grad.get_concrete_function(spec, spec).graph
  types = {op.type for op in graph.get_operations()}
  for fn in graph._functions.values():  # pylint: disable=protected-access
    types |= {n.op for n in fn.definition.node_def}
  assert "Sign" in types and "Relu" in types and "Minimum" in types
  assert not types & {"Relu6", "Relu6Grad", "ReluGrad", "Select", "SelectV2",
                      "LessEqual"}, types


def test_layer_config_is_relu6s_and_other_settings_refused():
  layer = mobilenet_ops.ReLU6(name="r")
  ref = tf.keras.layers.ReLU(6.0, name="r").get_config()
  assert layer.get_config() == ref
  assert type(mobilenet_ops.ReLU6.from_config(ref)) is mobilenet_ops.ReLU6  # pylint: disable=unidiomatic-typecheck
  for kwargs in (dict(max_value=5.0), dict(negative_slope=0.1),
                 dict(threshold=1.0)):
    with pytest.raises(ValueError, match="ReLU6 is ReLU"):
      mobilenet_ops.ReLU6(**kwargs)


def test_small_mobilenet_logits_and_gradients_equal_keras_relu6(monkeypatch):
  kwargs = dict(input_shape=(32, 32, 3), alpha=0.35, num_classes=5, seed=3)
  x = tf.random.stateless_uniform([4, 32, 32, 3], [0, 1])
  y = tf.constant([0, 1, 2, 4])

  def run(model):
    with tf.GradientTape() as tape:
      logits = model(x, training=True)
      loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
          y, logits, from_logits=True))
    return logits.numpy(), [g.numpy() for g in
                            tape.gradient(loss, model.trainable_variables)]

  ours = mnv2.create_mobilenet_v2_gn(**kwargs)
  ours_cls = mobilenet_ops.ReLU6
  assert sum(isinstance(l, ours_cls) for l in ours.layers) == 35
  monkeypatch.setattr(mobilenet_ops, "ReLU6",
                      lambda name: tf.keras.layers.ReLU(6.0, name=name))
  stock = mnv2.create_mobilenet_v2_gn(**kwargs)
  assert not any(isinstance(l, ours_cls) for l in stock.layers)
  assert sum(isinstance(l, tf.keras.layers.ReLU) for l in stock.layers) == 35
  (l1, g1), (l2, g2) = run(ours), run(stock)
  np.testing.assert_array_equal(l1, l2)
  assert len(g1) == len(g2) == len(ours.trainable_variables)
  for a, b in zip(g1, g2):
    np.testing.assert_array_equal(a, b)


def _numpy_group_norm(x, groups, eps, gamma, beta):
  n, c = x.shape[0], x.shape[-1]
  g = x.reshape(n, -1, groups, c // groups).astype(np.float64)
  mean = g.mean(axis=(1, 3), keepdims=True)
  var = g.var(axis=(1, 3), keepdims=True)
  return ((g - mean) / np.sqrt(var + eps)).reshape(x.shape) * gamma + beta


def _moments_group_norm(x, groups, eps, gamma, beta):
  """The previous formulation (tf.nn.moments on [N, ..., G, C/G])."""
  shape = x.shape
  grouped = tf.reshape(x, [-1] + list(shape[1:-1]) + [groups, shape[-1] // groups])
  axes = list(range(1, len(shape) - 1)) + [len(shape)]
  mean, var = tf.nn.moments(grouped, axes, keepdims=True)
  y = tf.reshape((grouped - mean) * tf.math.rsqrt(var + eps), [-1] + list(shape[1:]))
  return y * gamma + beta


@pytest.mark.parametrize("shape, groups", [
    ((3, 5, 6, 24), 4), ((2, 7, 7, 32), 32), ((3, 5, 6, 24), 1),
    ((2, 7, 12), 3), ((4, 16), 8), ((2, 3, 4, 5, 8), 2)])
def test_group_norm_equals_numpy_and_previous_gradients(shape, groups):
  rng = np.random.default_rng(1)
  x = rng.normal(1.0, 3.0, shape).astype(np.float32)
  gamma = rng.uniform(0.5, 1.5, shape[-1]).astype(np.float32)
  beta = rng.normal(size=shape[-1]).astype(np.float32)
  dy = rng.normal(size=shape).astype(np.float32)
  np.testing.assert_allclose(
      mobilenet_ops.group_norm(tf.constant(x), groups, 1e-3, gamma, beta),
      _numpy_group_norm(x, groups, 1e-3, gamma, beta), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(
      mobilenet_ops.group_norm(tf.constant(x), groups, 1e-3, None, None),
      _numpy_group_norm(x, groups, 1e-3, 1.0, 0.0), rtol=1e-5, atol=1e-5)
  grads = []
  for fn in (mobilenet_ops.group_norm, _moments_group_norm):
    xs, gs, bs = tf.constant(x), tf.constant(gamma), tf.constant(beta)
    with tf.GradientTape() as tape:
      tape.watch([xs, gs, bs])
      y = fn(xs, groups, 1e-3, gs, bs)
    grads.append(tape.gradient(y, [xs, gs, bs], output_gradients=dy))
  for ours, previous in zip(*grads):
    np.testing.assert_allclose(ours, previous, rtol=1e-4, atol=1e-4)
