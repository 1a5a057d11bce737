"""Parameter counts and conventions of the MNIST (McMahan et al. 2017) and
CIFAR (Hsu, Qi & Brown 2019) models."""

import numpy as np
import pytest
import tensorflow as tf

from federated_vision import models
from federated_vision.models import cifar
from federated_vision.models import mnist


def test_2nn_param_count_mcmahan():
  model = mnist.create_2nn()
  assert model.count_params() == 199_210 == mnist.TWO_NN_PARAMS
  # 784*200+200 + 200*200+200 + 200*10+10.
  assert [tuple(w.shape) for w in model.weights] == [
      (784, 200), (200,), (200, 200), (200,), (200, 10), (10,)]


def test_cnn_param_count_mcmahan():
  model = mnist.create_cnn()
  assert model.count_params() == 1_663_370 == mnist.CNN_PARAMS
  # 'same' padding: 28 -> 14 -> 7, dense sees 7*7*64 = 3,136 inputs.
  assert [tuple(w.shape) for w in model.weights] == [
      (5, 5, 1, 32), (32,), (5, 5, 32, 64), (64,), (3136, 512), (512,),
      (512, 10), (10,)]


def test_cifar_cnn_param_count_hsu():
  model = cifar.create_cifar_cnn()
  assert model.count_params() == 1_068_298 == cifar.CIFAR10_CNN_PARAMS
  assert [tuple(w.shape) for w in model.weights] == [
      (5, 5, 3, 64), (64,), (5, 5, 64, 64), (64,), (2304, 384), (384,),
      (384, 192), (192,), (192, 10), (10,)]
  # CIFAR-100: only the classifier grows, by 90 * (192 + 1).
  assert cifar.create_cifar_cnn(100).count_params() == 1_068_298 + 90 * 193
  # Uncropped 32x32: 8*8*64 = 4,096 dense inputs.
  assert cifar.create_cifar_cnn(input_shape=(32, 32, 3)).count_params() == \
      1_068_298 + (4096 - 2304) * 384


@pytest.mark.parametrize("builder,shape,classes", [
    (mnist.create_2nn, (28, 28, 1), 10),
    (mnist.create_cnn, (28, 28, 1), 10),
    (cifar.create_cifar_cnn, (24, 24, 3), 10),
    (cifar.create_cifar_cnn, (24, 24, 3), 100),
])
def test_outputs_are_logits(builder, shape, classes):
  model = builder(num_classes=classes, input_shape=shape, seed=1)
  x = tf.random.stateless_uniform((4,) + shape, seed=[1, 2])
  logits = model(x)
  assert logits.shape == (4, classes)
  assert model.layers[-1].activation is tf.keras.activations.linear
  # Logits, not probabilities: rows do not sum to 1 and may be negative.
  assert not np.allclose(tf.reduce_sum(logits, axis=1).numpy(), 1.0)


def test_seed_makes_initialisation_reproducible():
  a = mnist.create_cnn(seed=5).get_weights()
  b = mnist.create_cnn(seed=5).get_weights()
  c = mnist.create_cnn(seed=6).get_weights()
  assert all(np.array_equal(x, y) for x, y in zip(a, b))
  assert not np.array_equal(a[0], c[0])


def _half_sum_of_squares(kernels):
  """numpy reference of tf.nn.l2_loss summed: sum(w**2) / 2 per kernel."""
  return sum(float(np.sum(k.numpy().astype(np.float64) ** 2)) / 2
             for k in kernels)


