"""TFF C++ execution contexts over owned local and remote `worker_binary`s.

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
* stopped explicitly by `ManagedWorker.stop`, the context manager, `atexit`,
  and the SIGTERM handler that `install_signal_handlers` installs.

Several workers (`managed_execution_context(local_workers=N)` and/or
`workers=["host:port", ...]`, services started by hand, see the README) run a
computation through TFF's own `MergeableCompExecutionContext`: TFF compiles it
to mergeable form (work up to the aggregation, merge, after-merge) and gives
each worker a contiguous slice of the round's clients. Results equal one
worker's up to the order of the floating-point sums of the aggregation.

A worker lost during a computation (its process exits, its host stops
answering) fails the call with one `WorkerLostError` line within seconds: a
watchdog thread checks every worker once a second (local: the process;
remote: a no-op RPC, lost after `_REMOTE_PROBE_FAILURES` unanswered) and
closes the lost worker's channel, which cancels the blocked gRPC call. TFF
itself would retry such calls forever (`RetryableGRPCError`), i.e. hang.

`worker_binary` (TFF 0.87, `cc/simulation/servers.cc`) listens on `[::]:port`,
all interfaces, and has no flag to change that. Local workers are therefore
started with `loopback_bind.so` preloaded (see `federated_vision/native/`),
which rewrites the wildcard bind to 127.0.0.1 / ::1.
"""

import asyncio
import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

_PR_SET_PDEATHSIG = 1
DEFAULT_STARTUP_TIMEOUT_SEC = 30.0
_WATCHDOG_INTERVAL_SEC = 1.0
_REMOTE_PROBE_TIMEOUT_SEC = 5.0
_REMOTE_PROBE_FAILURES = 3
_LIVE_WORKERS: "set[ManagedWorker]" = set()
_LIVE_LOCK = threading.Lock()

try:
  _LIBC = ctypes.CDLL(None, use_errno=True)
  _PRCTL = _LIBC.prctl
except (OSError, AttributeError):  # Not Linux: rely on process groups + atexit.
  _PRCTL = None


class WorkerError(RuntimeError):
  """A TFF worker could not be started or reached, or was lost (one line)."""


class WorkerStartError(WorkerError):
  """A worker did not start (binary missing, port taken, not serving)."""


class WorkerLostError(WorkerError):
  """A worker died or became unreachable during a computation."""


def worker_binary_path() -> str:
  """Path of the `worker_binary` shipped in the tensorflow-federated wheel."""
  import tensorflow_federated  # pylint: disable=g-import-not-at-top
  path = os.path.join(os.path.dirname(tensorflow_federated.__file__), "data",
                      "worker_binary")
  if not os.path.isfile(path):
    raise WorkerStartError(f"TFF worker binary not found at {path}; is "
                           "tensorflow-federated 0.87.0 installed correctly?")
  return path


