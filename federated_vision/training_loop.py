"""The federated training loop: rounds, evaluation, metrics, checkpoints.

Per run (one method) it writes under `output_dir`:
  metrics.csv      one row per round (timing columns last)
  checkpoints/     `tff.program.FileProgramStateManager` program states
  tensorboard/     TensorBoard scalars, always the rounds of metrics.csv
  .lock            the run's OS lock (see `RunLock`)
A run started again with the same arguments resumes from its last checkpoint,
drops metric rows and TensorBoard steps written after it, and, because client
sampling, shuffling and augmentation depend only on (seed, round, client), ends
with exactly the metrics of an uninterrupted run.

Integrity: a second run on the same directory stops at once
(`RunLockedError`); a checkpoint that cannot be read or written stops the run
with its path (`CheckpointError`, `OutputWriteError`; no temporary checkpoint
is left behind); a round with non-finite values (clients dropped as
non-finite, a rejected server update, non-finite loss, model or evaluation)
is counted and logged and, by default, stops the run (`DivergenceError`).
Every such error is a `RunError`: its `str` is one line, its `exit_code` what
a binary should exit with.
"""

import asyncio
import csv
import errno
import fcntl
import glob
import math
import os
import shutil
import socket
import sys
import time
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.runtime import contexts as runtime_contexts

from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
from federated_vision.data import client_data as client_data_lib  # pylint: disable=g-import-not-at-top
from federated_vision.evaluation import keras_eval  # pylint: disable=g-import-not-at-top
from federated_vision.evaluation import metrics as metrics_lib  # pylint: disable=g-import-not-at-top

METRIC_COLUMNS = ("round", "clients", "train_loss", "train_accuracy",
                  "test_loss", "test_accuracy", "batch_budget",
                  "cumulative_batch_budget", fedavg.DROPPED_NON_FINITE,
                  "non_finite")
TIMING_COLUMNS = ("round_seconds",)
CSV_COLUMNS = METRIC_COLUMNS + TIMING_COLUMNS
ON_DIVERGENCE = ("stop", "continue")
TENSORBOARD_TAGS = ("train_loss", "train_accuracy", "test_loss",
                    "test_accuracy", "cumulative_batch_budget",
                    fedavg.DROPPED_NON_FINITE)
CHECKPOINT_PREFIX = "round_"
LOCK_FILE = ".lock"
# Where unreadable checkpoints are moved by `resume_from_last_valid`.
CORRUPT_DIR = "corrupt"

EvaluateFn = keras_eval.EvaluateFn
# Re-exported: the Keras evaluation lives in evaluation/keras_eval.py.
build_keras_evaluate_fn = keras_eval.build_keras_evaluate_fn


# --- errors ------------------------------------------------------------------

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


def _reason(error: BaseException) -> str:
  """One line describing an I/O error (its errno text when there is one)."""
  if isinstance(error, OSError) and error.errno:
    return os.strerror(error.errno)
  text = str(error).strip().splitlines()
  line = text[0] if text else type(error).__name__
  if "No space left on device" in str(error):
    line = os.strerror(errno.ENOSPC)
  return f"{type(error).__name__}: {line[:200]}"


# --- configuration and result -------------------------------------------------

