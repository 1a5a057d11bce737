"""SCAFFOLD through train_main (in this process: conftest's train_in_process):
the 2-round smoke run beside FedAvg, refused combinations, and a run
interrupted between rounds (Ctrl-C) that resumes to identical metrics, and
whose state files, lost or altered, stop the resume with one line."""

import json
import os
import shutil

import numpy as np
import pytest

import built_method_memo
from conftest import metric_rows
from federated_vision.learning import sampling
from federated_vision.models import digits as digits_models
from federated_vision.training import client_states
from run_checks import DIGITS_NUM_TEST, check_method_run
from run_checks import damage_state_file, run_file_bytes

# Digits, 6 clients, 3 a round: clients sit out rounds and come back.
SMALL = ["--num_clients=6", "--clients_per_round=3", "--client_batch_size=20",
         "--centralized_epochs=0", "--seed=3"]


def _digits_cnn_weights() -> int:
  model = digits_models.create_digits_cnn()
  return sum(int(np.prod(w.shape)) for w in model.trainable_weights)


def _state_files(method_dir):
  """Round -> its client state files (.npy); each round's directory also
  holds its record of them (`client_states.RECORD`)."""
  root = method_dir / "client_states"
  files = {}
  for d in os.listdir(root):
    names = sorted(os.listdir(root / d))
    assert client_states.RECORD in names, d
    files[int(d.split("_")[1])] = [n for n in names
                                   if n != client_states.RECORD]
  return files


_DAMAGE = [("deleted", "missing; round 2's clients.json lists it"),
           ("cut short", "does not match its sha256 in clients.json (cut "
                         "short, edited or damaged)"),
           ("one float changed", "does not match its sha256 in clients.json "
                                 "(cut short, edited or damaged)")]


def test_smoke_two_rounds_beside_fedavg(tmp_path, train_in_process):
  proc = train_in_process(f"--root_output_dir={tmp_path}",
                          "--experiment_name=smoke", "--total_rounds=2",
                          "--methods=scaffold,fedavg", *SMALL)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = tmp_path / "smoke"
  summary = json.loads((out / "summary.json").read_text())
  assert set(summary["methods"]) == {"scaffold", "fedavg"}
  for name, m in summary["methods"].items():
    assert m["status"] == "completed" and m["rounds"] == 2
    check_method_run(out / name, m, num_test=DIGITS_NUM_TEST)
  s = summary["methods"]["scaffold"]["settings"]
  assert (s["algorithm"], s["client_weighting"], s["client_state"],
          s["server_optimizer"], s["server_learning_rate"],
          s["client_learning_rate"]) == (
              "scaffold", "uniform", "control_variate", "sgd", 1.0, 0.05)
  # Round 1 starts from c = c_k = 0: line 10 is plain SGD, so the clients'
  # metrics are FedAvg's (Karimireddy et al. 2020, Section 3); the server
  # steps differ (uniform vs example-weighted means), so round 2's do too.
  scaffold_rows = metric_rows(out / "scaffold" / "metrics.csv")
  fedavg_rows = metric_rows(out / "fedavg" / "metrics.csv")
  assert scaffold_rows[0] == fedavg_rows[0]
  assert scaffold_rows[1]["train_loss"] != fedavg_rows[1]["train_loss"]
  # One c_k per client seen, in the round it last trained (the one
  # checkpoint, round 2's, reads no older one): P float32 + a 128-byte header.
  sampler = sampling.UniformSampler([str(i) for i in range(6)], 3, 3)
  last = {c: r for r in (1, 2) for c in sampler.select(r)}
  assert len(last) < 6  # Some client trained in both rounds.
  assert _state_files(out / "scaffold") == {
      r: sorted(f"{c}.npy" for c in last if last[c] == r) for r in (1, 2)}
  size = 4 * _digits_cnn_weights() + 128
  for r, files in _state_files(out / "scaffold").items():
    for f in files:
      assert os.path.getsize(out / "scaffold" / "client_states" /
                             f"round_{r}" / f) == size
  assert not (out / "fedavg" / "client_states").exists()
  assert "scaffold" in json.loads((out / "hparams.json").read_text())[
      "method_settings"]