class WorkerConfig(NamedTuple):
  """How a managed worker process is started (immutable).

  The settings are environment variables the TensorFlow inside
  `worker_binary` reads at start-up (the binary itself only has the flags
  `--port`, `--max_concurrent_computation_calls` and
  `--grpc_max_message_length_megabytes`).

  Attributes:
    intra_op_threads: `TF_NUM_INTRAOP_THREADS`; 0 leaves TF's default (one per
      core).
    inter_op_threads: `TF_NUM_INTEROP_THREADS`; 0 leaves TF's default.
    onednn: `TF_ENABLE_ONEDNN_OPTS` (None leaves TF's default, on for x86;
      off makes the CIFAR CNN's rounds take 1.9x the CPU).
    malloc_arena_max: glibc's `MALLOC_ARENA_MAX`; 0 leaves glibc's default
      (8 arenas per core). With the default, memory freed by one of the
      worker's many threads is often not reused by others and its RSS grows
      by 25-60 MB per 1,000 digits rounds; with 2 it stays flat (README,
      "Performance and multiple workers").
    env: further (name, value) environment pairs (applied last).
    loopback_only: preload `loopback_bind.so` so the worker listens on
      loopback only (module docstring).
  """
  intra_op_threads: int = 0
  inter_op_threads: int = 0
  onednn: Optional[bool] = None
  malloc_arena_max: int = 2
  env: Tuple[Tuple[str, str], ...] = ()
  loopback_only: bool = True

  def validate(self) -> "WorkerConfig":
    for name in ("intra_op_threads", "inter_op_threads", "malloc_arena_max"):
      if getattr(self, name) < 0:
        raise ValueError(f"WorkerConfig.{name} must be >= 0, got "
                         f"{getattr(self, name)}")
    return self

  def environ(self, base: Mapping[str, str]) -> Dict[str, str]:
    """`base` (e.g. os.environ) with this configuration's variables set."""
    env = dict(base)
    if self.intra_op_threads:
      env["TF_NUM_INTRAOP_THREADS"] = str(self.intra_op_threads)
    if self.inter_op_threads:
      env["TF_NUM_INTEROP_THREADS"] = str(self.inter_op_threads)
    if self.onednn is not None:
      env["TF_ENABLE_ONEDNN_OPTS"] = "1" if self.onednn else "0"
    if self.malloc_arena_max:
      env["MALLOC_ARENA_MAX"] = str(self.malloc_arena_max)
    if self.loopback_only:
      from federated_vision.native import loopback_bind  # pylint: disable=g-import-not-at-top
      env["LD_PRELOAD"] = " ".join(
          p for p in (loopback_bind.library_path(), env.get("LD_PRELOAD")) if p)
    env.update(dict(self.env))
    return env


def add_worker_config_arguments(parser) -> None:
  """Adds --worker_intra_op_threads etc. to an argparse parser."""
  parser.add_argument("--worker_intra_op_threads", type=int, default=0)
  parser.add_argument("--worker_inter_op_threads", type=int, default=0)
  parser.add_argument("--worker_onednn", choices=("default", "on", "off"),
                      default="default")
  parser.add_argument("--worker_malloc_arena_max", type=int,
                      default=WorkerConfig().malloc_arena_max)
  parser.add_argument("--worker_env", action="append", default=[],
                      help="NAME=VALUE for the worker's environment")


def worker_config_from_arguments(args) -> WorkerConfig:
  """The `WorkerConfig` of `add_worker_config_arguments`' parsed arguments."""
  env = []
  for item in args.worker_env:
    name, sep, value = item.partition("=")
    if not sep or not name:
      raise ValueError(f"--worker_env={item!r}: expected NAME=VALUE")
    env.append((name, value))
  return WorkerConfig(
      intra_op_threads=args.worker_intra_op_threads,
      inter_op_threads=args.worker_inter_op_threads,
      onednn={"default": None, "on": True, "off": False}[args.worker_onednn],
      malloc_arena_max=args.worker_malloc_arena_max,
      env=tuple(env)).validate()


def parse_worker_addresses(workers: Union[str, Sequence[str]]) -> List[str]:
  """'host:port,host:port' (or a list) -> validated ['host:port', ...]."""
  items = workers.split(",") if isinstance(workers, str) else list(workers)
  out = []
  for item in (i.strip() for i in items):
    host, sep, port = item.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
      raise ValueError(f"workers: {item!r} is not host:port")
    out.append(item)
  if len(set(out)) != len(out):
    raise ValueError(f"workers: duplicate addresses in {out}")
  return out


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


