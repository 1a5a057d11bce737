"""Where a run resumes: its files read and checked first, then acted on.

`read` reads what an earlier invocation left in a run's directory -- its
metrics.csv (`MetricsCsv.read_checked`), the newest checkpoint whose rounds
the file holds whole, the per-client states as of that checkpoint
(`ClientStateStore.check`) -- and changes none of it, so a damaged file
stops the run (one line, `RunError`) before anything is written; a runner
reads every method's run this way before it writes anything. `prepare` then
acts on it: unfinished writes removed, checkpoints and client states after
the resumed round removed, metrics.csv cut back to that round.
"""

import os
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

from federated_vision.training import client_states as client_states_lib
from federated_vision.training import run_files
from federated_vision.training.checkpoints import Checkpoints
from federated_vision.training.metrics_csv import MetricsCsv


class ResumePoint(NamedTuple):
  """What a run resumes from, read and checked by `read`.

  Attributes:
    output_dir: the run's directory.
    training_process: the process `read` was given.
    state: the loaded checkpoint's state (the initial state when none).
    version: the loaded checkpoint's round (0: none).
    checkpoints: the run's `Checkpoints`.
    metrics_csv: the run's `MetricsCsv`.
    intact: its rows as read (`run_files.MetricsFile`: intact rows, and
      what a damaged end lost).
    client_states: the process's `ClientStateStore`, checked at `version`
      (None without one).
  """
  output_dir: str
  training_process: object
  state: object
  version: int
  checkpoints: Checkpoints
  metrics_csv: MetricsCsv
  intact: run_files.MetricsFile
  client_states: Optional[client_states_lib.ClientStateStore]


def read(training_process, output_dir: str, columns: Sequence[str],
         keep_checkpoints: int, resume_from_last_valid: bool,
         log_fn: Optional[Callable[[str], None]] = None) -> ResumePoint:
  """Reads and checks what the run in `output_dir` resumes from; changes
  none of its files (it creates a new run's checkpoint directory, and
  `resume_from_last_valid` moves an unreadable checkpoint aside).

  Args:
    training_process: the run's process (`initialize()` gives the state's
      structure; a `client_states` attribute, its per-client state).
    output_dir: the run's directory.
    columns: metrics.csv's columns.
    keep_checkpoints: program states kept (`Checkpoints`).
    resume_from_last_valid: see `training_loop.LoopConfig`.
    log_fn: where the checkpoint set aside is said.

  Raises:
    CheckpointError: the checkpoint or a client state cannot be read.
    RunFileError: metrics.csv is damaged beyond a damaged end.
  """
  state = training_process.initialize()
  checkpoints = Checkpoints(os.path.join(output_dir, "checkpoints"),
                            keep_checkpoints, log_fn)
  metrics_csv = MetricsCsv(os.path.join(output_dir, "metrics.csv"), columns)
  intact = metrics_csv.read_checked()  # Checked; a damaged end dropped.
  # Resume from a checkpoint whose rounds metrics.csv holds whole; the
  # rounds after it (their rows lost) are redone, their checkpoints removed.
  loaded, version = checkpoints.load_latest(
      state, resume_from_last_valid, max_version=len(intact.rows))
  # Per-client state (e.g. SCAFFOLD's c_k): as of the loaded checkpoint.
  client_states = getattr(training_process, "client_states", None)
  if client_states is not None:
    client_states.check(os.path.join(output_dir, client_states_lib.DIRECTORY),
                        version)
  return ResumePoint(output_dir, training_process,
                     state if loaded is None else loaded, version,
                     checkpoints, metrics_csv, intact, client_states)


def prepare(point: ResumePoint, name: str,
            log: Callable[[str], None]) -> List[Dict[str, object]]:
  """Acts on `point`: removes unfinished checkpoints, the checkpoints and
  client states after its round (written by a run killed before its next
  checkpoint, or whose metrics rows were lost) and metrics.csv's rows after
  it, saying each; returns the rows kept.

  Raises:
    OutputWriteError: a file cannot be rewritten or removed.
  """
  for path in point.checkpoints.remove_temporaries():
    log(f"[{name}] removed {path}, an unfinished checkpoint")
  if point.intact.dropped:
    log(f"[{name}] {point.intact.dropped}")
  rows, version = point.intact.rows, point.version
  redone = point.checkpoints.remove_after(version)
  if redone:
    log(f"[{name}] {point.metrics_csv.path} holds rounds 1..{len(rows)} "
        f"only: removed the checkpoint(s) of round(s) "
        f"{', '.join(map(str, redone))}, redoing round {version + 1} on")
  if point.client_states is not None:
    point.client_states.open(os.path.join(point.output_dir,
                                          client_states_lib.DIRECTORY),
                             version, log)
  kept = point.metrics_csv.truncate_after(version, rows)
  if len(rows) > len(kept):
    log(f"[{name}] dropped {len(rows) - len(kept)} row(s) of "
        f"{point.metrics_csv.path} after the last checkpoint (round "
        f"{version})")
  return kept
