"""`Checkpoints`: the run's program states, one per checkpointed round."""

import asyncio
import glob
import os
import shutil
from typing import Callable, List, Optional

import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.runtime import signals
from federated_vision.training.run_errors import CheckpointError
from federated_vision.training.run_errors import OutputWriteError
from federated_vision.training.run_errors import describe_error

CHECKPOINT_PREFIX = "round_"
# Where unreadable checkpoints are moved by `resume_from_last_valid`.
CORRUPT_DIR = "corrupt"


def _run(coroutine):
  """`asyncio.run(coroutine)` with SIGINT / SIGTERM / SIGHUP held back until
  it returns (`signals.deferred`: asyncio's own SIGINT handler would drop a
  Ctrl-C landing after the coroutine finished; and a checkpoint is written
  or read whole before the run stops)."""
  with signals.deferred():
    return asyncio.run(coroutine)


class Checkpoints:
  """Program states per round: atomic writes, named read errors.

  TFF's `FileProgramStateManager` writes `round_N_tempXXXX` and renames it to
  `round_N` (`program/file_utils.py`), so `round_N` is complete or absent; it
  leaves the temporary directory behind when writing fails, which this class
  removes (and any left by a killed run, at start under the run's lock).
  """

  def __init__(self, directory: str, keep: int,
               log_fn: Optional[Callable[[str], None]] = None):
    self.directory = directory
    self._log = log_fn or (lambda _: None)
    try:
      self._manager = tff.program.FileProgramStateManager(
          directory, prefix=CHECKPOINT_PREFIX, keep_total=keep,
          keep_first=False)
    except (OSError, tf.errors.OpError) as e:
      raise OutputWriteError(directory, f"cannot create the checkpoint "
                             f"directory {directory}: {describe_error(e)}") from None

  def path(self, version: int) -> str:
    return os.path.join(self.directory, f"{CHECKPOINT_PREFIX}{version}")

  def versions(self) -> List[int]:
    return _run(self._manager.get_versions()) or []

  def remove_temporaries(self, version: Optional[int] = None) -> List[str]:
    """Deletes `round_<version>_temp*` (every round's when None)."""
    pattern = self.path(version if version is not None else "*") + "_temp*"
    removed = sorted(glob.glob(pattern))
    for path in removed:
      shutil.rmtree(path, ignore_errors=True)
    return removed

  def remove_after(self, version: int) -> List[int]:
    """Deletes the checkpoints of rounds after `version`; returns those
    rounds (the loop redoes them when metrics.csv lost their rows)."""
    removed = [v for v in self.versions() if v > version]
    for v in removed:
      shutil.rmtree(self.path(v), ignore_errors=True)
    return removed

  def load_latest(self, structure, resume_from_last_valid: bool = False,
                  max_version: Optional[int] = None):
    """(state, round) of the newest readable checkpoint, or (None, 0) if none.

    Args:
      structure: the state structure (e.g. `process.initialize()`).
      resume_from_last_valid: see `LoopConfig`.
      max_version: only checkpoints of this round or earlier are read (None:
        any).

    Raises:
      CheckpointError: the newest checkpoint cannot be read (and
        `resume_from_last_valid` is False), or none of them can.
    """
    versions = [v for v in self.versions()
                if max_version is None or v <= max_version]
    unreadable = []
    for i in range(len(versions) - 1, -1, -1):
      version, path = versions[i], self.path(versions[i])
      try:
        return _run(self._manager.load(version, structure)), version
      except Exception as e:  # pylint: disable=broad-except
        cause = describe_error(e)
      previous = versions[i - 1] if i else None
      if not resume_from_last_valid:
        hint = (f"resume_from_last_valid resumes from round {previous}"
                if previous is not None else "no earlier checkpoint exists")
        raise CheckpointError(path, f"checkpoint {path} cannot be read "
                              f"({cause}); {hint}, or delete "
                              f"{self.directory} to start over")
      moved = self._set_aside(path)
      unreadable.append(path)
      self._log(f"checkpoint {path} cannot be read ({cause}); moved to "
                f"{moved}")
    if unreadable:
      raise CheckpointError(unreadable[-1], f"no checkpoint in {self.directory} "
                            f"can be read ({', '.join(unreadable)}); delete "
                            f"{self.directory} to start over")
    return None, 0

  def _set_aside(self, path: str) -> str:
    target_dir = os.path.join(self.directory, CORRUPT_DIR)
    os.makedirs(target_dir, exist_ok=True)
    target = os.path.join(target_dir, os.path.basename(path))
    n = 1
    while os.path.exists(target):
      target = os.path.join(target_dir, f"{os.path.basename(path)}.{n}")
      n += 1
    os.rename(path, target)
    return target

  def save(self, state, version: int) -> None:
    """Writes `state` as `round_<version>`; on failure nothing is left.

    Raises:
      OutputWriteError: naming the directory and the cause (e.g. no space).
    """
    try:
      _run(self._manager.save(state, version))
    except (OSError, tf.errors.OpError) as e:
      self.remove_temporaries(version)
      raise OutputWriteError(
          self.directory, f"cannot write the checkpoint of round {version} to "
          f"{self.directory}: {describe_error(e)}; no partial checkpoint was kept"
      ) from None