def _grpc_options():
  from tensorflow_federated.python.core.impl.executor_stacks import executor_factory  # pylint: disable=g-import-not-at-top
  return executor_factory._GRPC_CHANNEL_OPTIONS  # pylint: disable=protected-access


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

  def _connect(self, deadline: float, alive=lambda: None) -> None:
    """Opens the channel; waits until the service is serving or `deadline`."""
    import grpc  # pylint: disable=g-import-not-at-top
    from tensorflow_federated.python.core.impl.executors import remote_executor_grpc_stub  # pylint: disable=g-import-not-at-top
    channel = grpc.insecure_channel(self.address, _grpc_options())
    stub = remote_executor_grpc_stub.RemoteExecutorGrpcStub(channel)
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
    return f"127.0.0.1:{self.port}"  # loopback_bind.so's listening address.

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
    import portpicker  # pylint: disable=g-import-not-at-top
    self.stop()
    binary = worker_binary_path()
    from federated_vision.native import loopback_bind  # pylint: disable=g-import-not-at-top
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
    with _LIVE_LOCK:
      _LIVE_WORKERS.add(self)
    self.starts += 1
    self._spawned_at = time.monotonic()

  def wait_ready(self) -> None:
    """Blocks until the spawned worker serves; stops it and raises if not."""
    try:
      self._connect(self._spawned_at + self._startup_timeout, self.probe)
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
        return _guarded_stub(self, self._stub)
      if not self._auto_restart:
        state = ("was stopped" if self._process is None
                 else f"is gone: {self.probe() or 'not connected'}")
        raise WorkerLostError(f"{self.describe()} {state}")
      self.start()
      return _guarded_stub(self, self._stub)

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
    with _LIVE_LOCK:
      _LIVE_WORKERS.discard(self)
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
    import grpc  # pylint: disable=g-import-not-at-top
    from tensorflow_federated.proto.v0 import executor_pb2  # pylint: disable=g-import-not-at-top
    from tensorflow_federated.proto.v0 import executor_pb2_grpc  # pylint: disable=g-import-not-at-top
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
      return _guarded_stub(self, self._stub)

  def stop(self) -> None:
    self._disconnect()
    channel, self._probe_channel = self._probe_channel, None
    if channel is not None:
      channel.close()


def _guarded_stub_class():
  """`_GuardedStub`, defined on first use (TFF is imported lazily)."""
  import grpc  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.proto.v0 import executor_pb2  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.impl.executors import executors_errors  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.impl.executors import remote_executor_stub  # pylint: disable=g-import-not-at-top

  lost_codes = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                grpc.StatusCode.DEADLINE_EXCEEDED}

  def _forward(method: str):
    return lambda self, request: self._call(method, request)  # pylint: disable=protected-access

  class GuardedStub(remote_executor_stub.RemoteExecutorStub):
    """Turns a lost worker's gRPC errors into a `WorkerLostError`.

    TFF marks UNAVAILABLE retryable and retries the whole call forever; a
    `WorkerError` is not retryable, so the computation stops with one line.
    """

    def __init__(self, worker: _Worker, stub):
      self._worker = worker
      self._stub = stub

    def _call(self, method: str, request):
      try:
        return getattr(self._stub, method)(request)
      except ValueError as e:
        if "closed channel" not in str(e):
          raise
        # The worker was marked lost, stopped or restarted since this stub
        # was handed out.
        raise WorkerLostError(self._worker.loss_message(
            "its connection was closed (worker stopped)")) from None
      except (grpc.RpcError, executors_errors.RetryableError) as e:
        code = e.code() if isinstance(e, grpc.Call) else None
        if code in lost_codes or self._worker._lost:  # pylint: disable=protected-access
          raise WorkerLostError(self._worker.loss_message(e)) from None
        if isinstance(e, executors_errors.RetryableError):
          raise WorkerError(f"{self._worker.describe()}: gRPC "
                            f"{getattr(code, 'name', code)}: {e.details()}") from None
        raise

    def _dispose(self, method: str, request, response):
      try:
        return self._call(method, request)
      except WorkerLostError:
        return response  # Nothing left to dispose of on a lost worker.

    get_executor = _forward("get_executor")
    create_value = _forward("create_value")
    create_struct = _forward("create_struct")
    create_call = _forward("create_call")
    create_selection = _forward("create_selection")
    compute = _forward("compute")

    def dispose(self, request):
      return self._dispose("dispose", request, executor_pb2.DisposeResponse())

    def dispose_executor(self, request):
      return self._dispose("dispose_executor", request,
                           executor_pb2.DisposeExecutorResponse())

    @property
    def is_ready(self) -> bool:
      return self._stub.is_ready

  return GuardedStub


