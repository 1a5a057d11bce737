"""TFF execution contexts over our workers, and TFF's default context.

Several workers (`managed_execution_context(local_workers=N)` and/or
`workers=["host:port", ...]`, services started by hand, see the README) run a
computation through TFF's own `MergeableCompExecutionContext`: TFF compiles it
to mergeable form (work up to the aggregation, merge, after-merge) and gives
each worker a contiguous slice of the round's clients. Results equal one
worker's up to the order of the floating-point sums of the aggregation.

Nothing here runs at import: a process makes a managed context TFF's default
with `install_managed_default_context` (or `federated_vision.runtime.install`,
which the binaries and the tests call), or runs inside
`managed_execution_context`. Code that invokes TFF computations calls
`require_managed_context` first, so it never silently starts the unmanaged
worker of the context `import tensorflow_federated` installs.
"""

import atexit
import contextlib
import gc
from typing import Iterator, List, Optional, Sequence

from federated_vision.runtime import tff_internals
from federated_vision.runtime.worker_errors import NoManagedContextError
from federated_vision.runtime.watchdog import Watchdog
from federated_vision.runtime.worker_config import (
    DEFAULT_STARTUP_TIMEOUT_SEC, WorkerConfig, parse_worker_addresses)
from federated_vision.runtime.workers import ManagedWorker, RemoteWorker

INSTALL_HINT = ("call federated_vision.runtime.install() first (or run inside "
                "federated_vision.runtime.contexts.managed_execution_context())")


def create_managed_cpp_context(worker, default_num_clients: int = 0):
  """A sync TFF execution context running on `worker` (started lazily)."""
  return tff_internals.sync_context(worker.get_stub, default_num_clients)


def create_multi_worker_context(workers: Sequence[object]):
  """TFF's `MergeableCompExecutionContext` over one context per worker
  (`tff_internals.mergeable_context`)."""
  return tff_internals.mergeable_context(
      [create_managed_cpp_context(w) for w in workers])


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
    self.workers = [*self.local, *self.remote]
    self._watchdog: Optional[Watchdog] = None

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
      self._watchdog = Watchdog(self.workers)

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
  pool = WorkerPool(local_workers, workers, max_concurrent_computation_calls,
                    config, startup_timeout)
  previous = tff_internals.current_context()
  try:
    pool.start()
    tff_internals.set_default_context(pool.context())
    yield pool
  finally:
    pool.stop()
    tff_internals.set_default_context(previous)


def retire_tff_default_context() -> None:
  """Drops TFF's default context while the interpreter is intact (at exit;
  `tff_internals.retire_default_context`)."""
  tff_internals.retire_default_context()
  gc.collect()


_DEFAULT_WORKER: Optional[ManagedWorker] = None


def install_managed_default_context() -> ManagedWorker:
  """Makes a managed C++ context TFF's default for this process (idempotent).

  Called by `federated_vision.runtime.install` (the binaries, the tests), so
  that a TFF computation invoked anywhere afterwards never starts TFF's
  unmanaged worker. The worker starts lazily on first use and is stopped at
  exit (or by the kernel, if this process is killed); TFF's default context
  is retired at exit (`retire_tff_default_context`).
  """
  global _DEFAULT_WORKER
  if _DEFAULT_WORKER is None:
    _DEFAULT_WORKER = ManagedWorker(auto_restart=True)
    tff_internals.set_default_context(
        create_managed_cpp_context(_DEFAULT_WORKER))
    atexit.register(retire_tff_default_context)
  return _DEFAULT_WORKER


def require_managed_context() -> None:
  """Raises `NoManagedContextError` (one line) if invoking a TFF computation
  now would start TFF's unmanaged `worker_binary` (the context
  `import tensorflow_federated` installs; `workers`' docstring says why that
  worker is unwanted). Any other context, ours or the caller's, passes."""
  if tff_internals.is_tff_unmanaged_context(tff_internals.current_context()):
    raise NoManagedContextError(
        "TFF's default execution context would start an unmanaged "
        f"worker_binary that outlives this process: {INSTALL_HINT}")
