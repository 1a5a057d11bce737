"""Local and remote TFF `worker_binary`s, owned or reached by this process.

TFF 0.87's `tff.backends.native.set_sync_local_cpp_execution_context` starts a
`worker_binary` subprocess that is only stopped in a `__del__`; it survives the
Python process on every exit path and keeps inherited output pipes open (CI
hangs). Here local workers are started by us:

* in their own process group (`start_new_session`), so a terminal's Ctrl-C
  goes to Python only and we can kill the whole group;
* with `PR_SET_PDEATHSIG = SIGKILL`, so the kernel kills them if the Python
  process dies for any reason, including SIGKILL;
* with their output sent to a log file, never to our stdout/stderr;
* with a start-up deadline: a worker that exits or is not serving in time
  raises one `WorkerStartError` line naming its port (or the binary);
* stopped explicitly by `ManagedWorker.stop`, the context manager, `atexit`
  (registered when the first worker starts), and the SIGTERM handler that
  `signals.install_signal_handlers` installs.

A worker lost during a computation (its process exits, its host stops
answering) fails the call with one `WorkerLostError` line within seconds: a
watchdog thread (`watchdog`) checks every worker once a second (local: the
process; remote: a no-op RPC, lost after `_REMOTE_PROBE_FAILURES`
unanswered) and closes the lost worker's channel, which cancels the blocked
gRPC call. TFF itself would retry such calls forever (`RetryableGRPCError`),
i.e. hang (`tff_internals.GuardedStub`).

`worker_binary` (TFF 0.87, `cc/simulation/servers.cc`) listens on `[::]:port`,
all interfaces, and has no flag to change that. Local workers are therefore
started with `loopback_bind.so` preloaded (see `federated_vision/native/`),
which rewrites the wildcard bind to 127.0.0.1 / ::1.
"""

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from typing import Optional

import grpc
import portpicker
import tensorflow_federated
from tensorflow_federated.proto.v0 import executor_pb2
from tensorflow_federated.proto.v0 import executor_pb2_grpc

from federated_vision.native import loopback_bind
from federated_vision.runtime import live_workers
from federated_vision.runtime import tff_internals
from federated_vision.runtime.worker_errors import WorkerLostError, WorkerStartError
from federated_vision.runtime.worker_config import (
    DEFAULT_STARTUP_TIMEOUT_SEC, WorkerConfig, parse_worker_addresses)

_PR_SET_PDEATHSIG = 1
_REMOTE_PROBE_TIMEOUT_SEC = 5.0
_REMOTE_PROBE_FAILURES = 3

try:
  _LIBC = ctypes.CDLL(None, use_errno=True)
  _PRCTL = _LIBC.prctl
except (OSError, AttributeError):  # Not Linux: rely on process groups + atexit.
  _PRCTL = None


def worker_binary_path() -> str:
  """Path of the `worker_binary` shipped in the tensorflow-federated wheel."""
  path = os.path.join(os.path.dirname(tensorflow_federated.__file__), "data",
                      "worker_binary")
  if not os.path.isfile(path):
    raise WorkerStartError(f"TFF worker binary not found at {path}; is "
                           "tensorflow-federated 0.87.0 installed correctly?")
  return path


def _child_setup(parent_pid: int):
  """Runs in the forked child before exec (async-signal-safe calls only)."""
  def setup():
    if _PRCTL is not None:
      _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
      # `stop` sends SIGINT first: a parent started in the background by a
      # non-interactive shell has SIGINT ignored, which exec would pass on
      # (the worker then ignored it and every stop waited its 5 s timeout).
      _LIBC.signal(signal.SIGINT, 0)  # SIG_DFL
    # The parent may have died between fork and prctl.
    if os.getppid() != parent_pid:
      os._exit(1)  # pylint: disable=protected-access
  return setup


class _Worker:
  """A TFF executor service we talk to over one gRPC channel."""

  def __init__(self):
    self._channel = None
    self._stub = None
    self._lost: Optional[str] = None
    self._lock = threading.RLock()

  @property
  def address(self) -> str:
    raise NotImplementedError

  def describe(self) -> str:
    raise NotImplementedError

  def probe(self) -> Optional[str]:
    """None if the worker looks alive, else why not (watchdog thread)."""
    raise NotImplementedError

  @property
  def connected(self) -> bool:
    return self._channel is not None

  def serves(self, stub) -> bool:
    """Whether `stub` is this worker's current connection (not a closed one)."""
    return stub is not None and stub is self._stub

  def _connect(self, deadline: float, alive=lambda: None) -> None:
    """Opens the channel; waits until the service is serving or `deadline`."""
    channel = grpc.insecure_channel(self.address,
                                    tff_internals.GRPC_CHANNEL_OPTIONS)
    stub = tff_internals.grpc_stub(channel)
    while not stub.is_ready:
      reason = alive()
      if reason is not None or time.monotonic() > deadline:
        channel.close()
        raise WorkerStartError(
            f"{self.describe()}: {reason or 'not serving after the start-up deadline'}")
      time.sleep(0.05)
    with self._lock:
      self._channel, self._stub, self._lost = channel, stub, None

  def _disconnect(self) -> None:
    with self._lock:
      channel, self._channel, self._stub = self._channel, None, None
    if channel is not None:
      channel.close()

  def mark_lost(self, reason: str) -> None:
    """Records why the worker is gone and cancels its in-flight calls."""
    with self._lock:
      if self._channel is None:
        return
      self._lost = reason
    self._disconnect()

  def known_loss_reason(self) -> Optional[str]:
    return self._lost

  def loss_message(self, error) -> str:
    reason = self.known_loss_reason()
    if reason is None and isinstance(error, str):
      reason = error
    elif reason is None:
      code = getattr(error, "code", lambda: None)()
      reason = f"gRPC {getattr(code, 'name', code)}"
    return f"{self.describe()} lost during a computation: {reason}"

  def get_stub(self):
    raise NotImplementedError