_GUARDED_STUB = None


def _guarded_stub(worker, stub):
  global _GUARDED_STUB
  if _GUARDED_STUB is None:
    _GUARDED_STUB = _guarded_stub_class()
  return _GUARDED_STUB(worker, stub)


class _Watchdog:
  """Marks workers lost (cancelling their calls) when their probe fails."""

  def __init__(self, workers: Sequence[_Worker],
               interval: float = _WATCHDOG_INTERVAL_SEC):
    self._workers = list(workers)
    self._interval = interval
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._run, daemon=True,
                                    name="fv-worker-watchdog")
    self._thread.start()

  def _run(self):
    while not self._stop.wait(self._interval):
      for worker in self._workers:
        if worker.connected:
          reason = worker.probe()
          if reason is not None:
            worker.mark_lost(reason)

  def stop(self):
    self._stop.set()
    self._thread.join(timeout=10)


def stop_all_workers() -> None:
  """Stops every worker this process started (registered with atexit)."""
  with _LIVE_LOCK:
    workers = list(_LIVE_WORKERS)
  for worker in workers:
    worker.stop()


atexit.register(stop_all_workers)


def create_managed_cpp_context(worker: _Worker, default_num_clients: int = 0):
  """A sync TFF execution context running on `worker` (started lazily)."""
  # These mirror tff.backends.native.create_sync_local_cpp_execution_context,
  # with TFF's ServiceManager replaced by `worker`.
  from tensorflow_federated.python.core.backends.native import compiler  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.environments.tensorflow_frontend import tensorflow_computation  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.impl.execution_contexts import sync_execution_context  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.impl.executor_stacks import python_executor_stacks  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.impl.executors import remote_executor  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.impl.types import placements  # pylint: disable=g-import-not-at-top

  def stack_fn(cardinalities):
    if cardinalities.get(placements.CLIENTS) is None:
      cardinalities[placements.CLIENTS] = default_num_clients
    executor = remote_executor.RemoteExecutor(worker.get_stub(),
                                              stream_structs=False)
    executor.set_cardinalities(cardinalities)
    return executor

  factory = python_executor_stacks.ResourceManagingExecutorFactory(
      executor_stack_fn=stack_fn)
  return sync_execution_context.SyncExecutionContext(
      executor_fn=factory,
      compiler_fn=compiler.desugar_and_transform_to_native,
      transform_args=tensorflow_computation.transform_args,
      transform_result=tensorflow_computation.transform_result)


def create_multi_worker_context(workers: Sequence[_Worker]):
  """TFF's `MergeableCompExecutionContext` over one sync context per worker.

  A computation is compiled to mergeable form; its CLIENTS-placed argument
  is split into len(workers) contiguous slices, one per worker, and the
  partial aggregates are merged. TFF's `RemoteExecutor` blocks its event loop
  on every gRPC call, so each worker's context is invoked in its own thread;
  otherwise the slices would run one after another.
  """
  from tensorflow_federated.python.core.backends.native import mergeable_comp_compiler  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.impl.context_stack import context_base  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.impl.execution_contexts import mergeable_comp_execution_context as mergeable  # pylint: disable=g-import-not-at-top

  class ThreadedContext(context_base.AsyncContext):
    """An AsyncContext running a sync context's `invoke` in a thread."""

    def __init__(self, sync_context):
      self._context = sync_context

    async def invoke(self, comp, arg):
      return await asyncio.to_thread(self._context.invoke, comp, arg)

  context = mergeable.MergeableCompExecutionContext(
      async_contexts=[ThreadedContext(create_managed_cpp_context(w))
                      for w in workers],
      compiler_fn=mergeable_comp_compiler.compile_to_mergeable_comp_form)

  def quiet_worker_errors(loop, info):
    # When one worker's slice fails, TFF raises at once and leaves the other
    # slices' tasks to fail later (the pool is stopped): their "exception
    # never retrieved" tracebacks would bury the one line already raised.
    if not isinstance(info.get("exception"), WorkerError):
      loop.default_exception_handler(info)

  context._async_runner._event_loop.set_exception_handler(quiet_worker_errors)  # pylint: disable=protected-access
  return context