class LoopConfig(NamedTuple):
  """Loop settings (immutable).

  Attributes:
    total_rounds: rounds to run, > 0.
    output_dir: where this run's files go.
    rounds_per_eval: evaluate every this many rounds (and at the last one).
    rounds_per_checkpoint: checkpoint every this many rounds (and at the end).
    keep_checkpoints: how many program states to keep (>= 2 lets
      `resume_from_last_valid` fall back one checkpoint).
    on_divergence: 'stop' (raise `DivergenceError` at the first round with
      non-finite values) or 'continue' (count and log them).
    resume_from_last_valid: if the latest checkpoint cannot be read, move it
      to `checkpoints/corrupt/` and resume from the previous readable one
      (otherwise a `CheckpointError` names it).
    round_columns: extra ((column, value), ...) written on every round's row
      (e.g. mixing's `extra_broadcast_bytes`), before the timing columns.
    eval_columns: extra keys of `evaluate_fn`'s result written as
      `test_<key>` columns on evaluated rounds (e.g. per-group accuracy).
  """
  total_rounds: int
  output_dir: str
  rounds_per_eval: int = 1
  rounds_per_checkpoint: int = 10
  keep_checkpoints: int = 2
  on_divergence: str = "stop"
  resume_from_last_valid: bool = False
  round_columns: Tuple[Tuple[str, object], ...] = ()
  eval_columns: Tuple[str, ...] = ()

  @property
  def columns(self) -> Tuple[str, ...]:
    """metrics.csv's columns: the standard ones + the extra ones, timing last."""
    return (METRIC_COLUMNS + tuple(c for c, _ in self.round_columns)
            + tuple(f"test_{k}" for k in self.eval_columns) + TIMING_COLUMNS)

  def validate(self) -> "LoopConfig":
    for name in ("total_rounds", "rounds_per_eval", "rounds_per_checkpoint",
                 "keep_checkpoints"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
          or value <= 0:
        raise ValueError(f"{name} must be an integer > 0, got {value!r}")
    if self.on_divergence not in ON_DIVERGENCE:
      raise ValueError(f"on_divergence must be one of {ON_DIVERGENCE}, got "
                       f"{self.on_divergence!r}")
    if not self.output_dir:
      raise ValueError("output_dir must be a non-empty path")
    if len(set(self.columns)) != len(self.columns):
      raise ValueError(f"round_columns / eval_columns repeat a metrics.csv "
                       f"column: {self.columns}")
    return self


class RunResult(NamedTuple):
  """What a run reports.

  Attributes:
    status: 'completed', or 'diverged' when stopped by divergence or when the
      final model or evaluation is non-finite (`on_divergence='continue'`).
    non_finite_rounds: rounds with non-finite values (`non_finite` column).
    seconds: the summed `round_seconds` of `rows` (training and evaluation,
      over every invocation; rounds redone after a resume count once).
  """
  name: str
  rows: List[Dict[str, object]]
  final_accuracy: float
  final_loss: float
  rounds: int
  seconds: float
  resumed_from: int
  output_dir: str
  status: str = "completed"
  non_finite_rounds: Tuple[int, ...] = ()


# --- lock --------------------------------------------------------------------

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
                             f"{self.path}: {_reason(e)}") from None
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


# --- checkpoints -------------------------------------------------------------

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
                             f"directory {directory}: {_reason(e)}") from None

  def path(self, version: int) -> str:
    return os.path.join(self.directory, f"{CHECKPOINT_PREFIX}{version}")

  def versions(self) -> List[int]:
    return asyncio.run(self._manager.get_versions()) or []

  def remove_temporaries(self, version: Optional[int] = None) -> List[str]:
    """Deletes `round_<version>_temp*` (every round's when None)."""
    pattern = self.path(version if version is not None else "*") + "_temp*"
    removed = sorted(glob.glob(pattern))
    for path in removed:
      shutil.rmtree(path, ignore_errors=True)
    return removed

  def load_latest(self, structure, resume_from_last_valid: bool = False):
    """(state, round) of the newest readable checkpoint, or (None, 0) if none.

    Args:
      structure: the state structure (e.g. `process.initialize()`).
      resume_from_last_valid: see `LoopConfig`.

    Raises:
      CheckpointError: the newest checkpoint cannot be read (and
        `resume_from_last_valid` is False), or none of them can.
    """
    versions = self.versions()
    unreadable = []
    for i in range(len(versions) - 1, -1, -1):
      version, path = versions[i], self.path(versions[i])
      try:
        return asyncio.run(self._manager.load(version, structure)), version
      except Exception as e:  # pylint: disable=broad-except
        cause = _reason(e)
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
      asyncio.run(self._manager.save(state, version))
    except (OSError, tf.errors.OpError) as e:
      self.remove_temporaries(version)
      raise OutputWriteError(
          self.directory, f"cannot write the checkpoint of round {version} to "
          f"{self.directory}: {_reason(e)}; no partial checkpoint was kept"
      ) from None


# --- metrics CSV and TensorBoard ----------------------------------------------

