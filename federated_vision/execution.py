"""A TFF C++ execution context whose worker process cannot outlive its owner.

TFF 0.87's `tff.backends.native.set_sync_local_cpp_execution_context` starts a
`worker_binary` subprocess that is only stopped in a `__del__`; it survives the
Python process on every exit path and keeps inherited output pipes open (CI
hangs). Here the worker is started by us:

* in its own process group (`start_new_session`), so a terminal's Ctrl-C goes
  to Python only and we can kill the whole group;
* with `PR_SET_PDEATHSIG = SIGKILL`, so the kernel kills it if the Python
  process dies for any reason, including SIGKILL;
* with its output sent to a log file, never to our stdout/stderr;
* stopped explicitly by `ManagedWorker.stop`, the context manager, `atexit`,
  and the SIGTERM handler that `install_signal_handlers` installs.
"""

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
from typing import Dict, Iterator, Mapping, NamedTuple, Optional, Tuple

_PR_SET_PDEATHSIG = 1
_STARTUP_TIMEOUT_SEC = 60.0
_LIVE_WORKERS: "set[ManagedWorker]" = set()
_LIVE_LOCK = threading.Lock()

try:
  _LIBC = ctypes.CDLL(None, use_errno=True)
  _PRCTL = _LIBC.prctl
except (OSError, AttributeError):  # Not Linux: rely on process groups + atexit.
  _PRCTL = None


