"""MobileNetV2 with GroupNorm (Hsu, Qi & Brown 2020): architecture vs the stock
Keras model, parameter counts, ImageNet-weight mapping, bottleneck, freezing."""

import h5py
import numpy as np
import pytest
import tensorflow as tf

from federated_vision.models import mobilenet_v2 as mnv2

BN = tf.keras.layers.BatchNormalization
GN = tf.keras.layers.GroupNormalization
SMALL = dict(input_shape=(32, 32, 3), alpha=0.35)


def _kind(var):
  return var.name.split("/")[-1].split(":")[0]


@pytest.fixture(scope="module")
def full_models():
  """The only 224x224 alpha=1.0 builds of the file: (GN model, stock model)."""
  return (mnv2.create_mobilenet_v2_gn(num_classes=1000),
          tf.keras.applications.MobileNetV2(weights=None, include_top=True))


def test_param_count_is_stock_minus_bn_moving_statistics(full_models):
  gn, stock = full_models
  bn_channels = sum(l.gamma.shape[0] for l in stock.layers if isinstance(l, BN))
  assert stock.count_params() == mnv2.STOCK_PARAMS_ALPHA1_1000 == 3_538_984
  # BN: gamma, beta trainable; moving mean and variance not. GN: gamma, beta.
  stock_non_trainable = sum(int(np.prod(w.shape)) for w in stock.non_trainable_weights)
  assert stock_non_trainable == 2 * bn_channels == 34_112
  assert gn.count_params() == stock.count_params() - 2 * bn_channels
  assert gn.count_params() == mnv2.GN_PARAMS_ALPHA1_1000 == 3_504_872
  assert gn.non_trainable_weights == []
  assert sum(int(np.prod(w.shape)) for w in gn.trainable_weights) == 3_504_872


def test_same_layers_as_stock_with_every_bn_a_groupnorm(full_models):
  gn, stock = full_models
  stock_layers = [l for l in stock.layers if l.weights]
  gn_layers = [l for l in gn.layers if l.weights]
  assert [l.name for l in gn_layers] == [
      "logits" if l.name == "predictions" else l.name for l in stock_layers]
  assert not any(isinstance(l, BN) for l in gn.layers)
  n_norm = 0
  for s, g in zip(stock_layers, gn_layers):
    if isinstance(s, BN):
      n_norm += 1
      assert isinstance(g, GN) and g.epsilon == s.epsilon == 1e-3
      channels = s.gamma.shape[0]
      assert g.groups == mnv2.num_groups(channels, 32)
      assert channels % g.groups == 0 and g.groups <= 32
      assert [(_kind(w), tuple(w.shape)) for w in g.weights] == [
          ("gamma", (channels,)), ("beta", (channels,))]
    else:
      assert type(g) is type(s)  # pylint: disable=unidiomatic-typecheck
      assert [(_kind(w), tuple(w.shape)) for w in g.weights] == [
          (_kind(w), tuple(w.shape)) for w in s.weights]
  assert n_norm == 52  # Conv1, 2 in block 0, 3 in each of 16 blocks, Conv_1.
  # Same spatial pipeline: 224 -> 7 before pooling.
  assert gn.get_layer("out_relu").output.shape[1:] == (7, 7, 1280)


def test_num_groups_rule():
  assert mnv2.num_groups(1280, 32) == 32
  assert mnv2.num_groups(96, 32) == 32
  assert mnv2.num_groups(144, 32) == 24  # Largest divisor of 144 <= 32.
  assert mnv2.num_groups(24, 32) == 24   # groups >= C: one channel per group.
  assert mnv2.num_groups(16, 32) == 16
  assert mnv2.num_groups(24, 5) == 4
  assert mnv2.num_groups(7, 2) == 1
  assert mnv2.num_groups(64, 1) == 1     # LayerNorm-like.
  for c in range(1, 200):
    for g in (1, 2, 8, 32):
      n = mnv2.num_groups(c, g)
      assert c % n == 0 and n <= g
      assert not any(c % k == 0 for k in range(n + 1, min(g, c) + 1))