_LOOPBACK = "127.0.0.1"  # loopback_bind.so's listening address.


class ManagedWorker(_Worker):
  """One local TFF C++ worker process, owned by this Python process.

  Args:
    max_concurrent_computation_calls: the binary's flag (<= 0: no limit).
    config: the process's environment (`WorkerConfig`).
    log_path: where its output goes (a temporary file, removed on stop, when
      None).
    port: its port; None picks a free one at each start.
    startup_timeout: seconds to wait for it to serve.
    auto_restart: `get_stub` restarts a worker that has died (the lazily
      started default worker); otherwise it raises `WorkerLostError`, so a
      run stops instead of silently continuing on a fresh worker.
  """

  def __init__(self, max_concurrent_computation_calls: int = -1,
               config: Optional[WorkerConfig] = None,
               log_path: Optional[str] = None, port: Optional[int] = None,
               startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_SEC,
               auto_restart: bool = False):
    super().__init__()
    self._auto_restart = auto_restart
    self._max_calls = max_concurrent_computation_calls
    self.config = (config or WorkerConfig()).validate()
    self._log_path = log_path
    self._own_log = log_path is None
    self._fixed_port = port
    self._startup_timeout = startup_timeout
    self._process: Optional[subprocess.Popen] = None
    self.port: Optional[int] = None
    self.starts = 0

  @property
  def pid(self) -> Optional[int]:
    return None if self._process is None else self._process.pid

  @property
  def log_path(self) -> Optional[str]:
    return self._log_path

  @property
  def address(self) -> str:
    return f"{_LOOPBACK}:{self.port}"

  def describe(self) -> str:
    return f"local TFF worker on port {self.port} (pid {self.pid})"

  def is_running(self) -> bool:
    return self._process is not None and self._process.poll() is None

  def probe(self) -> Optional[str]:
    process = self._process
    if process is None or process.poll() is None:
      return None
    return self._exit_reason(process)

  def known_loss_reason(self) -> Optional[str]:
    if self._lost:
      return self._lost
    process = self._process
    if process is not None:
      # A broken connection usually means the process is exiting right now.
      with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=2.0)
    return self.probe()

  def _exit_reason(self, process) -> str:
    code = process.returncode
    how = (f"killed by signal {-code}" if code < 0 else f"exited with code {code}")
    tail = [l for l in self.log_tail().splitlines() if l.strip()]
    last = f"; last log line: {tail[-1].strip()[:200]}" if tail else ""
    return f"{how}{last} (log: {self._log_path})"

  def spawn(self) -> None:
    """Starts the process without waiting for it to serve (see `wait_ready`)."""
    self.stop()
    binary = worker_binary_path()
    try:
      env = self.config.environ(os.environ)
    except loopback_bind.BuildError as e:
      raise WorkerStartError(str(e)) from None
    self.port = self._fixed_port or portpicker.pick_unused_port()
    if self._own_log:
      fd, self._log_path = tempfile.mkstemp(prefix="fv_tff_worker_", suffix=".log")
      os.close(fd)
    args = [binary, f"--port={self.port}",
            f"--max_concurrent_computation_calls={self._max_calls}"]
    with open(self._log_path, "ab") as log:
      self._process = subprocess.Popen(  # pylint: disable=subprocess-popen-preexec-fn
          args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
          start_new_session=True, preexec_fn=_child_setup(os.getpid()),
          close_fds=True, env=env)
    live_workers.add(self)
    self.starts += 1
    self._spawned_at = time.monotonic()

  def _wait_listening(self, deadline: float) -> None:
    """Returns once the spawned worker's port accepts a TCP connection, or
    it exited, or `deadline` passed (`_connect` then says which). Ours: a
    gRPC channel opened before the port listens waits out gRPC's initial
    reconnect backoff (1 s) after its first refused attempt."""
    while self.probe() is None and time.monotonic() < deadline:
      try:
        with socket.create_connection((_LOOPBACK, self.port), timeout=0.5):
          return
      except OSError:
        time.sleep(0.01)

  def wait_ready(self) -> None:
    """Blocks until the spawned worker serves; stops it and raises if not."""
    deadline = self._spawned_at + self._startup_timeout
    try:
      self._wait_listening(deadline)
      self._connect(deadline, self.probe)
    except WorkerStartError as e:
      reason = self.probe()
      self.stop()
      raise WorkerStartError(
          f"local TFF worker on port {self.port} did not start: "
          f"{reason or f'not serving after {self._startup_timeout:g} s'}"
      ) from e

  def start(self) -> None:
    """Starts the worker and blocks until its gRPC service is ready."""
    self.spawn()
    self.wait_ready()

  def get_stub(self):
    """A ready stub of the running worker.

    With `auto_restart` (the lazily started default worker) a worker that is
    not running is (re)started; otherwise that raises `WorkerLostError`: pool
    workers are started by `WorkerPool.start`, and one that died or was
    stopped (e.g. a slice still running on it when the pool closed) must not
    come back as a fresh process.
    """
    with self._lock:
      if self.is_running() and self._stub is not None:
        return tff_internals.GuardedStub(self, self._stub)
      if not self._auto_restart:
        state = ("was stopped" if self._process is None
                 else f"is gone: {self.probe() or 'not connected'}")
        raise WorkerLostError(f"{self.describe()} {state}")
      self.start()
      return tff_internals.GuardedStub(self, self._stub)

  def log_tail(self, max_chars: int = 2000) -> str:
    try:
      with open(self._log_path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - max_chars))
        return f.read().decode("utf-8", "replace")
    except (OSError, TypeError):
      return ""

  def stop(self, timeout: float = 5.0) -> None:
    """Stops the worker's whole process group; idempotent.

    The log of a worker that had died on its own is kept (error messages name
    it); otherwise a temporary log is removed.
    """
    self._disconnect()
    process, self._process = self._process, None
    live_workers.discard(self)
    died = process is not None and process.poll() is not None
    if process is not None and not died:
      for sig in (signal.SIGINT, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
          os.killpg(process.pid, sig)
        try:
          process.wait(timeout)
          break
        except subprocess.TimeoutExpired:
          continue
    if (self._own_log and not died and self._log_path
        and os.path.exists(self._log_path)):
      with contextlib.suppress(OSError):
        os.remove(self._log_path)


class RemoteWorker(_Worker):
  """A `worker_binary` service at host:port that someone else started.

  Args:
    address: 'host:port'.
    connect_timeout: seconds to wait for it to serve.
  """

  def __init__(self, address: str,
               connect_timeout: float = DEFAULT_STARTUP_TIMEOUT_SEC):
    super().__init__()
    (self._address,) = parse_worker_addresses([address])
    self._connect_timeout = connect_timeout
    self._failures = 0
    self._probe_channel = None

  @property
  def address(self) -> str:
    return self._address

  pid = None

  def describe(self) -> str:
    return f"TFF worker at {self._address}"

  def probe(self) -> Optional[str]:
    """Alive if it answers a no-op RPC; lost after repeated silence.

    A DisposeExecutor of an unknown executor id is answered at once (OK) by
    a serving worker, however busy its TensorFlow threads are. A process that
    was stopped, or a host that vanished without closing the connection, does
    not answer: a plain TCP connect would still succeed in the first case and
    a blocked gRPC call would wait forever in both.
    """
    if self._probe_channel is None:
      self._probe_channel = grpc.insecure_channel(self._address)
    stub = executor_pb2_grpc.ExecutorGroupStub(self._probe_channel)
    request = executor_pb2.DisposeExecutorRequest(
        executor=executor_pb2.ExecutorId(id="federated-vision-probe"))
    try:
      stub.DisposeExecutor(request, timeout=_REMOTE_PROBE_TIMEOUT_SEC)
    except grpc.RpcError as e:
      if e.code() in (grpc.StatusCode.UNAVAILABLE,
                      grpc.StatusCode.DEADLINE_EXCEEDED):
        self._failures += 1
        if self._failures >= _REMOTE_PROBE_FAILURES:
          return (f"not answering ({e.code().name} on {self._failures} "
                  f"probes of {_REMOTE_PROBE_TIMEOUT_SEC:g} s)")
        return None
    self._failures = 0
    return None

  def get_stub(self):
    with self._lock:
      if self._stub is None:
        try:
          self._connect(time.monotonic() + self._connect_timeout)
        except WorkerStartError:
          raise WorkerStartError(
              f"cannot reach the TFF worker at {self._address} within "
              f"{self._connect_timeout:g} s (is worker_binary --port="
              f"{self._address.rpartition(':')[2]} running there?)") from None
      return tff_internals.GuardedStub(self, self._stub)

  def stop(self) -> None:
    self._disconnect()
    channel, self._probe_channel = self._probe_channel, None
    if channel is not None:
      channel.close()
