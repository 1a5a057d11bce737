"""`RunLock`: one live run per output directory (an OS `flock`)."""

import fcntl
import os
import socket
from typing import Dict

from federated_vision.training.run_errors import OutputWriteError
from federated_vision.training.run_errors import RunLockedError
from federated_vision.training.run_errors import describe_error

LOCK_FILE = ".lock"

_HELD_LOCKS: Dict[str, list] = {}  # realpath -> [fd, depth]; this process.


class RunLock:
  """Exclusive `flock` on `directory/.lock`, held while the context is open.

  The kernel drops the lock when the process dies (even by SIGKILL), so it is
  never stale; the lock file itself stays. Re-entrant within one process, so
  a runner can lock an experiment directory and the loop its method's.

  Raises:
    RunLockedError: (on entry) another process holds it.
  """

  def __init__(self, directory: str):
    self.directory = directory
    self.path = os.path.join(directory, LOCK_FILE)
    self._key = None

  def __enter__(self) -> "RunLock":
    try:
      os.makedirs(self.directory, exist_ok=True)
      key = os.path.realpath(self.path)
      if key in _HELD_LOCKS:
        _HELD_LOCKS[key][1] += 1
        self._key = key
        return self
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # Not inherited.
    except OSError as e:
      raise OutputWriteError(self.path, f"cannot create the lock file "
                             f"{self.path}: {describe_error(e)}") from None
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
      os.close(fd)
      raise RunLockedError(self.directory, holder or "pid unknown") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
    _HELD_LOCKS[key] = [fd, 1]
    self._key = key
    return self

  def __exit__(self, *exc) -> None:
    entry = _HELD_LOCKS[self._key]
    entry[1] -= 1
    if entry[1] == 0:
      del _HELD_LOCKS[self._key]
      fcntl.flock(entry[0], fcntl.LOCK_UN)
      os.close(entry[0])
    self._key = None
