"""FedDyn and FedNova, built-ins on the research API (`learning.stateful`),
against numpy implementations of their papers written here; both resume
exactly after Ctrl-C through train_main.

FedDyn: Acar et al. 2021, Algorithm 1. FedNova: Wang et al. 2020, vanilla
local SGD (tau_eff recorded as a metric). The linear model of
`learning.reference`, clients of unequal sizes, 2 local epochs, shuffling
off (each client's batches: `reference.client_batches`), partial
participation (clients sit out rounds and come back).
"""

import collections
import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import run_checks
from conftest import metric_rows
from federated_vision.algorithms import feddyn
from federated_vision.algorithms import fednova
from federated_vision.data import client_data as cdl
from federated_vision.data import round_keys
from federated_vision.learning import reference as ref
from federated_vision.learning import stateful
from federated_vision.runtime import contexts
from federated_vision.training import client_states

SIZES = collections.OrderedDict(a=5, b=7, c=4, d=9)
SPEC = cdl.TrainingSpec(batch_size=ref.B, epochs=2, shuffle_buffer=0, seed=5)
SCHEDULE = {1: ["a", "b", "d"], 2: ["c", "a"], 3: ["b", "c", "d"]}
ALPHA = 0.3


def _data():
  return ref.federated_data(SIZES, seed=11, num_test=4)


def _batches(fed):
  return {(c, r): ref.client_batches(fed, SPEC, round_keys.round_key(c, r))
          for r, clients in SCHEDULE.items() for c in clients}


def np_feddyn(theta, batches, population):
  """Acar et al. 2021, Algorithm 1, written out: per round (theta, h,
  {grad L_k})."""
  h = np.zeros_like(theta)
  grads = {k: np.zeros_like(theta) for k in SIZES}
  out = []
  for r, active in SCHEDULE.items():
    solutions = []
    for k in active:
      w = theta.copy()
      for x, y in batches[(k, r)]:
        w = w - ref.LR * (ref.np_grad(w, x, y) - grads[k]
                          + ALPHA * (w - theta))
      grads[k] = grads[k] - ALPHA * (w - theta)
      solutions.append(w)
    h = h - ALPHA / population * sum(w - theta for w in solutions)
    theta = np.mean(solutions, axis=0) - h / ALPHA
    out.append((theta, h, dict(grads)))
  return out


def np_fednova(x, batches):
  """Wang et al. 2020, FedNova with vanilla local SGD: per round (x,
  tau_eff), p_i the round's clients' shares of the examples."""
  out = []
  for r, active in SCHEDULE.items():
    d, tau, n = [], [], []
    for k in active:
      w, steps = x.copy(), 0
      for xb, yb in batches[(k, r)]:
        w = w - ref.LR * ref.np_grad(w, xb, yb)
        steps += 1
      d.append((x - w) / steps)
      tau.append(steps)
      n.append(SIZES[k])
    p = np.asarray(n, np.float64) / sum(n)
    tau_eff = float(np.dot(p, tau))
    x = x - tau_eff * sum(pi * di for pi, di in zip(p, d))
    out.append((x, tau_eff))
  return out


@pytest.fixture(scope="module")
def context():
  with contexts.managed_execution_context() as worker:
    yield worker


def _training(fed, round_, tmp_path):
  method = stateful.Method(ref.model_fn, round_, ref.sgd())
  training = method.build_training_process(fed, SPEC)
  if training.client_states is not None:
    training.client_states.open(str(tmp_path / client_states.DIRECTORY), 0)
  return training


def _keys(r):
  return [round_keys.round_key(c, r) for c in SCHEDULE[r]]


def test_feddyn_matches_algorithm_1(context, tmp_path):
  del context
  fed = _data()
  training = _training(fed, feddyn.feddyn_round(ALPHA), tmp_path)
  state = training.initialize()
  theta0 = np.asarray(state.global_model_weights.trainable[0], np.float64)
  reference = np_feddyn(theta0, _batches(fed), len(SIZES))
  worst = 0.0
  for r, (theta, h, grads) in zip(SCHEDULE, reference):
    out = training.next(state, _keys(r))
    state = out.state
    got = {"theta": state.global_model_weights.trainable[0],
           "h": state.server["h"][0],
           **{k: training.read(k)["gradient"][0] for k in SIZES}}
    want = {"theta": theta, "h": h, **grads}
    for name in want:
      np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-6,
                                 err_msg=f"round {r}: {name}")
      worst = max(worst, float(np.max(np.abs(got[name] - want[name]))))
    assert out.metrics["client_work"]["clients_dropped_non_finite"] == 0
    assert out.metrics["finalizer"]["update_non_finite"] == 0
  print(f"FedDyn: max abs difference vs numpy over 3 rounds: {worst:.2e}")
  # Devices seen keep their gradient; d sat out every round but 1 and 3.
  assert training.client_states.files() == {"a": [1, 2], "b": [1, 3],
                                            "c": [2, 3], "d": [1, 3]}


