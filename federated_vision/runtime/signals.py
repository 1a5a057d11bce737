"""SIGTERM / SIGHUP -> SystemExit, so `finally` blocks and atexit run; and
`deferred`, which holds them and SIGINT back while a write must be whole.

Installed explicitly (`install_signal_handlers`, or
`federated_vision.runtime.install`) by the binaries and the tests, never at
import. Light on purpose (no TensorFlow).
"""

import contextlib
import os
import signal
import sys
import threading
from typing import Iterator, Optional

from federated_vision.runtime import live_workers

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
    live_workers.stop_all_workers()
    sys.exit(128 + signum)

  if not getattr(sys.unraisablehook, "redelivers_exit", False):
    sys.unraisablehook = _redeliver_dropped_exit(sys.unraisablehook)
  for sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, handler)


DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
  """Holds SIGINT, SIGTERM and SIGHUP back while the block runs, then
  delivers the first one received to the handler that was in place (a
  Ctrl-C then raises KeyboardInterrupt right after the block).

  For the checkpoint's reads and writes (`training.checkpoints`): they run
  TFF's coroutines under `asyncio.run`, whose own SIGINT handler (Python
  3.11 `asyncio.runners.Runner._on_sigint`, installed while Python's
  default one is) returns without raising when the coroutine's task is
  already done: a Ctrl-C landing between the end of the write and
  `asyncio.run`'s return was lost and the run went on to exit 0. With ours
  in place asyncio installs none, and the write is whole before the run
  stops. Outside the main thread (where handlers cannot be set) it holds
  nothing back.
  """
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  received = []
  previous = {}
  try:
    for sig in DEFERRED:
      handler = signal.getsignal(sig)
      if handler is not None:  # None: set outside Python; left alone.
        previous[sig] = signal.signal(sig, lambda s, _: received.append(s))
    yield
  finally:
    for sig, handler in previous.items():
      signal.signal(sig, handler)
    if received:
      _deliver(received[0], previous[received[0]])


def _deliver(signum: int, handler) -> None:
  """What `handler` (the one `deferred` held `signum` back from) does."""
  if callable(handler):
    handler(signum, None)  # Raises (KeyboardInterrupt, SystemExit) or not.
  elif handler == signal.SIG_DFL:
    os.kill(os.getpid(), signum)  # Its default action (e.g. terminate).
