"""The benchmark's two plain FedAvg loops (`benchmarks/plain_loops.py`) do
the same SGD: equal to a numpy FedAvg of softmax regression, and to each
other; the faster one (median CPU ratio) is the reference."""

import numpy as np
import pytest
import tensorflow as tf

from benchmarks import plain_loops

LR = 0.1


def _model():
  return tf.keras.Sequential([tf.keras.layers.Dense(
      3, input_shape=(4,),
      kernel_initializer=tf.keras.initializers.GlorotUniform(seed=1),
      bias_initializer=tf.keras.initializers.Constant(0.1))])


def _clients():
  rng = np.random.default_rng(0)
  out = []
  for n in (5, 3):  # B=2: batches of 2, 2, 1 and 2, 1.
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=(n, 1)).astype(np.int32)
    out.append((x, y))
  return out


def _datasets(clients):
  return [tf.data.Dataset.from_tensor_slices({"x": x, "y": y}).batch(2)
          for x, y in clients]


def _numpy_round(w, b, clients):
  """FedAvg (McMahan et al. 2017, Algorithm 1), E=1, B=2, server lr 1."""
  new_w, new_b, total, loss_sum = np.zeros_like(w), np.zeros_like(b), 0, 0.0
  for x, y in clients:
    cw, cb = w.copy(), b.copy()
    for i in range(0, len(x), 2):
      xb, yb = x[i:i + 2], y[i:i + 2, 0]
      logits = xb @ cw + cb
      p = np.exp(logits - logits.max(1, keepdims=True))
      p /= p.sum(1, keepdims=True)
      loss_sum += -np.log(p[np.arange(len(yb)), yb]).sum()
      p[np.arange(len(yb)), yb] -= 1
      cw -= LR * xb.T @ p / len(yb)
      cb -= LR * p.sum(0) / len(yb)
    new_w += len(x) * cw
    new_b += len(x) * cb
    total += len(x)
  return new_w / total, new_b / total, loss_sum / total


@pytest.mark.parametrize("name", [plain_loops.PLAIN_GRAPH,
                                  plain_loops.PLAIN_STEP])
def test_two_rounds_equal_numpy_fedavg(name):
  loop = plain_loops.PLAIN_LOOPS[name](_model, LR)
  w, b = loop.global_weights
  clients = _clients()
  for _ in range(2):
    loss = loop.round(_datasets(clients))
    w, b, ref_loss = _numpy_round(w, b, clients)
    got_w, got_b = loop.global_weights
    np.testing.assert_allclose(got_w, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_b, b, rtol=1e-5, atol=1e-6)
    assert loss == pytest.approx(ref_loss, rel=1e-5)


def test_both_loops_give_the_same_weights():
  loops = plain_loops.build_plain_loops(_model, LR)
  init = [loop.global_weights for loop in loops.values()]
  for a, b in zip(*init):
    np.testing.assert_array_equal(a, b)
  losses = [loop.round(_datasets(_clients())) for loop in loops.values()]
  assert losses[0] == pytest.approx(losses[1], rel=1e-6)
  for a, b in zip(*(loop.global_weights for loop in loops.values())):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_faster_loop_is_the_median_cpu_ratio_below_one():
  assert plain_loops.faster_loop([0.4, 0.9, 1.2]) == plain_loops.PLAIN_STEP
  assert plain_loops.faster_loop([0.4, 1.1, 1.2]) == plain_loops.PLAIN_GRAPH
  assert plain_loops.faster_loop([0.8, 1.2]) == plain_loops.PLAIN_GRAPH  # tie
  assert plain_loops.faster_loop([0.99]) == plain_loops.PLAIN_STEP
  with pytest.raises(ValueError, match="at least one ratio"):
    plain_loops.faster_loop([])