def test_group_norm_matches_keras_group_normalization():
  rng = np.random.default_rng(0)
  for shape, groups in [((3, 5, 6, 24), 1), ((3, 5, 6, 24), 4), ((3, 5, 6, 24), 24),
                        ((2, 7, 12), 3), ((4, 16), 8)]:
    x = tf.constant(rng.normal(1.0, 3.0, shape).astype(np.float32))
    ours = mnv2.GroupNorm(groups=groups, epsilon=1e-3)
    keras_gn = GN(groups=groups, epsilon=1e-3)
    assert isinstance(ours, GN)
    ours.build(x.shape)
    keras_gn.build(x.shape)
    for a, b in zip(ours.weights, keras_gn.weights):
      value = rng.uniform(0.5, 1.5, a.shape).astype(np.float32)
      a.assign(value)
      b.assign(value)
    np.testing.assert_allclose(ours(x).numpy(), keras_gn(x).numpy(),
                               rtol=1e-5, atol=1e-5)
  # Unknown spatial dims (dynamic reshape path).
  fn = tf.function(ours.call, input_signature=[tf.TensorSpec([None, None, 16])])
  np.testing.assert_allclose(fn(x[:, None, :]).numpy()[:, 0], ours(x).numpy(),
                             rtol=1e-6, atol=1e-6)


@pytest.fixture(scope="module")
def small():
  """alpha=0.35, 32x32, 9 classes, groups=8, weight decay, everything trainable."""
  return mnv2.create_mobilenet_v2_gn(num_classes=9, groups=8, weight_decay=1e-4,
                                     seed=4, **SMALL)


@pytest.fixture(scope="module")
def small_bottleneck_last2():
  """As `small` but 64-d bottleneck and trainable_last_layers=2 (default groups)."""
  return mnv2.create_mobilenet_v2_gn(num_classes=9, bottleneck_dim=64,
                                     trainable_last_layers=2, seed=3, **SMALL)


@pytest.fixture(scope="module")
def small_last2_no_decay():
  """As `small` (same seed and groups) but trainable_last_layers=2 and no
  weight decay: one build for the freezing counts and the seed check."""
  return mnv2.create_mobilenet_v2_gn(num_classes=9, groups=8, seed=4,
                                     trainable_last_layers=2, **SMALL)


