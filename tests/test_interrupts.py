"""Signals at every moment of a run (issue 37): SIGINT around a checkpoint
write (a chain of invocations in one child, resumed to the uninterrupted
run's metrics), SIGTERM / SIGINT during start-up, and `signals.deferred`,
which holds them back while a checkpoint is read or written."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, SMALL_RUN, TRAIN_MAIN, metric_rows
from experiments import cli
from federated_vision.runtime import signals

LINE = cli.INTERRUPTED


def test_deferred_delivers_a_held_signal_after_the_block():
  """A Ctrl-C during the block raises KeyboardInterrupt right after it (the
  block ends whole); one landing as an `asyncio.run` inside it ends (where
  asyncio's own handler dropped it: its task was done) is not lost."""
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


# When each invocation of the chain is sent SIGINT, relative to its first
# checkpoint write (tests/child_signal_runs.py). A timer's SIGINT lands in
# the write, in the client-state commit or in the next round.
MOMENTS = ["at the write", "as the write's task ends", "after the write",
           "+0.05 s", "+0.3 s"]


@pytest.mark.timeout(900)
def test_sigint_around_a_checkpoint_write_exits_130_and_resumes(
    reference_run, tmp_path):
  """Check 6: every invocation exits 130 with the line, and the last one,
  run to its end, has the uninterrupted reference run's metrics."""
  args = [f"--root_output_dir={tmp_path}", "--experiment_name=ctrl_c",
          "--total_rounds=6", *SMALL_RUN]
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO, "tests", "child_signal_runs.py"),
       REPO, json.dumps({"args": args, "moments": MOMENTS})],
      cwd=REPO, capture_output=True, text=True, timeout=900,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
      stdin=subprocess.DEVNULL,
      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
  assert proc.returncode == 0, proc.stderr[-3000:]
  (line,) = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
  runs = json.loads(line[len("RESULT "):])
  assert [r["moment"] for r in runs] == MOMENTS + [None]
  for r in runs[:-1]:
    assert r["code"] == 130, r
    assert r["stderr"].strip().splitlines()[-1] == LINE, r
    assert "Traceback" not in r["stderr"], r
  assert runs[-1]["code"] == 0, runs[-1]
  out = tmp_path / "ctrl_c"
  assert (metric_rows(out / "fedavg" / "metrics.csv")
          == metric_rows(reference_run / "fedavg" / "metrics.csv"))
  got, want = (json.loads((d / "summary.json").read_text())
               for d in (out, reference_run))
  assert (got["methods"]["fedavg"]["final_accuracy"]
          == want["methods"]["fedavg"]["final_accuracy"])


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
