"""The managed TFF worker never outlives its owner."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.runtime import contexts
from federated_vision.runtime import worker_config
from federated_vision.runtime import workers
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
  with contexts.managed_execution_context() as worker:
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
    with contexts.managed_execution_context() as worker:
      _add_one(1)
      pid = worker.pid
      raise RuntimeError("boom")
  except RuntimeError:
    pass
  time.sleep(0.5)
  assert not _alive(pid)


def test_default_context_is_managed():
  # runtime.install() (conftest) replaced TFF's unmanaged default context.
  worker = contexts.install_managed_default_context()
  assert _add_one(1) == 2
  assert worker.is_running()
  worker.stop()
  assert not worker.is_running()


@tff.federated_computation(tff.FederatedType(np.int32, tff.CLIENTS))
def _federated_sum(x):
  return tff.federated_sum(x)


def test_stopped_default_worker_restarts_for_the_next_computation():
  # TFF caches one executor per cardinalities, holding the connection it was
  # made with: a stopped default worker used to fail the next computation
  # (WorkerLostError, 'its connection was closed') instead of restarting.
  worker = contexts.install_managed_default_context()
  assert _add_one(1) == 2
  assert _federated_sum([1, 2, 3]) == 6
  first_pid, starts = worker.pid, worker.starts
  worker.stop()
  assert not worker.is_running()
  assert _add_one(41) == 42
  assert worker.is_running() and worker.pid != first_pid
  assert worker.starts == starts + 1
  assert _federated_sum([1, 2, 3]) == 6  # Same cardinalities as before.
  assert _federated_sum([5, 7]) == 12
  assert worker.starts == starts + 1  # One restart served every call.
  assert not _alive(first_pid)


def test_worker_dies_with_sigkilled_parent(tmp_path):
  script = tmp_path / "child.py"
  script.write_text(textwrap.dedent("""
      import os, sys
      import tensorflow as tf, tensorflow_federated as tff
      from federated_vision.runtime import contexts
      @tff.tensorflow.computation(tf.int32)
      def f(x):
        return x * 2
      with contexts.managed_execution_context() as w:
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


def test_worker_config_environment():
  config = worker_config.WorkerConfig(
      intra_op_threads=1, inter_op_threads=2, onednn=False,
      malloc_arena_max=4, env=(("X", "1"), ("MALLOC_ARENA_MAX", "3")),
      loopback_only=False)
  assert config.environ({"A": "b"}) == {
      "A": "b", "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "2",
      "TF_ENABLE_ONEDNN_OPTS": "0", "MALLOC_ARENA_MAX": "3", "X": "1"}
  assert worker_config.WorkerConfig(loopback_only=False).environ({}) == {
      "MALLOC_ARENA_MAX": "2"}
  assert worker_config.WorkerConfig(
      loopback_only=False, malloc_arena_max=0).environ({}) == {}
  with pytest.raises(ValueError, match="intra_op_threads"):
    worker_config.WorkerConfig(intra_op_threads=-1).validate()


def test_started_worker_gets_its_environment():
  with contexts.managed_execution_context() as pool:
    with open(f"/proc/{pool.pid}/environ", "rb") as f:
      env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
  assert env[b"MALLOC_ARENA_MAX"] == b"2"
  assert b"loopback_bind" in env[b"LD_PRELOAD"]


_IN_DEL = """
class Finalized:
  def __del__(self):
    signalled()
Finalized()
"""
_IN_GC_CALLBACK = """
import gc
gc.callbacks.append(lambda phase, info: phase == "start" and signalled())
gc.collect()
"""


@pytest.mark.parametrize("where", [_IN_DEL, _IN_GC_CALLBACK],
                         ids=["__del__", "gc_callback"])
@pytest.mark.parametrize("sig, code, output", [
    (signal.SIGTERM, 128 + 15, ""), (signal.SIGINT, 130, "interrupted\n")])
def test_signal_where_python_drops_exceptions_still_stops(tmp_path, where,
                                                          sig, code, output):
  """A SIGTERM (or Ctrl-C) handled inside a __del__ or a gc callback (jax
  has one), where Python drops the handler's SystemExit (KeyboardInterrupt)
  and prints a traceback, is delivered again afterwards: the script stops
  quietly instead of going on."""
  script = tmp_path / "child.py"
  script.write_text(textwrap.dedent("""
      import os, signal, time
      from federated_vision.runtime import signals
      # Ctrl-C: the script is stopped by an uncaught KeyboardInterrupt.
      signal.signal(signal.SIGINT, signal.default_int_handler)
      signals.install_signal_handlers()
      fired = []
      def signalled():  # Once (the gc callback runs again at exit).
        if not fired:
          fired.append(1)
          os.kill(os.getpid(), signal.SIG_NAME)
          time.sleep(1)  # The handler runs here, and raises.
          print("signal not handled", flush=True)
  """).replace("SIG_NAME", sig.name) + where + textwrap.dedent("""
      try:
        time.sleep(10)
        print("not stopped", flush=True)
      except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise SystemExit(130)
  """))
  proc = subprocess.run([sys.executable, str(script)], capture_output=True,
                        text=True, cwd=REPO, timeout=120, check=False)
  assert proc.returncode == code
  assert proc.stdout == output  # Never "not stopped": the 10 s sleep ended.
  assert proc.stderr == ""


def test_worker_stops_at_once_when_sigint_is_ignored_here():
  """A parent started in the background by a script has SIGINT ignored; the
  worker must not inherit that (stop's SIGINT would wait out its timeout)."""
  previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
  try:
    worker = workers.ManagedWorker()
    worker.start()
  finally:
    signal.signal(signal.SIGINT, previous)
  with open(f"/proc/{worker.pid}/status") as f:
    ignored = int(next(l for l in f if l.startswith("SigIgn:")).split()[1], 16)
  process = worker._process  # pylint: disable=protected-access
  worker.stop()
  assert not ignored & (1 << (signal.SIGINT - 1))
  # Stopped by stop()'s SIGINT, not by its SIGKILL after the timeout.
  assert process.returncode == -signal.SIGINT


def test_worker_channel_opens_only_once_its_port_listens(monkeypatch):
  """`ManagedWorker.start` opens its gRPC channel once the port accepts a
  connection: a channel opened before would wait out gRPC's 1 s initial
  reconnect backoff after its first refused attempt (checked by what the
  code did, not by a stopwatch)."""
  import socket  # pylint: disable=g-import-not-at-top
  real = workers.grpc.insecure_channel
  seen = []

  def channel(address, options=None):
    host, port = address.rsplit(":", 1)
    try:
      with socket.create_connection((host, int(port)), timeout=1):
        seen.append("listening")
    except OSError:
      seen.append("refused")
    return real(address, options)

  monkeypatch.setattr(workers.grpc, "insecure_channel", channel)
  worker = workers.ManagedWorker()
  try:
    worker.start()
  finally:
    worker.stop()
  assert seen == ["listening"]
