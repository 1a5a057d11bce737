"""Learning-rate schedules (`learning.schedule`): round t's client rate is
eta_0 * gamma^(t-1), the rate the one local step trains with. (Every kind
of method through train_main, and a resumed run continuing the schedule:
tests/algorithms/test_stateful.py's
test_interrupted_runs_resume_to_identical_metrics.)"""

import collections

import numpy as np
import pytest

from conftest import metric_rows
from federated_vision import algorithms
from federated_vision import training_loop
from federated_vision.data import client_data as cdl
from federated_vision.data import round_keys
from federated_vision.learning import reference as ref
from federated_vision.learning import schedule
from federated_vision.runtime import contexts

SIZES = collections.OrderedDict(a=5, b=7, c=4)
SPEC = cdl.TrainingSpec(batch_size=ref.B, shuffle_buffer=0, seed=2)
ETA, GAMMA, ROUNDS = 0.3, 0.5, 4


def _data():
  return ref.federated_data(SIZES, seed=4, num_test=3)


class EveryClient:
  def round_keys(self, round_num):
    return [round_keys.round_key(c, round_num) for c in SIZES]


def test_schedule_formula():
  s = schedule.Schedule(0.3, 0.5)
  assert [s.at(t) for t in (1, 2, 3, 4)] == [0.3, 0.15, 0.075, 0.0375]
  assert schedule.Schedule(0.1).at(100) == 0.1


def test_fedavg_trains_each_round_at_the_scheduled_rate(tmp_path):
  """A 4-round FedAvg run (client rate 0.3, gamma 0.5): metrics.csv's
  `client_learning_rate` is eta_0 gamma^(t-1) every round, and the model
  after each round is numpy's FedAvg at that rate."""
  fed = _data()
  weights = []

  def evaluate(w):
    weights.append(np.asarray(w.trainable[0], np.float64))
    return {"loss": 0.0, "accuracy": 0.0}

  with contexts.managed_execution_context():
    process = algorithms.build_fedavg(ref.model_fn, ref.sgd(ETA))
    start = np.asarray(process.get_model_weights(
        process.initialize()).trainable[0], np.float64)
    training_loop.run_federated_training(
        "fedavg", process, fed, SPEC, EveryClient(), evaluate,
        training_loop.LoopConfig(ROUNDS, str(tmp_path), rounds_per_eval=1,
                                 client_schedule=(ETA, GAMMA)),
        log_fn=None)
  rows = metric_rows(tmp_path / "metrics.csv")
  assert [float(r["client_learning_rate"]) for r in rows] == pytest.approx(
      [ETA * GAMMA ** (t - 1) for t in range(1, ROUNDS + 1)], rel=1e-7)
  w = start
  for t in range(1, ROUNDS + 1):
    lr = ETA * GAMMA ** (t - 1)
    deltas, sizes = [], []
    for c in SIZES:
      v = w.copy()
      for x, y in ref.client_batches(fed, SPEC, round_keys.round_key(c, t)):
        v = v - lr * ref.np_grad(v, x, y)
      deltas.append(w - v)
      sizes.append(SIZES[c])
    w = w - sum(d * n for d, n in zip(deltas, sizes)) / sum(sizes)
    np.testing.assert_allclose(weights[t - 1], w, rtol=0, atol=1e-6,
                               err_msg=f"round {t}")
