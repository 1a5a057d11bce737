"""The local workers this process has started, so that all can be stopped.

Light on purpose (no TensorFlow): the SIGTERM handler (`signals`) stops
every worker through `stop_all_workers`. `atexit` registration happens when
the first worker starts, not at import (importing changes no process-wide
state).
"""

import atexit
import threading

_LIVE_WORKERS = set()
_LIVE_LOCK = threading.Lock()
_ATEXIT_REGISTERED = False


def add(worker) -> None:
  """Records a started worker (and, the first time, stops all at exit)."""
  global _ATEXIT_REGISTERED
  with _LIVE_LOCK:
    _LIVE_WORKERS.add(worker)
    if not _ATEXIT_REGISTERED:
      atexit.register(stop_all_workers)
      _ATEXIT_REGISTERED = True


def discard(worker) -> None:
  with _LIVE_LOCK:
    _LIVE_WORKERS.discard(worker)


def live_worker_pids():
  """Process ids of the local workers this process has started and not
  stopped (e.g. to add their CPU time to this process's)."""
  with _LIVE_LOCK:
    return [w.pid for w in _LIVE_WORKERS if getattr(w, "pid", None)]


def stop_all_workers() -> None:
  """Stops every worker this process started (also run at exit)."""
  with _LIVE_LOCK:
    workers = list(_LIVE_WORKERS)
  for worker in workers:
    worker.stop()