class WorkerPool:
  """The workers of one execution context: local ones we own, remote ones.

  Args:
    local_workers: how many local workers to start (>= 0).
    workers: 'host:port' addresses of running `worker_binary` services.
    max_concurrent_computation_calls: the local workers' flag.
    config: the local workers' `WorkerConfig`.
    startup_timeout: start-up / connect deadline in seconds, per worker.
  """

  def __init__(self, local_workers: int = 1, workers: Sequence[str] = (),
               max_concurrent_computation_calls: int = -1,
               config: Optional[WorkerConfig] = None,
               startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_SEC):
    if local_workers < 0:
      raise ValueError(f"local_workers must be >= 0, got {local_workers}")
    if not startup_timeout > 0:
      raise ValueError(f"startup_timeout must be > 0, got {startup_timeout}")
    remote = parse_worker_addresses(workers) if workers else []
    if local_workers + len(remote) == 0:
      raise ValueError("need at least one worker: local_workers=0 and no "
                       "workers given")
    self.local: List[ManagedWorker] = [
        ManagedWorker(max_concurrent_computation_calls, config,
                      startup_timeout=startup_timeout)
        for _ in range(local_workers)]
    self.remote: List[RemoteWorker] = [
        RemoteWorker(a, startup_timeout) for a in remote]
    self.workers: List[_Worker] = [*self.local, *self.remote]
    self._watchdog: Optional[_Watchdog] = None

  @property
  def pids(self) -> List[int]:
    """Pids of the running local workers."""
    return [w.pid for w in self.local if w.pid is not None]

  @property
  def pid(self) -> Optional[int]:
    """The first local worker's pid (the single-worker case)."""
    return self.local[0].pid if self.local else None

  def start(self) -> None:
    """Starts every local worker (in parallel) and connects to every one."""
    try:
      for w in self.local:
        w.spawn()
      for w in self.local:
        w.wait_ready()
      for w in self.remote:
        w.get_stub()
    except BaseException:
      self.stop()
      raise
    if self._watchdog is None:
      self._watchdog = _Watchdog(self.workers)

  def context(self):
    """The TFF execution context over these workers."""
    if len(self.workers) == 1:
      return create_managed_cpp_context(self.workers[0])
    return create_multi_worker_context(self.workers)

  def stop(self) -> None:
    if self._watchdog is not None:
      self._watchdog.stop()
      self._watchdog = None
    for w in self.workers:
      w.stop()


@contextlib.contextmanager
def managed_execution_context(
    max_concurrent_computation_calls: int = -1,
    config: Optional[WorkerConfig] = None, *,
    local_workers: int = 1, workers: Sequence[str] = (),
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_SEC,
) -> Iterator[WorkerPool]:
  """Installs a context over started workers as TFF's default for the body.

  Args:
    max_concurrent_computation_calls: `worker_binary`'s flag for local
      workers (<= 0: no limit).
    config: local workers' environment (`WorkerConfig`).
    local_workers: N local workers to start, owned by this process.
    workers: 'host:port' of `worker_binary` services started by hand.
    startup_timeout: per-worker start-up / connect deadline (seconds).

  Yields:
    The started `WorkerPool` (its `pids`, for inspection). Every local worker
    is stopped when the body exits, however it exits.

  Raises:
    WorkerStartError: a worker did not start / could not be reached.
  """
  from tensorflow_federated.python.core.impl.context_stack import context_stack_impl  # pylint: disable=g-import-not-at-top
  pool = WorkerPool(local_workers, workers, max_concurrent_computation_calls,
                    config, startup_timeout)
  stack = context_stack_impl.context_stack
  previous = stack.current
  try:
    pool.start()
    stack.set_default_context(pool.context())
    yield pool
  finally:
    pool.stop()
    stack.set_default_context(previous)