def worker_binary_path() -> str:
  """Path of the `worker_binary` shipped in the tensorflow-federated wheel."""
  import tensorflow_federated  # pylint: disable=g-import-not-at-top
  path = os.path.join(os.path.dirname(tensorflow_federated.__file__), "data",
                      "worker_binary")
  if not os.path.isfile(path):
    raise RuntimeError(f"TFF worker binary not found at {path}; is "
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
    onednn: `TF_ENABLE_ONEDNN_OPTS` (None leaves TF's default, on for x86).
    env: further (name, value) environment pairs.
  """
  intra_op_threads: int = 0
  inter_op_threads: int = 0
  onednn: Optional[bool] = None
  env: Tuple[Tuple[str, str], ...] = ()

  def validate(self) -> "WorkerConfig":
    for name in ("intra_op_threads", "inter_op_threads"):
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
    env.update(dict(self.env))
    return env


def add_worker_config_arguments(parser) -> None:
  """Adds --worker_intra_op_threads etc. to an argparse parser."""
  parser.add_argument("--worker_intra_op_threads", type=int, default=0)
  parser.add_argument("--worker_inter_op_threads", type=int, default=0)
  parser.add_argument("--worker_onednn", choices=("default", "on", "off"),
                      default="default")
  parser.add_argument("--worker_env", action="append", default=[],
                      help="NAME=VALUE for the worker's environment")


def worker_config_from_arguments(args) -> WorkerConfig:
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
      env=tuple(env)).validate()


def _child_setup(parent_pid: int):
  """Runs in the forked child before exec (async-signal-safe calls only)."""
  def setup():
    if _PRCTL is not None:
      _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The parent may have died between fork and prctl.
    if os.getppid() != parent_pid:
      os._exit(1)  # pylint: disable=protected-access
  return setup


class ManagedWorker:
  """One TFF C++ worker process, owned by this Python process."""

  def __init__(self, max_concurrent_computation_calls: int = -1,
               config: Optional[WorkerConfig] = None,
               log_path: Optional[str] = None):
    self._max_calls = max_concurrent_computation_calls
    self.config = (config or WorkerConfig()).validate()
    self._log_path = log_path
    self._own_log = log_path is None
    self._process: Optional[subprocess.Popen] = None
    self._stub = None
    self.port: Optional[int] = None
    self.starts = 0

  @property
  def pid(self) -> Optional[int]:
    return None if self._process is None else self._process.pid

  def is_running(self) -> bool:
    return self._process is not None and self._process.poll() is None

  def start(self) -> None:
    """Starts the worker and blocks until its gRPC service is ready."""
    import grpc  # pylint: disable=g-import-not-at-top
    import portpicker  # pylint: disable=g-import-not-at-top
    from tensorflow_federated.python.core.impl.executor_stacks import executor_factory  # pylint: disable=g-import-not-at-top
    from tensorflow_federated.python.core.impl.executors import remote_executor_grpc_stub  # pylint: disable=g-import-not-at-top

    self.stop()
    self.port = portpicker.pick_unused_port()
    if self._own_log:
      fd, self._log_path = tempfile.mkstemp(prefix="fv_tff_worker_", suffix=".log")
      os.close(fd)
    args = [worker_binary_path(), f"--port={self.port}",
            f"--max_concurrent_computation_calls={self._max_calls}"]
    with open(self._log_path, "ab") as log:
      self._process = subprocess.Popen(  # pylint: disable=subprocess-popen-preexec-fn
          args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
          start_new_session=True, preexec_fn=_child_setup(os.getpid()),
          close_fds=True, env=self.config.environ(os.environ))
    with _LIVE_LOCK:
      _LIVE_WORKERS.add(self)
    self.starts += 1
    channel = grpc.insecure_channel(f"localhost:{self.port}",
                                    executor_factory._GRPC_CHANNEL_OPTIONS)  # pylint: disable=protected-access
    self._stub = remote_executor_grpc_stub.RemoteExecutorGrpcStub(channel)
    deadline = time.monotonic() + _STARTUP_TIMEOUT_SEC
    while not self._stub.is_ready:
      if self._process.poll() is not None:
        raise RuntimeError(
            f"TFF worker exited with code {self._process.returncode} during "
            f"start-up; its log: {self._log_path}\n{self.log_tail()}")
      if time.monotonic() > deadline:
        self.stop()
        raise RuntimeError(f"TFF worker not ready after {_STARTUP_TIMEOUT_SEC}s")
      time.sleep(0.05)

  def get_stub(self):
    """Returns a ready stub, (re)starting the worker if it is not running."""
    if self._stub is None or not self.is_running() or not self._stub.is_ready:
      self.start()
    return self._stub

  def log_tail(self, max_chars: int = 2000) -> str:
    try:
      with open(self._log_path, "rb") as f:
        return f.read()[-max_chars:].decode("utf-8", "replace")
    except (OSError, TypeError):
      return ""

  def stop(self, timeout: float = 5.0) -> None:
    """Stops the worker's whole process group; idempotent."""
    process, self._process, self._stub = self._process, None, None
    with _LIVE_LOCK:
      _LIVE_WORKERS.discard(self)
    if process is not None and process.poll() is None:
      for sig, wait in ((signal.SIGINT, timeout), (signal.SIGKILL, timeout)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
          os.killpg(process.pid, sig)
        try:
          process.wait(wait)
          break
        except subprocess.TimeoutExpired:
          continue
    if self._own_log and self._log_path and os.path.exists(self._log_path):
      with contextlib.suppress(OSError):
        os.remove(self._log_path)


def stop_all_workers() -> None:
  """Stops every worker this process started (registered with atexit)."""
  with _LIVE_LOCK:
    workers = list(_LIVE_WORKERS)
  for worker in workers:
    worker.stop()


atexit.register(stop_all_workers)


def create_managed_cpp_context(worker: ManagedWorker,
                               default_num_clients: int = 0):
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


@contextlib.contextmanager
def managed_execution_context(
    max_concurrent_computation_calls: int = -1,
    config: Optional[WorkerConfig] = None) -> Iterator[ManagedWorker]:
  """Installs a managed C++ context as TFF's default for the `with` body.

  The worker is stopped when the body exits, however it exits.

  Yields:
    The `ManagedWorker` (for inspection, e.g. its pid in tests).
  """
  from tensorflow_federated.python.core.impl.context_stack import context_stack_impl  # pylint: disable=g-import-not-at-top
  worker = ManagedWorker(max_concurrent_computation_calls, config)
  context = create_managed_cpp_context(worker)
  stack = context_stack_impl.context_stack
  previous = stack.current
  stack.set_default_context(context)
  try:
    yield worker
  finally:
    worker.stop()
    stack.set_default_context(previous)


def install_signal_handlers() -> None:
  """Turns SIGTERM (and SIGHUP) into SystemExit so `finally` and atexit run.

  SIGINT already raises KeyboardInterrupt. Must be called from the main thread.
  """
  def handler(signum, frame):
    del frame
    stop_all_workers()
    sys.exit(128 + signum)

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
    _DEFAULT_WORKER = ManagedWorker()
    context_stack_impl.context_stack.set_default_context(
        create_managed_cpp_context(_DEFAULT_WORKER))
  return _DEFAULT_WORKER
