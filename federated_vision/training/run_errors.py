"""What stops a training run: `RunError` and its kinds (see `training_loop`).

Every error's `str` is one line and its `exit_code` is what a binary exits
with: 2 for a directory in use, 3 for divergence, 1 otherwise (an unreadable
checkpoint, a damaged run file, a write that failed).

TensorFlow-free: the binaries that never import it (`report_main`) raise and
catch these too.
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


class RunFileError(RunError):
  """A file a run wrote earlier (and reads back) is damaged or missing.

  Attributes:
    path: the file.
    problem: what is wrong with it.
  """

  def __init__(self, path: str, problem: str, remedy: str):
    super().__init__(f"{path}: {problem}; {remedy}")
    self.path = path
    self.problem = problem


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


class AllDivergedError(DivergenceError):
  """Every method of a run diverged under `on_divergence='continue'` (each
  ran to its last round; summary.json marks them): exit 3 like a stopped
  divergence, so a script never takes such a run for a result."""

  def __init__(self, methods: Sequence[str]):
    RunError.__init__(  # pylint: disable=non-parent-init-called
        self, f"every method diverged ({', '.join(methods)}; "
        "on_divergence='continue' ran them to the end): summary.json marks "
        "them 'diverged' and gives no relative accuracy")
    self.method = ",".join(methods)
    self.round_num = None
    self.reasons = ()
    self.result = None


def describe_error(error: BaseException) -> str:
  """One line describing an I/O error (its errno text when there is one)."""
  if isinstance(error, OSError) and error.errno:
    return os.strerror(error.errno)
  text = str(error).strip().splitlines()
  line = text[0] if text else type(error).__name__
  if "No space left on device" in str(error):
    line = os.strerror(errno.ENOSPC)
  return f"{type(error).__name__}: {line[:200]}"