def test_small_forward_pass_logits_and_per_example_normalisation(small):
  model = small
  assert not any(isinstance(l, BN) for l in model.layers)
  assert all(l.groups == mnv2.num_groups(l.gamma.shape[0], 8)
             for l in model.layers if isinstance(l, GN))
  x = tf.random.stateless_uniform((4, 32, 32, 3), seed=[1, 2])
  logits = model(x)
  assert logits.shape == (4, 9)
  assert np.all(np.isfinite(logits.numpy()))
  assert model.get_layer("logits").activation is tf.keras.activations.linear
  assert not np.allclose(tf.reduce_sum(logits, axis=1).numpy(), 1.0)
  # GN uses no batch statistics: an example's logits do not depend on the
  # rest of the batch, and training mode equals inference mode.
  np.testing.assert_allclose(model(x[:1]).numpy(), logits[:1].numpy(),
                             rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(model(x, training=True).numpy(), logits.numpy(),
                             rtol=1e-4, atol=1e-5)
  # [0, 1] images are rescaled to MobileNetV2's [-1, 1].
  rescale = model.get_layer("rescale")
  np.testing.assert_allclose(rescale(tf.constant([0.0, 0.5, 1.0])).numpy(),
                             [-1.0, 0.0, 1.0])


def test_bottleneck_shapes(small_bottleneck_last2, small):
  model = small_bottleneck_last2
  assert mnv2.LANDMARKS_BOTTLENECK_DIM == 64
  pooled = model.get_layer("global_average_pooling").output
  assert pooled.shape[1:] == (1280,)  # No alpha on the last conv (alpha <= 1).
  bottleneck, logits = model.get_layer("bottleneck"), model.get_layer("logits")
  assert bottleneck.input is pooled
  assert bottleneck.output.shape[1:] == (64,)
  assert logits.input is bottleneck.output
  assert [tuple(w.shape) for w in bottleneck.weights] == [(1280, 64), (64,)]
  assert [tuple(w.shape) for w in logits.weights] == [(64, 9), (9,)]
  assert model.output.shape[1:] == (9,)
  assert model(tf.zeros((2, 32, 32, 3))).shape == (2, 9)
  # Only the head differs from the plain model: (1280*64 + 64) + (64*9 + 9)
  # instead of 1280*9 + 9.
  assert model.count_params() - small.count_params() == \
      (1280 * 64 + 64 + 64 * 9 + 9) - (1280 * 9 + 9)


def test_trainable_last_two_layers_counts(small_bottleneck_last2, small,
                                         small_last2_no_decay):
  c = 9
  with_bn = small_bottleneck_last2
  assert [w.name for w in with_bn.trainable_weights] == [
      "bottleneck/kernel:0", "bottleneck/bias:0", "logits/kernel:0", "logits/bias:0"]
  assert sum(int(np.prod(w.shape)) for w in with_bn.trainable_weights) == \
      1280 * 64 + 64 + 64 * c + c
  assert len(mnv2.trainable_units(with_bn)) == mnv2.num_weighted_layers(64) == 54

  plain = small_last2_no_decay
  # Last conv (+ its GN) and the classifier. alpha=0.35: block 16 outputs
  # _make_divisible(320 * 0.35) = 112 channels.
  assert [w.name for w in plain.trainable_weights] == [
      "Conv_1/kernel:0", "Conv_1_bn/gamma:0", "Conv_1_bn/beta:0",
      "logits/kernel:0", "logits/bias:0"]
  assert sum(int(np.prod(w.shape)) for w in plain.trainable_weights) == \
      112 * 1280 + 2 * 1280 + 1280 * c + c
  assert plain.count_params() == small.count_params()
  units = mnv2.trainable_units(plain)
  # Conv1, 2 convs in block 0, 3 x 16 blocks, Conv_1, logits.
  assert len(units) == mnv2.num_weighted_layers() == 53
  assert [[l.name for l in u] for u in units[-2:]] == [
      ["Conv_1", "Conv_1_bn"], ["logits"]]
  assert [[l.name for l in u] for u in units[:2]] == [
      ["Conv1", "bn_Conv1"], ["expanded_conv_depthwise", "expanded_conv_depthwise_BN"]]
  # Without trainable_last_layers everything trains.
  assert len(small.trainable_weights) == len(small.weights)


def test_one_training_step_only_moves_the_last_two_layers(small_bottleneck_last2):
  model = small_bottleneck_last2
  before = {w.name: w.numpy().copy() for w in model.weights}
  x = tf.random.stateless_uniform((8, 32, 32, 3), seed=[4, 5])
  y = tf.constant([0, 1, 2, 3, 4, 5, 6, 7])
  loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
  with tf.GradientTape() as tape:
    loss = loss_fn(y, model(x, training=True))
  grads = tape.gradient(loss, model.trainable_variables)
  tf.keras.optimizers.SGD(0.5).apply_gradients(zip(grads, model.trainable_variables))
  assert np.isfinite(float(loss))
  trainable = {w.name for w in model.trainable_weights}
  assert len(trainable) == 4
  for w in model.weights:
    if w.name in trainable:
      assert not np.array_equal(w.numpy(), before[w.name]), w.name
    else:
      np.testing.assert_array_equal(w.numpy(), before[w.name], err_msg=w.name)
  for w in model.weights:  # Restore for other tests sharing the fixture.
    w.assign(before[w.name])


def _stock_with_random_bn(alpha, path, size=96):
  """A stock no-top MobileNetV2 with non-trivial BN weights, saved as .h5."""
  stock = tf.keras.applications.MobileNetV2(
      weights=None, include_top=False, input_shape=(size, size, 3), alpha=alpha)
  rng = np.random.default_rng(0)
  for layer in stock.layers:
    if isinstance(layer, BN):
      for w in layer.weights:
        w.assign(rng.uniform(0.5, 1.5, w.shape).astype(np.float32))
  stock.save_weights(str(path))
  return stock


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
  path = tmp_path_factory.mktemp("weights") / "mobilenet_v2_0.35_96_no_top.h5"
  stock = _stock_with_random_bn(0.35, path)
  model = mnv2.create_mobilenet_v2_gn(
      input_shape=(96, 96, 3), alpha=0.35, num_classes=4, bottleneck_dim=64,
      pretrained_weights=path, trainable_last_layers=2, seed=9)
  return stock, model, path


def test_pretrained_weights_copied_by_name(pretrained):
  stock, model, _ = pretrained
  stock_layers = {l.name: l for l in stock.layers if l.weights}
  backbone = mnv2.backbone_layers(model)
  assert sorted(l.name for l in backbone) == sorted(stock_layers)
  copied = 0
  for layer in backbone:
    src = {_kind(w): w.numpy() for w in stock_layers[layer.name].weights}
    for w in layer.weights:
      np.testing.assert_array_equal(w.numpy(), src[_kind(w)],
                                    err_msg=f"{layer.name}/{_kind(w)}")
      copied += 1
    if isinstance(layer, GN):
      assert set(src) == {"gamma", "beta", "moving_mean", "moving_variance"}
      assert [_kind(w) for w in layer.weights] == ["gamma", "beta"]
  # 52 conv/depthwise kernels + 52 x (gamma, beta); moving stats dropped.
  assert copied == 52 + 2 * 52
  assert not np.allclose(model.get_layer("bn_Conv1").gamma.numpy(), 1.0)
  # The head is fresh and, with trainable_last_layers=2, the only trainable part.
  assert [w.name for w in model.trainable_weights] == [
      "bottleneck/kernel:0", "bottleneck/bias:0", "logits/kernel:0", "logits/bias:0"]
  assert np.all(np.isfinite(model(tf.ones((1, 96, 96, 3)) * 0.5).numpy()))


def test_pretrained_weights_errors(pretrained, tmp_path):
  _, model, path = pretrained
  before = [w.numpy().copy() for w in model.weights]
  missing = tmp_path / "nope.h5"
  with pytest.raises(FileNotFoundError, match="nope.h5"):
    mnv2.create_mobilenet_v2_gn(input_shape=(96, 96, 3), alpha=0.35,
                                num_classes=3, pretrained_weights=missing)
  with pytest.raises(FileNotFoundError, match="nope.h5"):
    mnv2.load_pretrained_weights(model, missing)
  # Wrong width multiplier: alpha=0.5 weights into an alpha=0.35 model.
  wide = tmp_path / "alpha_0.5.h5"
  _stock_with_random_bn(0.5, wide, size=32)
  with pytest.raises(ValueError, match=r"layer 'block_1_\w+' weight '\w+' has shape"):
    mnv2.load_pretrained_weights(model, wide)
  # A file without one of the backbone layers.
  truncated = tmp_path / "truncated.h5"
  truncated.write_bytes(path.read_bytes())
  with h5py.File(truncated, "a") as f:
    del f["block_7_project"]
  with pytest.raises(ValueError, match="no layer 'block_7_project'"):
    mnv2.load_pretrained_weights(model, truncated)
  # Validation precedes assignment: failed loads leave the model untouched.
  assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, model.weights))


