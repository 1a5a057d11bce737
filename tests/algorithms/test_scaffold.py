"""SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, option II) against a numpy
implementation written here, on federated_vision.learning.reference's linear model.

Client datasets are built from round keys inside the executor with
shuffling off, so every client's batch order is known; 2 local epochs, so
K = E x batches; the server optimizer is SGD(eta_g) with eta_g != 1; some
clients sit out rounds, so c_k must come back from the store.
"""

import collections

import numpy as np
import pytest
import tensorflow_federated as tff

from federated_vision.algorithms import scaffold
from federated_vision.learning import stateful
from federated_vision.data import client_data as cdl
from federated_vision.data import round_keys
from federated_vision.data import digits
from federated_vision.runtime import contexts
from federated_vision.training import client_states
from federated_vision.learning.reference import (B, C, F, LR, model_fn, np_grad,
                                                 np_loss_and_correct)

SIZES = collections.OrderedDict(a=5, b=7, c=4)
EPOCHS = 2
ETA_G = 0.7
SPEC = cdl.TrainingSpec(batch_size=B, epochs=EPOCHS, shuffle_buffer=0, seed=11)
# Each round's clients: b sits out rounds 2-3, a round 2, c rounds 1 and 4.
SCHEDULE = {1: ["a", "b"], 2: ["c"], 3: ["a", "c"], 4: ["b", "a"]}


def _data():
  rng = np.random.default_rng(7)
  n = sum(SIZES.values())
  x = rng.normal(size=(n + 4, F)).astype(np.float32)
  y = rng.integers(0, C, n + 4).astype(np.int64)
  partition, start = {}, 0
  for cid, size in SIZES.items():
    partition[cid] = np.arange(start, start + size)
    start += size
  fed = digits.from_arrays("tiny", x[:n], y[:n], x[n:], y[n:], partition, C)
  return fed, {c: (x[i], y[i]) for c, i in partition.items()}


class FixedSampler:
  def round_keys(self, round_num):
    return [round_keys.round_key(c, round_num) for c in SCHEDULE[round_num]]


def np_scaffold(x, clients, rounds, num_clients, lr=LR, eta_g=ETA_G):
  """Karimireddy et al. 2020, Algorithm 1 (option II), written out: per
  round (x, c, {c_k}, train loss, train accuracy)."""
  c = np.zeros_like(x)
  c_k = {k: np.zeros_like(x) for k in clients}
  out = []
  for sampled in rounds:
    dys, dcs, loss, correct, seen = [], [], 0.0, 0, 0
    for k in sampled:
      xs, ys = clients[k]
      y, steps = x.copy(), 0
      for _ in range(EPOCHS):
        for i in range(0, len(ys), B):
          xb, yb = xs[i:i + B], ys[i:i + B]
          l, right = np_loss_and_correct(y, xb, yb)
          loss, correct, seen = loss + l, correct + right, seen + len(yb)
          y = y - lr * (np_grad(y, xb, yb) - c_k[k] + c)   # line 10
          steps += 1
      c_plus = c_k[k] - c + (x - y) / (steps * lr)        # line 12, option II
      dys.append(y - x)
      dcs.append(c_plus - c_k[k])
      c_k[k] = c_plus
    x = x + eta_g * np.mean(dys, axis=0)                  # line 17
    c = c + len(sampled) / num_clients * np.mean(dcs, axis=0)
    out.append((x, c, dict(c_k), loss / seen, correct / seen))
  return out


@pytest.fixture(scope="module")
def context():
  with contexts.managed_execution_context() as worker:
    yield worker


def _process(fed, tmp_path, lr=LR):
  method = stateful.Method(
      model_fn, scaffold.scaffold_round(),
      tff.learning.optimizers.build_sgdm(lr),
      tff.learning.optimizers.build_sgdm(ETA_G))
  process = method.build_training_process(fed, SPEC)
  process.client_states.open(str(tmp_path / client_states.DIRECTORY), 0)
  return process


def test_matches_algorithm_1_option_ii(context, tmp_path):
  del context
  fed, clients = _data()
  process = _process(fed, tmp_path)
  state = process.initialize()
  x0 = np.asarray(state.global_model_weights.trainable[0])
  reference = np_scaffold(x0, clients, SCHEDULE.values(), len(SIZES))
  worst = 0.0
  for r, (x, c, c_k, loss, accuracy) in zip(SCHEDULE, reference):
    out = process.next(state, FixedSampler().round_keys(r))
    state = out.state
    got = {"x": state.global_model_weights.trainable[0],
           "c": state.server["control"][0],
           **{k: process.client_states.read(k)[0] for k in clients}}
    want = {"x": x, "c": c, **c_k}
    for name in want:
      np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-5,
                                 err_msg=f"round {r}: {name}")
      worst = max(worst, float(np.max(np.abs(got[name] - want[name]))))
    work = out.metrics["client_work"]
    assert float(work["train"]["loss"]) == pytest.approx(loss, abs=1e-5)
    assert float(work["train"]["accuracy"]) == pytest.approx(accuracy,
                                                             abs=1e-6)
    assert work["clients_dropped_non_finite"] == 0
    assert out.metrics["finalizer"]["update_non_finite"] == 0
  print(f"max abs difference vs numpy over {len(SCHEDULE)} rounds: {worst:.2e}")
  # Only clients seen are stored; every round is a version of its own.
  assert process.client_states.rounds() == [1, 2, 3, 4]
  assert process.client_states.files() == {"a": [1, 3, 4], "b": [1, 4],
                                           "c": [2, 3]}


def test_non_finite_clients_are_dropped_and_keep_their_state(context,
                                                             tmp_path):
  del context
  fed, _ = _data()
  process = _process(fed, tmp_path, lr=3e38)  # y overflows to inf.
  state = process.initialize()
  out = process.next(state, FixedSampler().round_keys(1))
  work = out.metrics["client_work"]
  assert work["clients_dropped_non_finite"] == 2
  assert out.metrics["finalizer"]["update_non_finite"] == 0
  # No client kept: x and c unchanged (the mean of no update is zero), no
  # metrics, and no c_k written (round 1 exists, empty).
  np.testing.assert_array_equal(out.state.global_model_weights.trainable[0],
                                state.global_model_weights.trainable[0])
  np.testing.assert_array_equal(out.state.server["control"][0],
                                state.server["control"][0])
  assert float(work["train"]["num_examples"]) == 0
  assert process.client_states.rounds() == [1]
  assert process.client_states.files() == {}


def test_round_keys_name_one_round_and_distinct_clients():
  assert stateful.round_and_clients(["a@3", "b@3"]) == (3, ["a", "b"])
  for keys in (["a@3", "b@4"], ["a@3.1"], [], ["a@3", "a@3"]):
    with pytest.raises(ValueError):
      stateful.round_and_clients(keys)