@pytest.mark.parametrize("flags, message", [
    (["--methods=scaffold+fedvc"],
     "--methods: scaffold+fedvc: scaffold takes no variant"),
    (["--algorithm=scaffold", "--fedprox"],
     "--methods: scaffold+fedprox: scaffold takes no variant"),
    (["--methods=scaffold", "--client_group_size=2"],
     "--client_group_size=2: method scaffold cannot be grouped"),
    (["--methods=scaffold", "--server_momentum=0.5"],
     "--server_momentum"),
])
def test_refused_combinations_are_one_line(tmp_path, train_in_process, flags,
                                           message):
  proc = train_in_process(f"--root_output_dir={tmp_path}", "--total_rounds=1",
                          *flags)
  assert proc.returncode == 2
  errors = [l for l in proc.stderr.splitlines() if "error:" in l]
  assert len(errors) == 1 and message in errors[0], proc.stderr
  assert not os.listdir(tmp_path)


def test_interrupted_run_resumes_to_identical_metrics(tmp_path, monkeypatch,
                                                      train_in_process):
  def run(name):
    return train_in_process(
        f"--root_output_dir={tmp_path}", f"--experiment_name={name}",
        "--methods=scaffold", "--total_rounds=4", "--rounds_per_checkpoint=2",
        *SMALL)
  whole = run("whole")
  assert whole.returncode == 0, whole.stderr[-3000:]
  select = sampling.UniformSampler.select

  def ctrl_c_before_round_4(self, round_num):
    if round_num == 4:
      raise KeyboardInterrupt
    return select(self, round_num)
  monkeypatch.setattr(sampling.UniformSampler, "select", ctrl_c_before_round_4)
  # The interrupted run's build serves the damaged copies' reruns below (their
  # checks are about the files); the resume at the end builds anew.
  built, processes = {}, {}
  with built_method_memo.methods_built_once(built), \
      built_method_memo.training_processes_built_once(processes):
    killed = run("split")
  monkeypatch.undo()
  assert killed.returncode == 130
  method = tmp_path / "split" / "scaffold"
  # Round 3's c_k were written, its checkpoint was not (every 2 rounds).
  assert sorted(_state_files(method)) == [1, 2, 3]
  assert sorted(os.listdir(method / "checkpoints")) == ["round_2"]
  # A state file the resumed round reads, deleted, cut short or with one
  # float changed (a copy of the run each): one line naming it, exit 1,
  # nothing of the run changed -- never zeros or another value trained on.
  for how, problem in _DAMAGE:
    damaged = tmp_path / how.replace(" ", "_")
    shutil.copytree(tmp_path / "split", damaged / "split")
    states = damaged / "split" / "scaffold" / "client_states" / "round_2"
    path = states / sorted(_state_files(damaged / "split" / "scaffold")[2])[0]
    damage_state_file(path, how)
    before = run_file_bytes(damaged / "split")
    with built_method_memo.methods_built_once(built), \
        built_method_memo.training_processes_built_once(processes):
      proc = train_in_process(
          f"--root_output_dir={damaged}", "--experiment_name=split",
          "--methods=scaffold", "--total_rounds=4",
          "--rounds_per_checkpoint=2", *SMALL)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = [l for l in proc.stderr.splitlines() if "error:" in l]
    assert line.endswith(
        f"error: client state {path} cannot be read ({problem}); delete "
        f"{damaged / 'split' / 'scaffold'} to start over"), line
    assert run_file_bytes(damaged / "split") == before
  resumed = run("split")
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "resuming from the checkpoint of round 2" in resumed.stdout
  rows = metric_rows(method / "metrics.csv")
  assert rows == metric_rows(tmp_path / "whole" / "scaffold" / "metrics.csv")
  assert [r["round"] for r in rows] == ["1", "2", "3", "4"]
  # Round 3 (its clients come back in round 4) read the c_k as of round 2.
  assert _state_files(method) == _state_files(tmp_path / "whole" / "scaffold")