def test_weight_decay_on_conv_and_dense_kernels_not_depthwise_or_gn(small):
  """slim's MobileNet training_scope: conv2d (and the 1x1-conv logits)
  decayed with wd * l2_loss, separable (depthwise) convs not."""
  decayed = [w for w in small.weights if _kind(w) == "kernel"]
  depthwise = [w for w in small.weights if _kind(w) == "depthwise_kernel"]
  assert len(decayed) == 53 - 17 == len(small.losses) and len(depthwise) == 17
  expected = 1e-4 * sum(float(np.sum(k.numpy().astype(np.float64) ** 2)) / 2
                        for k in decayed)
  assert float(tf.add_n(small.losses)) == pytest.approx(expected, rel=1e-5)
  for layer in small.layers:
    if isinstance(layer, tf.keras.layers.DepthwiseConv2D):
      assert layer.depthwise_regularizer is None, layer.name


def test_no_weight_decay_and_seed_reproducible(small, small_bottleneck_last2,
                                              small_last2_no_decay):
  # Same seed as `small`: the same initial weights, whatever the weight decay
  # and the freezing (which reorders `weights`: compared by name).
  same = small_last2_no_decay
  assert same.losses == []
  a = small.get_weights()
  same_by_name = {w.name: w.numpy() for w in same.weights}
  assert sorted(same_by_name) == sorted(w.name for w in small.weights)
  assert all(np.array_equal(w.numpy(), same_by_name[w.name])
             for w in small.weights)
  # seed=3 vs seed=4: the first conv kernel (same shape) differs.
  other = small_bottleneck_last2.get_layer("Conv1").kernel.numpy()
  assert other.shape == a[0].shape and not np.array_equal(a[0], other)
  # Distinct per-layer seeds: same-shaped kernels of different layers differ.
  k4 = small.get_layer("block_4_depthwise").depthwise_kernel.numpy()
  k5 = small.get_layer("block_5_depthwise").depthwise_kernel.numpy()
  assert k4.shape == k5.shape and not np.array_equal(k4, k5)


@pytest.mark.parametrize("kwargs,name", [
    (dict(num_classes=1), "num_classes"),
    (dict(num_classes=2.0), "num_classes"),
    (dict(input_shape=(16, 16, 3)), "input_shape"),
    (dict(input_shape=(32, 32)), "input_shape"),
    (dict(input_shape=5), "input_shape"),
    (dict(alpha=0), "alpha"),
    (dict(alpha=float("nan")), "alpha"),
    (dict(groups=0), "groups"),
    (dict(bottleneck_dim=0), "bottleneck_dim"),
    (dict(pretrained_weights=3), "pretrained_weights"),
    (dict(trainable_last_layers=0), "trainable_last_layers"),
    (dict(trainable_last_layers=54), "trainable_last_layers"),
    (dict(trainable_last_layers=55, bottleneck_dim=64), "trainable_last_layers"),
    (dict(weight_decay=-1.0), "weight_decay"),
    (dict(seed=-1), "seed"),
])
def test_argument_validation(kwargs, name):
  args = dict(num_classes=3, **SMALL)
  args.update(kwargs)
  with pytest.raises(ValueError, match=name):
    mnv2.create_mobilenet_v2_gn(**args)
