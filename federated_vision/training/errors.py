"""What stops a training run: `RunError` and its kinds (see `training_loop`).

Every error's `str` is one line and its `exit_code` is what a binary exits
with: 2 for a directory in use, 3 for divergence, 1 otherwise.
"""

import errno
import os
from typing import Optional, Sequence


class RunError(RuntimeError):
  """A run cannot go on. `str(error)` is one line; exit with `exit_code`."""
  exit_code = 1


class RunLockedError(RunError):
  """Another live process holds the run directory's lock."""
  exit_code = 2

  def __init__(self, directory: str, holder: str):
    super().__init__(f"{directory} is in use by another run ({holder}); wait "
                     "for it to finish or write to another directory")
    self.directory = directory


class CheckpointError(RunError):
  """A checkpoint cannot be read."""

  def __init__(self, path: str, message: str):
    super().__init__(message)
    self.path = path


class OutputWriteError(RunError):
  """A result file cannot be written (e.g. the disk is full)."""

  def __init__(self, path: str, message: str):
    super().__init__(message)
    self.path = path


class DivergenceError(RunError):
  """A round produced non-finite values and `on_divergence='stop'`.

  Attributes:
    method: the run's name.
    round_num: the round that diverged.
    reasons: what was non-finite (see `non_finite_reasons`).
    result: the `RunResult` so far (status 'diverged'), rows up to `round_num`.
  """
  exit_code = 3

  def __init__(self, method: str, round_num: int, reasons: Sequence[str],
               result: Optional["RunResult"] = None):
    super().__init__(f"[{method}] diverged at round {round_num}: "
                     f"{'; '.join(reasons)} (on_divergence='stop')")
    self.method = method
    self.round_num = round_num
    self.reasons = tuple(reasons)
    self.result = result


def describe_error(error: BaseException) -> str:
  """One line describing an I/O error (its errno text when there is one)."""
  if isinstance(error, OSError) and error.errno:
    return os.strerror(error.errno)
  text = str(error).strip().splitlines()
  line = text[0] if text else type(error).__name__
  if "No space left on device" in str(error):
    line = os.strerror(errno.ENOSPC)
  return f"{type(error).__name__}: {line[:200]}"
