"""The managed TFF worker never outlives its owner."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import execution
from conftest import REPO


def _alive(pid: int) -> bool:
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().split(")")[-1].split()[0] != "Z"
  except OSError:
    return False


@tff.tensorflow.computation(tf.int32)
def _add_one(x):
  return x + 1


def test_context_runs_and_stops_worker():
  with execution.managed_execution_context() as worker:
    assert _add_one(41) == 42
    pid = worker.pid
    assert _alive(pid)
    # Own process group: a terminal's Ctrl-C does not reach it directly.
    assert os.getpgid(pid) == pid != os.getpgid(os.getpid())
  assert worker.pid is None
  deadline = time.time() + 5
  while _alive(pid) and time.time() < deadline:
    time.sleep(0.05)
  assert not _alive(pid)


def test_context_stops_worker_on_error():
  try:
    with execution.managed_execution_context() as worker:
      _add_one(1)
      pid = worker.pid
      raise RuntimeError("boom")
  except RuntimeError:
    pass
  time.sleep(0.5)
  assert not _alive(pid)


def test_default_context_is_managed():
  # Importing the package replaced TFF's unmanaged default context.
  worker = execution.install_managed_default_context()
  assert _add_one(1) == 2
  assert worker.is_running()
  worker.stop()
  assert not worker.is_running()


def test_worker_dies_with_sigkilled_parent(tmp_path):
  script = tmp_path / "child.py"
  script.write_text(textwrap.dedent("""
      import os, sys
      import tensorflow as tf, tensorflow_federated as tff
      from federated_vision import execution
      @tff.tensorflow.computation(tf.int32)
      def f(x):
        return x * 2
      with execution.managed_execution_context() as w:
        assert f(2) == 4
        print(w.pid, flush=True)
        os.kill(os.getpid(), 9)
  """))
  proc = subprocess.run([sys.executable, str(script)], capture_output=True,
                        text=True, cwd=REPO, timeout=120, check=False)
  assert proc.returncode == -signal.SIGKILL
  pid = int(proc.stdout.split()[-1])
  deadline = time.time() + 5
  while _alive(pid) and time.time() < deadline:
    time.sleep(0.05)
  assert not _alive(pid), "worker outlived its SIGKILLed parent"
