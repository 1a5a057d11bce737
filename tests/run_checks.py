"""Checks on a finished train_main run that a wrong result would fail.

`0 <= accuracy <= 1` holds for any number an evaluation could print; these
tie a run's summary to its per-round log, the accuracy to a count of test
examples, the loss to training, and the EMD to the class counts.
"""

import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import REPO, metric_rows, worker_pids

# What a run stopped by a signal says (experiments.cli.INTERRUPTED, as
# docs/failure_modes.md quotes it).
INTERRUPTED = ("interrupted; run the same command again to resume from the "
               "last checkpoint")

# train_main's digits test set: sklearn's 1,797 digits, 20 % of each class
# held out (federated_vision.data.digits.load_arrays; test_fedvc checks it).
DIGITS_NUM_TEST = 359


def check_method_run(method_dir, method_summary, num_test=None,
                     loss_falls=True):
  """One method's summary entry against its metrics.csv.

  Args:
    method_dir: the method's output directory (holds metrics.csv).
    method_summary: its entry of summary.json's "methods".
    num_test: the test set's size; the final accuracy must then be a whole
      number of correct examples over it.
    loss_falls: the last round's train loss is below the first's.
  """
  rows = metric_rows(method_dir / "metrics.csv")
  assert [int(r["round"]) for r in rows] == list(
      range(1, method_summary["rounds"] + 1))
  evaluated = [float(r["test_accuracy"]) for r in rows if r["test_accuracy"]]
  assert evaluated, "no evaluated round"
  assert method_summary["final_accuracy"] == pytest.approx(evaluated[-1],
                                                           abs=1e-7)
  if num_test is not None:
    correct = evaluated[-1] * num_test
    assert correct == pytest.approx(round(correct), abs=1e-3), (
        f"accuracy {evaluated[-1]} is not k / {num_test}")
  losses = np.array([float(r["train_loss"]) for r in rows])
  assert np.isfinite(losses).all()
  if loss_falls:
    assert losses[-1] < losses[0], losses


def emd_of_counts(counts) -> float:
  """Hsu, Qi & Brown 2020 Sec. 3: sum_k n_k / n * ||q_k - p||_1, with p the
  clients' pooled class distribution (numpy reference)."""
  counts = np.asarray(counts, np.float64)
  n_k = counts.sum(axis=1)
  q = counts / n_k[:, None]
  p = counts.sum(axis=0) / counts.sum()
  return float(np.sum(n_k / n_k.sum() * np.abs(q - p).sum(axis=1)))



def run_file_bytes(directory) -> dict:
  """{path relative to `directory`: bytes} of every file under it but the
  lock files (each holds the pid of the last process that took it): what a
  refused or stopped rerun must leave as it was."""
  return {str(p.relative_to(directory)): p.read_bytes()
          for p in sorted(directory.rglob("*"))
          if p.is_file() and p.name != ".lock"}


def damage_state_file(path, how: str) -> None:
  """A client state file (.npy) `how`: "deleted", "cut short" (its last 4
  bytes) or "one float changed" (its first number set to 1000.0: still a
  valid .npy of the right size)."""
  if how == "deleted":
    path.unlink()
  elif how == "cut short":
    path.write_bytes(path.read_bytes()[:-4])
  elif how == "one float changed":
    vector = np.load(path)
    vector[0] = 1000.0
    np.save(path, vector)
  else:
    raise ValueError(how)


def signal_in_first_round(args, sig) -> None:
  """Runs the train_main command `args` (a real process) and sends it `sig`
  as its first round is reported: it exits 128 + sig with the line (the
  last of its stderr, no traceback), and its TFF worker is stopped."""
  before = worker_pids()
  # As in a terminal: SIGINT at its default even when this test session was
  # started in the background by a script (which ignores SIGINT).
  proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          text=True, preexec_fn=lambda: signal.signal(
                              signal.SIGINT, signal.SIG_DFL))
  try:
    line = ""
    while "[fedavg] round" not in line:
      assert proc.poll() is None, proc.stderr.read()
      line = proc.stdout.readline()
    ours = worker_pids() - before
    assert ours, "no worker while training"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
  assert proc.returncode == 128 + sig
  assert "Traceback" not in err
  assert err.strip().splitlines()[-1] == INTERRUPTED
  time.sleep(0.5)
  assert not worker_pids() & ours


def ctrl_c_before_round(monkeypatch, round_num: int) -> None:
  """Makes the clients' sampler raise KeyboardInterrupt (a Ctrl-C) before
  round `round_num`, until `monkeypatch.undo()`: a run stopped between
  rounds, for the resume tests."""
  from federated_vision.learning import sampling  # pylint: disable=g-import-not-at-top
  select = sampling.UniformSampler.select

  def select_or_stop(self, r):
    if r == round_num:
      raise KeyboardInterrupt
    return select(self, r)
  monkeypatch.setattr(sampling.UniformSampler, "select", select_or_stop)