def test_fednova_matches_its_normalized_averaging(context, tmp_path):
  del context
  fed = _data()
  training = _training(fed, fednova.fednova_round(), tmp_path)
  assert training.client_states is None and training.metric_names == (
      "tau_eff",)
  state = training.initialize()
  x0 = np.asarray(state.global_model_weights.trainable[0], np.float64)
  worst = 0.0
  for r, (x, tau_eff) in zip(SCHEDULE, np_fednova(x0, _batches(fed))):
    out = training.next(state, _keys(r))
    state = out.state
    got = np.asarray(state.global_model_weights.trainable[0])
    np.testing.assert_allclose(got, x, rtol=0, atol=1e-6,
                               err_msg=f"round {r}")
    assert float(out.metrics["algorithm"]["tau_eff"]) == pytest.approx(
        tau_eff, rel=1e-6)
    worst = max(worst, float(np.max(np.abs(got - x))))
  print(f"FedNova: max abs difference vs numpy over 3 rounds: {worst:.2e}")
  # Unequal clients take unequal steps: tau_eff is not one client's tau.
  assert tau_eff not in (4.0, 6.0, 8.0)


def _tensorboard_tags(run_dir):
  tags = set()
  for path in glob.glob(os.path.join(run_dir, "tensorboard", "*tfevents*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags |= {v.tag for v in event.summary.value}
  return tags


def test_interrupted_runs_resume_to_identical_metrics(tmp_path, monkeypatch,
                                                      train_in_process):
  """FedDyn and FedNova through train_main, beside grouped FedAvg, with
  learning-rate schedules (`learning.schedule`): each round's client and
  server rates are eta gamma^(t-1), the settings record the schedule, and
  Ctrl-C before round 4 and a rerun give the uninterrupted run's
  metrics.csv (the schedule continued where it stopped)."""
  args = ["--methods=feddyn,fednova,fedavg", "--total_rounds=4",
          "--client_learning_rate_decay=0.8",
          "--server_learning_rate_decay=0.9",
          "--rounds_per_checkpoint=2", "--rounds_per_eval=2",
          "--num_clients=6", "--clients_per_round=5",
          "--client_batch_size=20", "--centralized_epochs=0", "--seed=3",
          f"--root_output_dir={tmp_path}"]
  whole = train_in_process("--experiment_name=whole", *args)
  assert whole.returncode == 0, whole.stderr[-3000:]
  run_checks.ctrl_c_before_round(monkeypatch, 4)
  killed = train_in_process("--experiment_name=split", *args)
  monkeypatch.undo()
  assert killed.returncode == 130
  resumed = train_in_process("--experiment_name=split", *args)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  summary = json.loads((tmp_path / "whole" / "summary.json").read_text())
  for method in ("feddyn", "fednova", "fedavg"):
    rows = metric_rows(tmp_path / "split" / method / "metrics.csv")
    assert rows == metric_rows(tmp_path / "whole" / method / "metrics.csv")
    assert [r["round"] for r in rows] == ["1", "2", "3", "4"]
    assert [float(r["client_learning_rate"]) for r in rows] == pytest.approx(
        [0.05 * 0.8 ** t for t in range(4)], rel=1e-7)
    assert [float(r["server_learning_rate"]) for r in rows] == pytest.approx(
        [1.0 * 0.9 ** t for t in range(4)], rel=1e-7)
    settings = summary["methods"][method]["settings"]
    assert (settings["client_learning_rate_decay"],
            settings["server_learning_rate_decay"]) == (0.8, 0.9)
  assert summary["methods"]["fedavg"]["settings"]["client_group_size"] == 2
  # tau_eff, FedNova's own metric: a column and a TensorBoard scalar.
  nova = metric_rows(tmp_path / "whole" / "fednova" / "metrics.csv")
  assert all(float(r["tau_eff"]) > 0 for r in nova)
  assert "tau_eff" in _tensorboard_tags(tmp_path / "whole" / "fednova")
  # FedDyn's per-device gradients: the same files as the whole run's.
  states = lambda run: sorted(os.path.relpath(p, run) for p in glob.glob(
      str(run / "feddyn" / "client_states" / "*" / "*.npy")))
  assert states(tmp_path / "split") == states(tmp_path / "whole")


def test_a_round_keys_client_id_is_a_str_to_key_a_dict_by():
  from federated_vision.data import round_keys  # pylint: disable=g-import-not-at-top
  keys = ["a@3", "b@3.1", "a@4"]
  assert {round_keys.base_client_id(k) for k in keys} == {"a", "b"}
  assert round_keys.base_client_id(b"c@2") == "c"
  assert round_keys.base_client_id(tf.constant("d@5.0")).numpy() == b"d"