# The signal `install_signal_handlers`' handler is stopping the process for
# (None otherwise): a computation the stopped workers fail is not a worker
# error then, and the binary exits 128 + signal.
TERMINATING_SIGNAL: Optional[int] = None


def _redeliver_dropped_exit(previous_hook):
  """A `sys.unraisablehook` that re-sends a dropped termination signal.

  Python drops an exception raised where it cannot propagate (a `__del__`, a
  gc callback such as jax's, a weakref callback), printing a traceback. When
  our SIGTERM/SIGHUP handler's SystemExit, or SIGINT's KeyboardInterrupt, is
  dropped there, the process would go on as if never signalled: deliver the
  signal again, silently, once that code has returned. Anything else goes to
  `previous_hook`.
  """
  def hook(unraisable):
    signum = TERMINATING_SIGNAL
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
      signum = signal.SIGINT  # Ctrl-C (Python's own handler) lost likewise.
    elif not (signum is not None
              and isinstance(unraisable.exc_value, SystemExit)
              and unraisable.exc_value.code == 128 + signum):
      signum = None
    if signum is not None:
      again = threading.Timer(0.05, os.kill, (os.getpid(), signum))
      again.daemon = True
      again.start()
      return
    previous_hook(unraisable)
  hook.redelivers_exit = True
  return hook


def install_signal_handlers() -> None:
  """Turns SIGTERM (and SIGHUP) into SystemExit so `finally` and atexit run.

  SIGINT already raises KeyboardInterrupt. Must be called from the main thread.
  """
  def handler(signum, frame):
    del frame
    global TERMINATING_SIGNAL
    TERMINATING_SIGNAL = signum
    stop_all_workers()
    sys.exit(128 + signum)

  if not getattr(sys.unraisablehook, "redelivers_exit", False):
    sys.unraisablehook = _redeliver_dropped_exit(sys.unraisablehook)
  for sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, handler)


def _retire_tff_default_context() -> None:
  """Drops TFF's import-time default context while the interpreter is intact.

  Otherwise its ServiceManager.__del__ runs during interpreter teardown and
  prints an 'AttributeError: NoneType has no attribute Popen' traceback.
  """
  import gc  # pylint: disable=g-import-not-at-top
  stack_impl = sys.modules.get(
      "tensorflow_federated.python.core.impl.context_stack.context_stack_impl")
  if stack_impl is None:
    return
  from tensorflow_federated.python.core.impl.context_stack import runtime_error_context  # pylint: disable=g-import-not-at-top
  stack_impl.context_stack.set_default_context(
      runtime_error_context.RuntimeErrorContext())
  gc.collect()


atexit.register(_retire_tff_default_context)

_DEFAULT_WORKER: Optional[ManagedWorker] = None


def install_managed_default_context() -> ManagedWorker:
  """Makes a managed C++ context TFF's default for this process (idempotent).

  Called when `federated_vision` modules that run TFF are imported, so that a
  TFF computation invoked anywhere (a notebook, a test, a user's script)
  never starts TFF's unmanaged worker. The worker starts lazily on first use
  and is stopped at exit (or by the kernel, if this process is killed).
  """
  global _DEFAULT_WORKER
  from tensorflow_federated.python.core.impl.context_stack import context_stack_impl  # pylint: disable=g-import-not-at-top
  if _DEFAULT_WORKER is None:
    _DEFAULT_WORKER = ManagedWorker(auto_restart=True)
    context_stack_impl.context_stack.set_default_context(
        create_managed_cpp_context(_DEFAULT_WORKER))
  return _DEFAULT_WORKER