def test_cifar_weight_decay_is_the_tutorials_on_the_two_dense_layers():
  """TF CIFAR-10 tutorial: local3 / local4 wd * l2_loss, no conv, no
  softmax_linear, no bias."""
  wd = 4e-3
  model = cifar.create_cifar_cnn(weight_decay=wd, seed=0)
  dense = [l for l in model.layers if isinstance(l, tf.keras.layers.Dense)]
  assert [l.units for l in dense] == [384, 192, 10]
  decayed = [l.kernel for l in dense[:2]]
  assert len(model.losses) == 2
  assert float(tf.add_n(model.losses)) == pytest.approx(
      wd * _half_sum_of_squares(decayed), rel=1e-6)
  for layer in model.layers:  # Only the two hidden Dense layers regularize.
    assert (getattr(layer, "kernel_regularizer", None) is not None) == (
        layer in dense[:2]), layer.name
  assert cifar.create_cifar_cnn(weight_decay=0.0).losses == []


def test_weight_decay_zero_builds_todays_models_bit_identical():
  """--weight_decay=0: no regularizer anywhere, same weights as always."""
  for build in (lambda **k: cifar.create_cifar_cnn(seed=3, **k),
                lambda **k: mnist.create_cnn(seed=3, **k)):
    plain, zero = build(), build(weight_decay=0.0)
    assert zero.losses == [] and plain.losses == []
    assert all(np.array_equal(a, b) for a, b in
               zip(plain.get_weights(), zero.get_weights()))
    assert all(getattr(l, "kernel_regularizer", None) is None
               for l in zero.layers)


def test_mnist_cnn_weight_decay_on_every_kernel():
  wd = 1e-3
  model = mnist.create_cnn(weight_decay=wd, seed=1)
  kernels = [w for w in model.trainable_weights if "kernel" in w.name]
  assert len(kernels) == 4 == len(model.losses)
  assert float(tf.add_n(model.losses)) == pytest.approx(
      wd * _half_sum_of_squares(kernels), rel=1e-6)


def test_argument_validation():
  with pytest.raises(ValueError, match="num_classes"):
    mnist.create_2nn(num_classes=1)
  with pytest.raises(ValueError, match="input_shape"):
    mnist.create_cnn(input_shape=(28, 0, 1))
  with pytest.raises(ValueError, match="weight_decay"):
    cifar.create_cifar_cnn(weight_decay=-1.0)
  with pytest.raises(ValueError, match="input_shape"):
    cifar.create_cifar_cnn(input_shape=(24, 24))
  with pytest.raises(ValueError, match="hidden_units"):
    mnist.create_2nn(hidden_units=0)


def test_tff_model_fn_wraps_cifar_cnn_with_regularization():
  spec = {"x": tf.TensorSpec([None, 24, 24, 3], tf.float32),
          "y": tf.TensorSpec([None], tf.int32)}
  model_fn = models.build_tff_model_fn(
      lambda: cifar.create_cifar_cnn(weight_decay=1e-3, seed=0), spec)
  model = model_fn()
  assert len(model.trainable_variables) == 10
  assert sum(int(np.prod(v.shape)) for v in model.trainable_variables) == \
      1_068_298
  batch = {"x": tf.zeros([2, 24, 24, 3]), "y": tf.constant([0, 1], tf.int32)}
  out = model.forward_pass(batch, training=False)
  assert out.predictions.shape == (2, 10)
  # All-zero input: loss = CE(logits of biases = 0) = log(10) + the decay
  # of the two hidden dense kernels (from_keras_model adds model.losses to
  # the batch loss the clients minimise).
  dense = [v for v in model.trainable_variables if len(v.shape) == 2]
  l2 = 1e-3 * _half_sum_of_squares(dense[:2])
  assert float(out.loss) == pytest.approx(np.log(10) + l2, rel=1e-5)
  # ... and the clients' gradient holds the decay's: on the zero input the
  # 384-unit kernel's inputs are all 0 (ReLU of zero convolutions with zero
  # biases), so its gradient is d/dw (wd * |w|^2 / 2) = wd * w alone.
  with tf.GradientTape() as tape:
    loss = model.forward_pass(batch, training=True).loss
  grad = tape.gradient(loss, dense[0])
  np.testing.assert_allclose(grad.numpy(), 1e-3 * dense[0].numpy(),
                             rtol=1e-5, atol=1e-9)
