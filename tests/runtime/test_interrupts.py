"""Signals at every moment of a run: one run sent SIGINT in a round, then
SIGINT around a checkpoint write and SIGKILL (a chain of invocations in one
child), each time resumed, ending with the uninterrupted run's metrics;
SIGTERM / SIGINT during start-up; and `signals.deferred`, which holds them
back while a checkpoint is read or written."""

import asyncio
import json
import os
import signal
import subprocess
import sys

import pytest

import run_checks
from conftest import FIXTURES, REPO, SMALL_RUN, TRAIN_MAIN, metric_rows
from experiments import cli
from federated_vision.runtime import signals

LINE = cli.INTERRUPTED


def test_deferred_delivers_a_held_signal_after_the_block():
  """A Ctrl-C during the block raises KeyboardInterrupt right after it (the
  block ends whole); one landing as an `asyncio.run` inside it ends (where
  asyncio's own handler dropped it: its task was done) is not lost."""
  # Python's Ctrl-C handler, as in a binary (a session started in the
  # background, or a pytest-xdist worker, may ignore SIGINT).
  sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
  try:
    _deferred_cases()
  finally:
    signal.signal(signal.SIGINT, sigint)


def _deferred_cases():
  done = []
  with pytest.raises(KeyboardInterrupt):
    with signals.deferred():
      os.kill(os.getpid(), signal.SIGINT)
      done.append("after the signal")
  assert done == ["after the signal"]
  assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

  async def write():
    asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGINT)
    return "written"
  with pytest.raises(KeyboardInterrupt):
    with signals.deferred():
      done.append(asyncio.run(write()))
  assert done[-1] == "written"
  with signals.deferred():  # Nothing received: nothing delivered.
    done.append("quiet")
  assert done[-1] == "quiet"
  # SIGTERM to a handler that exits (the runtime's): after the block too.
  previous = signal.signal(signal.SIGTERM, lambda s, f: sys.exit(128 + s))
  try:
    with pytest.raises(SystemExit) as e:
      with signals.deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("whole")
    assert e.value.code == 143 and done[-1] == "whole"
  finally:
    signal.signal(signal.SIGTERM, previous)


# When each invocation of the child's chain is sent SIGINT, relative to its
# first checkpoint write (tests/fixtures/child_signal_runs.py); a timer's SIGINT
# lands in the write or in the client-state commit after it. The last invocation
# is SIGKILLed once its checkpoint is written.
MOMENTS = ["at the write", "as the write's task ends", "after the write",
           "+0.05 s", "SIGKILL"]


def _chain(flags, stderr_path):
  """tests/fixtures/child_signal_runs.py over `MOMENTS`, SIGKILLed at the last
  one: its invocations' results."""
  with open(stderr_path, "w") as stderr:
    proc = subprocess.Popen(
        [sys.executable, os.path.join(FIXTURES, "child_signal_runs.py"),
         REPO, json.dumps({"args": flags, "moments": MOMENTS})],
        cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
  runs = []
  try:
    for line in proc.stdout:
      if line.startswith("RUN "):
        runs.append(json.loads(line[len("RUN "):]))
      elif line.strip() == "KILL_ME":
        proc.send_signal(signal.SIGKILL)
        break
    proc.wait(60)
  finally:
    if proc.poll() is None:
      proc.kill()
  with open(stderr_path) as f:
    assert proc.returncode == -signal.SIGKILL, f.read()[-3000:]
  return runs


# The reference run's users get conftest's REFERENCE_RUN_TIMEOUT: this test's
# setup may be the one that trains it.
def test_interrupted_every_way_resumes_to_the_uninterrupted_run(
    reference_run, tmp_path, train_in_process):
  """One run of conftest's SMALL_RUN (6 rounds), interrupted again and again
  and each time resumed by the same command: SIGINT during its first round
  (a real process), SIGINT at each of `MOMENTS` around a checkpoint write
  (check 6: every one exits 130 with the line), SIGKILL once a checkpoint is
  written; the last invocation, in this process, run to its end, has the
  uninterrupted reference run's metrics."""
  run_dir = tmp_path / "killed"
  flags = [f"--root_output_dir={tmp_path}", "--experiment_name=killed",
           "--total_rounds=6", *SMALL_RUN]
  run_checks.signal_in_first_round(
      [sys.executable, "-m", TRAIN_MAIN, *flags], signal.SIGINT)
  runs = _chain(flags, tmp_path / "child.err")
  assert [r["moment"] for r in runs] == MOMENTS[:-1]
  for r in runs:
    assert r["code"] == 130, r
    assert r["stderr"].strip().splitlines()[-1] == LINE, r
    assert "Traceback" not in r["stderr"], r
  csv_path = run_dir / "fedavg" / "metrics.csv"
  assert len(metric_rows(csv_path)) < 6, "run finished before the SIGKILL"
  again = train_in_process(*flags)  # The resume: in this process.
  assert again.returncode == 0, again.stderr[-3000:]
  assert "resuming from the checkpoint of round" in again.stdout
  summary = json.loads((run_dir / "summary.json").read_text())
  assert summary["methods"]["fedavg"]["resumed_from_round"] >= 1
  assert metric_rows(csv_path) == metric_rows(
      reference_run / "fedavg" / "metrics.csv")
  reference = json.loads((reference_run / "summary.json").read_text())
  assert (summary["methods"]["fedavg"]["final_accuracy"]
          == reference["methods"]["fedavg"]["final_accuracy"])


_SIGNAL_ON_IMPORT = """
import os, signal, sys

class _Hook:
  def find_spec(self, name, path=None, target=None):
    if name == os.environ["SIGNAL_ON_IMPORT"]:
      sys.meta_path.remove(self)
      os.kill(os.getpid(), getattr(signal, os.environ["SIGNAL_NAME"]))
    return None

sys.meta_path.insert(0, _Hook())
"""


@pytest.mark.parametrize("module, sig", [
    ("experiments.flags_lib", signal.SIGTERM),  # The binary's own imports.
    ("tensorflow", signal.SIGTERM),  # TensorFlow's import, after the flags.
    ("tensorflow", signal.SIGINT)])
def test_a_signal_during_start_up_is_the_line(tmp_path, module, sig):
  """`python -m experiments.train_main` signalled as it imports `module`
  (a sitecustomize hook): the line and 128 + signal, nothing written."""
  (tmp_path / "sitecustomize.py").write_text(_SIGNAL_ON_IMPORT)
  proc = subprocess.run(
      [sys.executable, "-m", TRAIN_MAIN, f"--root_output_dir={tmp_path}/out",
       "--total_rounds=1"], cwd=REPO, capture_output=True, text=True,
      timeout=300, stdin=subprocess.DEVNULL,
      env=dict(os.environ, PYTHONPATH=str(tmp_path), SIGNAL_ON_IMPORT=module,
               SIGNAL_NAME=sig.name, TF_CPP_MIN_LOG_LEVEL="3"),
      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
  assert proc.returncode == 128 + sig, proc.stderr[-3000:]
  assert proc.stderr.strip().splitlines() == [LINE], proc.stderr[-3000:]
  assert not (tmp_path / "out").exists()