def _fmt(value) -> str:
  if value is None:
    return ""
  if isinstance(value, (float, np.floating)):
    return str(float(value)) if not math.isfinite(value) else f"{float(value):.9g}"
  return str(value)


class MetricsCsv:
  """Append-only metrics CSV that can be truncated back to a checkpoint.

  Every write is whole: a failed append is cut back to the previous size, a
  rewrite goes through a temporary file and a rename.
  """

  def __init__(self, path: str, columns: Sequence[str] = CSV_COLUMNS):
    self.path = path
    self.columns = tuple(columns)

  def read(self) -> List[Dict[str, str]]:
    if not os.path.exists(self.path):
      return []
    with open(self.path, newline="") as f:
      return list(csv.DictReader(f))

  def truncate_after(self, round_num: int) -> List[Dict[str, str]]:
    """Keeps rows with round <= round_num; returns them."""
    rows = [r for r in self.read() if int(r["round"]) <= round_num]
    tmp = self.path + ".tmp"
    try:
      with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, self.columns, lineterminator="\n",
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
      os.replace(tmp, self.path)
    except OSError as e:
      if os.path.exists(tmp):
        os.remove(tmp)
      raise OutputWriteError(self.path, f"cannot write {self.path}: "
                             f"{_reason(e)}") from None
    return rows

  def append(self, row: Mapping[str, object]) -> None:
    size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
    try:
      with open(self.path, "a", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow(
            [_fmt(row.get(c)) for c in self.columns])
        f.flush()
    except OSError as e:
      with open(self.path, "r+") as f:
        f.truncate(size)
      raise OutputWriteError(self.path, f"cannot append round {row['round']} "
                             f"to {self.path}: {_reason(e)}") from None


# Sorts before the names TF gives event files (events.out.tfevents.<time>...),
# so TensorBoard reads the kept steps before those written after a resume.
KEPT_EVENTS_FILE = "events.out.tfevents.0000000000.kept.v2"


def purge_tensorboard(log_dir: str, last_step: int) -> int:
  """Drops every TensorBoard event with step > `last_step` from `log_dir`.

  TF2's `create_file_writer` has no `purge_step`. If any event file holds a
  step beyond `last_step`, a duplicate (tag, step) or a truncated record, the
  kept summaries (step <= last_step, one per tag and step, the latest file's
  value, original wall times) are rewritten into `KEPT_EVENTS_FILE` (via a
  temporary file and a rename), then the other event files are deleted. A
  crash in between leaves duplicates that the next call removes.

  Args:
    log_dir: a TensorBoard log directory (may not exist).
    last_step: the last step to keep (0 keeps nothing).

  Returns:
    The number of summary values dropped.
  """
  files = sorted(glob.glob(os.path.join(log_dir, "*tfevents*")))
  kept: Dict[Tuple[str, int], Tuple[float, object]] = {}
  dropped, dirty = 0, False
  for path in files:
    try:
      for event in tf.compat.v1.train.summary_iterator(path):
        if not event.HasField("summary"):
          continue
        for value in event.summary.value:
          key = (value.tag, event.step)
          if event.step > last_step or key in kept:
            dropped += 1
            dirty = True
          if event.step <= last_step:
            kept[key] = (event.wall_time, value)
    except tf.errors.DataLossError:  # A record cut short by a killed run.
      dirty = True
  if not dirty:
    return 0
  target = os.path.join(log_dir, KEPT_EVENTS_FILE)
  tmp = os.path.join(log_dir, ".kept_events.tmp")
  events = sorted(((step, wall, tag, value) for (tag, step), (wall, value)
                   in kept.items()), key=lambda e: (e[0], e[1], e[2]))
  with tf.io.TFRecordWriter(tmp) as writer:
    first = events[0][1] if events else time.time()
    writer.write(tf.compat.v1.Event(
        wall_time=first, file_version="brain.Event:2").SerializeToString())
    for step, wall, _, value in events:
      event = tf.compat.v1.Event(wall_time=wall, step=step)
      event.summary.value.add().CopyFrom(value)
      writer.write(event.SerializeToString())
  os.replace(tmp, target)
  for path in files:
    if os.path.basename(path) != KEPT_EVENTS_FILE:
      os.remove(path)
  return dropped


# --- divergence --------------------------------------------------------------

def _all_finite(structure) -> bool:
  return all(np.all(np.isfinite(np.asarray(t)))
             for t in tf.nest.flatten(structure)
             if np.asarray(t).dtype.kind in "fc")


def non_finite_reasons(metrics: Mapping[str, object], model_weights,
                       evaluation: Optional[Mapping[str, float]] = None
                       ) -> List[str]:
  """What was non-finite in one round (empty when nothing was).

  Args:
    metrics: the learning process output's metrics: `client_work` holds
      `train` ({'loss', ...}) and, for processes built by
      `federated_vision.algorithms`, `clients_dropped_non_finite`; the finalizer
      of `build_apply_optimizer_finalizer` reports `update_non_finite` (1 when
      the averaged update was non-finite and not applied).
    model_weights: the global model weights after the round.
    evaluation: {'loss', 'accuracy'} if evaluated this round.

  Returns:
    One phrase per finding, in a fixed order.
  """
  reasons = []
  work = metrics.get("client_work", {})
  dropped = int(work.get(fedavg.DROPPED_NON_FINITE, 0) or 0)
  if dropped:
    reasons.append(f"{dropped} client update(s) non-finite and dropped")
  if int(metrics.get("finalizer", {}).get("update_non_finite", 0) or 0):
    reasons.append("the aggregated update was non-finite and not applied")
  loss = float(work.get("train", {}).get("loss", 0.0))
  if not math.isfinite(loss):
    reasons.append(f"training loss {loss}")
  if not _all_finite(model_weights):
    reasons.append("the model weights are non-finite")
  for key, value in (evaluation or {}).items():
    if not math.isfinite(float(value)):
      reasons.append(f"test {key} {float(value)}")
  return reasons


# --- the loop ----------------------------------------------------------------

def _wants_label_counts(process) -> bool:
  element = process.next.type_signature.parameter[1].member.element
  return (isinstance(element, tff.StructType) and client_data_lib.LABEL_COUNTS_KEY
          in tff.structure.name_list(element))


def build_training_process(
    process: tff.learning.templates.LearningProcess,
    fed_data: client_data_lib.FederatedDataset,
    spec: client_data_lib.TrainingSpec,
) -> tff.learning.templates.LearningProcess:
  """Composes `process` with in-executor dataset construction from round keys.

  A process whose client data elements have `client_data.LABEL_COUNTS_KEY`
  (FedIR with `client_label_counts=True`) gets every client's class counts
  over its whole local data (`fed_data.class_counts`) with its batches.
  """
  build = getattr(process, "build_training_process", None)
  if build is not None:  # algorithms/client_groups.GroupedMethod
    return build(fed_data, spec)
  label_counts = None
  if _wants_label_counts(process):
    label_counts = client_data_lib.label_counts_fn(
        fed_data.client_data.client_ids, fed_data.class_counts)
  dataset_fn = client_data_lib.build_training_dataset_fn(
      fed_data.client_data.serializable_dataset_fn, spec, fed_data.train_map_fn,
      label_counts=label_counts)
  dataset_computation = tff.tensorflow.computation(dataset_fn, tf.string)
  return tff.simulation.compose_dataset_computation_with_learning_process(
      dataset_computation, process)


class _Progress:
  """A tqdm bar (rounds/s, ETA) on a terminal, else one line per round."""

  def __init__(self, name: str, total: int, done: int,
               log_fn: Optional[Callable[[str], None]], bar: bool):
    self._name, self._total, self._log = name, total, log_fn
    self._bar = None
    if bar and log_fn is not None:
      import tqdm  # pylint: disable=g-import-not-at-top
      self._bar = tqdm.tqdm(
          total=total, initial=done, desc=f"[{name}]", unit=" rounds",
          file=sys.stdout, dynamic_ncols=True, leave=True,
          bar_format=("{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}"
                      ", {rate_noinv_fmt}{postfix}]"))

  def message(self, text: str) -> None:
    if self._bar is not None:
      self._bar.write(text)
    elif self._log is not None:
      self._log(text)

  def round_done(self, row: Mapping[str, object]) -> None:
    acc = _fmt(row.get("test_accuracy")) or "-"
    if self._bar is not None:
      self._bar.set_postfix_str(f"train_loss={row['train_loss']:.4f} "
                                f"test_accuracy={acc}", refresh=False)
      self._bar.update(1)
    elif self._log is not None:
      self._log(f"[{self._name}] round {row['round']:4d}/{self._total}  "
                f"train_loss={row['train_loss']:.4f}  "
                f"test_accuracy={acc:>8}  ({row['round_seconds']:.2f} s)")

  def close(self) -> None:
    if self._bar is not None:
      self._bar.close()


def _client_sizes(fed_data, keys: Sequence[str]) -> List[int]:
  sep = client_data_lib.ROUND_KEY_SEPARATOR
  return [fed_data.client_sizes[k.split(sep)[0]] for k in keys]


def _model_weights(training_process, state):
  """The global model weights, read from a composed process's state."""
  if hasattr(state, "global_model_weights"):  # compose_learning_process
    return state.global_model_weights
  return training_process.get_model_weights(state)


def _result(name, rows, version, config, status) -> RunResult:
  evaluated = [r for r in rows if r.get("test_accuracy") not in (None, "")]
  # As written to metrics.csv, so a resumed run reports identical numbers.
  final = lambda key: float(_fmt(evaluated[-1][key])) if evaluated else math.nan
  final_accuracy, final_loss = final("test_accuracy"), final("test_loss")
  non_finite = tuple(int(r["round"]) for r in rows
                     if str(r.get("non_finite", "0")) == "1")
  seconds = sum(float(r.get("round_seconds") or 0.0) for r in rows)
  return RunResult(name=name, rows=rows, final_accuracy=final_accuracy,
                   final_loss=final_loss,
                   rounds=int(rows[-1]["round"]) if rows else 0,
                   seconds=seconds, resumed_from=version,
                   output_dir=config.output_dir, status=status,
                   non_finite_rounds=non_finite)


def run_federated_training(
    name: str,
    process: tff.learning.templates.LearningProcess,
    fed_data: client_data_lib.FederatedDataset,
    spec: client_data_lib.TrainingSpec,
    sampler,
    evaluate_fn: EvaluateFn,
    config: LoopConfig,
    log_fn: Optional[Callable[[str], None]] = print,
    progress_bar: Optional[bool] = None,
) -> RunResult:
  """Trains `process` for `config.total_rounds`, resuming if possible.

  Holds `RunLock(config.output_dir)` throughout.

  Args:
    name: method name for logs and summaries.
    process: a learning process over batched {'x','y'} datasets.
    fed_data: the federated data set.
    spec: how client datasets are built each round.
    sampler: has `round_keys(round_num) -> list[str]` (see
      `federated_vision.algorithms.sampling`).
    evaluate_fn: model weights -> {'loss', 'accuracy'} on the test set.
    config: loop settings.
    log_fn: progress lines go here (None for silence).
    progress_bar: a tqdm bar instead of one line per round; None = when
      `log_fn` is `print` and stdout is a terminal.

  Returns:
    A `RunResult`.

  Raises:
    RunLockedError, CheckpointError, OutputWriteError: see the module doc.
    DivergenceError: a round had non-finite values and
      `config.on_divergence == 'stop'`; its `result` holds the rows so far.
  """
  config.validate()
  runtime_contexts.require_managed_context()  # Never TFF's unmanaged worker.
  with RunLock(config.output_dir):
    return _run_locked(name, process, fed_data, spec, sampler, evaluate_fn,
                       config, log_fn, progress_bar)


def _run_locked(name, process, fed_data, spec, sampler, evaluate_fn, config,
                log_fn, progress_bar) -> RunResult:
  """`run_federated_training`'s body, under the run's lock."""
  log = log_fn or (lambda _: None)
  training_process = build_training_process(process, fed_data, spec)
  state = training_process.initialize()
  checkpoints = Checkpoints(os.path.join(config.output_dir, "checkpoints"),
                            config.keep_checkpoints, log)
  for path in checkpoints.remove_temporaries():
    log(f"[{name}] removed {path}, an unfinished checkpoint")
  loaded, version = checkpoints.load_latest(state,
                                            config.resume_from_last_valid)
  if loaded is not None:
    state = loaded
  metrics_csv = MetricsCsv(os.path.join(config.output_dir, "metrics.csv"),
                           config.columns)
  written = len(metrics_csv.read())
  kept = metrics_csv.truncate_after(version)
  if written > len(kept):
    log(f"[{name}] dropped {written - len(kept)} row(s) of {metrics_csv.path} "
        f"after the last checkpoint (round {version})")
  if [int(r["round"]) for r in kept] != list(range(1, version + 1)):
    raise RunError(f"{metrics_csv.path} does not hold rounds 1..{version} in "
                   f"order to match the checkpoint of round {version}; delete "
                   f"{config.output_dir} to start over")
  rows: List[Dict[str, object]] = [dict(r) for r in kept]
  cumulative = int(kept[-1]["cumulative_batch_budget"]) if kept else 0
  tb_dir = os.path.join(config.output_dir, "tensorboard")
  purged = purge_tensorboard(tb_dir, version)
  if version:
    log(f"[{name}] resuming from the checkpoint of round {version}"
        + (f" (dropped {purged} TensorBoard values after it)" if purged else ""))
  if progress_bar is None:
    progress_bar = log_fn is print and sys.stdout.isatty()
  progress = _Progress(name, config.total_rounds, version, log_fn,
                       progress_bar)
  writer = tf.summary.create_file_writer(tb_dir)
  try:
    for round_num in range(version + 1, config.total_rounds + 1):
      t0 = time.time()
      keys = sampler.round_keys(round_num)
      output = training_process.next(state, keys)
      state = output.state
      work = output.metrics["client_work"]
      budget = metrics_lib.round_batch_budget(_client_sizes(fed_data, keys),
                                              spec)
      cumulative += budget
      row = {"round": round_num, "clients": len(keys),
             "train_loss": float(work["train"]["loss"]),
             "train_accuracy": float(work["train"]["accuracy"]),
             "batch_budget": budget, "cumulative_batch_budget": cumulative,
             fedavg.DROPPED_NON_FINITE: work.get(fedavg.DROPPED_NON_FINITE),
             **dict(config.round_columns)}
      evaluation = None
      if (round_num % config.rounds_per_eval == 0
          or round_num == config.total_rounds):
        evaluation = evaluate_fn(training_process.get_model_weights(state))
        row["test_loss"] = evaluation["loss"]
        row["test_accuracy"] = evaluation["accuracy"]
        row.update({f"test_{k}": evaluation[k] for k in config.eval_columns})
      reasons = non_finite_reasons(
          output.metrics, _model_weights(training_process, state), evaluation)
      row["non_finite"] = int(bool(reasons))
      row["round_seconds"] = round(time.time() - t0, 3)
      metrics_csv.append(row)
      rows.append(row)
      _write_scalars(writer, row, tb_dir)
      progress.round_done(row)
      if reasons:
        if config.on_divergence == "stop":
          error = DivergenceError(name, round_num, reasons)
          error.result = _result(name, rows, version, config, "diverged")
          raise error
        progress.message(f"[{name}] round {round_num}: {'; '.join(reasons)} "
                         "(on_divergence='continue')")
      if (round_num % config.rounds_per_checkpoint == 0
          or round_num == config.total_rounds):
        checkpoints.save(state, round_num)
  finally:
    progress.close()
    writer.close()

  last = rows[-1] if rows else {}
  finite_end = (_all_finite(_model_weights(training_process, state))
                and all(math.isfinite(float(last.get(k) or 0.0))
                        for k in ("test_loss", "test_accuracy")))
  return _result(name, rows, version, config,
                 "completed" if finite_end else "diverged")


def _write_scalars(writer, row: Mapping[str, object], tb_dir: str) -> None:
  try:
    with writer.as_default(step=int(row["round"])):
      for key in TENSORBOARD_TAGS:
        if row.get(key) not in (None, ""):
          tf.summary.scalar(key, float(row[key]))
    writer.flush()
  except (OSError, tf.errors.OpError) as e:
    raise OutputWriteError(tb_dir, f"cannot write TensorBoard events to "
                           f"{tb_dir}: {_reason(e)}") from None
