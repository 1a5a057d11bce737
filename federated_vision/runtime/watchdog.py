"""A thread that marks lost workers lost, which cancels their gRPC calls.

TFF would retry a call to a dead worker forever; closing the worker's
channel makes the blocked call fail at once, and `tff_internals.GuardedStub`
turns that into one `WorkerLostError` line (`workers`' docstring).
"""

import threading
from typing import Sequence

WATCHDOG_INTERVAL_SEC = 1.0


class Watchdog:
  """Marks workers lost (cancelling their calls) when their probe fails.

  Args:
    workers: `workers._Worker`s (`connected`, `probe()`, `mark_lost()`).
    interval: seconds between two checks of every worker.
  """

  def __init__(self, workers: Sequence[object],
               interval: float = WATCHDOG_INTERVAL_SEC):
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
