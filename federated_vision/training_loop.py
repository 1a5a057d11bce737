"""The federated training loop: rounds, evaluation, metrics, checkpoints.

Per run (one method) it writes under `output_dir`:
  metrics.csv      one row per round (timing columns last)
  checkpoints/     `tff.program.FileProgramStateManager` program states
  client_states/   per-client state of a stateful method (SCAFFOLD's c_k),
                   versioned by round (`training.client_states`)
  tensorboard/     TensorBoard scalars, always the rounds of metrics.csv
  .lock            the run's OS lock (see `RunLock`)
A run started again with the same arguments resumes from its last checkpoint,
drops metric rows and TensorBoard steps written after it, and, because client
sampling, shuffling and augmentation depend only on (seed, round, client), ends
with exactly the metrics of an uninterrupted run.

Integrity: a second run on the same directory stops at once
(`RunLockedError`); a checkpoint that cannot be read or written stops the run
with its path (`CheckpointError`, `OutputWriteError`; no temporary checkpoint
is left behind); metrics.csv is read back checked (`training.run_files`): a
damaged end (a row cut short by a crash) is dropped and its rounds redone
from the newest checkpoint before it, other damage stops the run naming the
line (`RunFileError`); every number of the result comes from the rows as
recorded, so a rerun reports exactly what the first run did; a round with non-finite values (clients dropped as
non-finite, a rejected server update, non-finite loss, model or evaluation)
is counted and logged and, by default, stops the run (`DivergenceError`).
Every such error is a `RunError`: its `str` is one line, its `exit_code` what
a binary should exit with.

This module holds the loop, its configuration and its result; each other job
is a module of `federated_vision.training` (errors, run lock, checkpoints,
metrics CSV, TensorBoard, divergence checks, progress, where a run resumes),
each named here as its module's. A run's files are read and checked
before any of them is changed (`open_run`, `training.resume`).
"""

import math
import os
import sys
import time
from typing import (Callable, Dict, List, Mapping, NamedTuple, Optional,
                    Sequence, Tuple)

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import round_keys
from federated_vision.evaluation import keras_eval
from federated_vision.evaluation import metrics as metrics_lib
from federated_vision.learning import schedule
from federated_vision.runtime import contexts as runtime_contexts
from federated_vision.runtime import tff_internals
from federated_vision.training import divergence
from federated_vision.training import run_errors as errors
from federated_vision.training import metrics_csv as metrics_csv_lib
from federated_vision.training import progress as progress_lib
from federated_vision.training import resume
from federated_vision.training import run_files
from federated_vision.training import run_lock
from federated_vision.training import tensorboard

ON_DIVERGENCE = ("stop", "continue")


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
    round_columns: extra ((column, number), ...) written on every round's row
      (e.g. mixing's `extra_broadcast_bytes`), before the timing columns.
    eval_columns: extra keys of `evaluate_fn`'s result written as
      `test_<key>` columns on evaluated rounds (e.g. per-group accuracy).
    client_schedule, server_schedule: (eta_0, gamma) of the clients' and
      the server optimizer's learning rates, round t's eta_0 gamma^(t-1),
      set in the state before the round (`learning.schedule`) and written
      as the columns `client_learning_rate` / `server_learning_rate`; None:
      the rates the process was built with, every round.
    full_train_loss: `evaluate_fn`'s result also holds `FULL_TRAIN_LOSS`,
      the loss on the pooled training data
      (`keras_eval.with_full_train_loss`), written as that column on
      evaluated rounds (McMahan et al. 2017 Figure 6).
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
  full_train_loss: bool = False
  client_schedule: Optional[Tuple[float, float]] = None
  server_schedule: Optional[Tuple[float, float]] = None

  @property
  def schedule_columns(self) -> Tuple[str, ...]:
    return ((("client_learning_rate",) if self.client_schedule else ())
            + (("server_learning_rate",) if self.server_schedule else ()))

  @property
  def columns(self) -> Tuple[str, ...]:
    """metrics.csv's columns: the standard ones + the extra ones, timing last."""
    return self.columns_with(())

  def columns_with(self, algorithm_metrics: Sequence[str]) -> Tuple[str, ...]:
    """`columns` with an algorithm's own metrics before the timing ones."""
    csv = metrics_csv_lib
    return (csv.METRIC_COLUMNS + tuple(c for c, _ in self.round_columns)
            + tuple(f"test_{k}" for k in self.eval_columns)
            + ((csv.FULL_TRAIN_LOSS,) if self.full_train_loss else ())
            + self.schedule_columns + tuple(algorithm_metrics)
            + csv.TIMING_COLUMNS)

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
    if any(isinstance(v, bool) or not isinstance(v, (int, float, np.number))
           for _, v in self.round_columns):  # metrics.csv holds numbers.
      raise ValueError(f"round_columns values must be numbers, got "
                       f"{self.round_columns}")
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
  over its whole local data (`fed_data.class_counts`) with its batches. An
  object with `build_training_process(fed_data, spec)` builds its own; the
  process it returns may carry `client_states` (`training.client_states`),
  which the loop opens at the resumed round and commits at checkpoints.
  """
  build = getattr(process, "build_training_process", None)
  if build is not None:  # algorithms: client_groups.GroupedMethod, scaffold.
    return _lean_compile_if_frozen(build(fed_data, spec))
  label_counts = None
  if _wants_label_counts(process):
    label_counts = client_data_lib.label_counts_fn(
        fed_data.client_data.client_ids, fed_data.class_counts)
  dataset_fn = client_data_lib.build_training_dataset_fn(
      fed_data.client_data.serializable_dataset_fn, spec, fed_data.train_map_fn,
      label_counts=label_counts)
  dataset_computation = tff.tensorflow.computation(dataset_fn, tf.string)
  return _lean_compile_if_frozen(
      tff.simulation.compose_dataset_computation_with_learning_process(
          dataset_computation, process))


def _lean_compile_if_frozen(built):
  """`built`, its round computation registered to compile without Grappler's
  constant folding if its model has frozen (non-trainable) weights.

  Why: Hsu et al. 2020, §6.2 (b) trains "only the last two layers while
  freezing the network backbone" (`--trainable_last_layers`); on that
  client graph TFF's constant folding takes ~190 CPU-s a method (the whole
  static pass without it, ~6), and the worker computes the same numbers
  without it (`runtime.tff_internals.skip_constant_folding`). Models that
  train every weight compile as TFF compiles them.
  """
  learning = getattr(built, "process", built)  # Grouped / SCAFFOLD wrappers.
  if isinstance(learning, tff.learning.templates.LearningProcess):
    weights = learning.get_model_weights.type_signature.result
    if len(weights.non_trainable) > 0:
      tff_internals.skip_constant_folding(learning.next)
  return built


def _client_sizes(fed_data, keys: Sequence[str]) -> List[int]:
  sep = round_keys.ROUND_KEY_SEPARATOR
  return [fed_data.client_sizes[k.split(sep)[0]] for k in keys]


def _model_weights(training_process, state):
  """The global model weights, read from a composed process's state."""
  if hasattr(state, "global_model_weights"):  # compose_learning_process
    return state.global_model_weights
  return training_process.get_model_weights(state)


def _result(name, rows, version, config, status) -> RunResult:
  evaluated = [r for r in rows if r.get("test_accuracy") not in (None, "")]
  # As written to metrics.csv, so a resumed run reports identical numbers.
  final = lambda key: (float(metrics_csv_lib.format_value(evaluated[-1][key]))
                       if evaluated else math.nan)
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


def _full_train_loss(evaluation: Mapping[str, float]) -> float:
  """The training-set loss of `evaluate_fn`'s result (ValueError naming
  what builds it when absent)."""
  if metrics_csv_lib.FULL_TRAIN_LOSS not in evaluation:
    raise ValueError(
        f"LoopConfig.full_train_loss: evaluate_fn returned no "
        f"{metrics_csv_lib.FULL_TRAIN_LOSS!r} (build it with "
        "keras_eval.with_full_train_loss)")
  return evaluation[metrics_csv_lib.FULL_TRAIN_LOSS]


OpenedRun = resume.ResumePoint


def open_run(process, fed_data, spec, config: LoopConfig,
             log_fn: Optional[Callable[[str], None]] = print) -> OpenedRun:
  """Builds the training process and reads what the run in
  `config.output_dir` resumes from, checked, changing none of its files
  (`training.resume.read`); `run_federated_training(..., opened=...)` then
  resumes from it. A runner opens every method's run before it writes
  anything, so a rerun that stops on a damaged file leaves the finished run
  as it was.

  Raises:
    RunLockedError, CheckpointError, RunFileError: see the module doc.
  """
  config.validate()
  runtime_contexts.require_managed_context()  # Never TFF's unmanaged worker.
  with run_lock.RunLock(config.output_dir):
    return _open(process, fed_data, spec, config, log_fn)


def algorithm_metrics(training_process) -> Tuple[str, ...]:
  """The algorithm's own metrics (`metrics['algorithm']` of its rounds, a
  `stateful.TrainingProcess`'s `metric_names`): metrics.csv columns and
  TensorBoard scalars of its run."""
  return tuple(getattr(training_process, "metric_names", ()))


def _open(process, fed_data, spec, config, log_fn) -> OpenedRun:
  training_process = build_training_process(process, fed_data, spec)
  columns = config.columns_with(algorithm_metrics(training_process))
  if len(set(columns)) != len(columns):
    raise ValueError(f"the algorithm's metrics repeat a metrics.csv column: "
                     f"{columns}")
  return resume.read(training_process, config.output_dir, columns,
                     config.keep_checkpoints, config.resume_from_last_valid,
                     log_fn)


def run_federated_training(
    name: str,
    process: tff.learning.templates.LearningProcess,
    fed_data: client_data_lib.FederatedDataset,
    spec: client_data_lib.TrainingSpec,
    sampler,
    evaluate_fn: keras_eval.EvaluateFn,
    config: LoopConfig,
    log_fn: Optional[Callable[[str], None]] = print,
    progress_bar: Optional[bool] = None,
    opened: Optional[OpenedRun] = None,
) -> RunResult:
  """Trains `process` for `config.total_rounds`, resuming if possible.

  Holds `RunLock(config.output_dir)` throughout.

  Args:
    name: method name for logs and summaries.
    process: a learning process over batched {'x','y'} datasets.
    fed_data: the federated data set.
    spec: how client datasets are built each round.
    sampler: has `round_keys(round_num) -> list[str]` (see
      `federated_vision.learning.sampling`).
    evaluate_fn: model weights -> {'loss', 'accuracy'} on the test set.
    config: loop settings.
    log_fn: progress lines go here (None for silence).
    progress_bar: a tqdm bar instead of one line per round; None = when
      `log_fn` is `print` and stdout is a terminal.
    opened: `open_run(process, fed_data, spec, config)`'s result, when the
      caller read the run's files first (None: read here).

  Returns:
    A `RunResult`.

  Raises:
    RunLockedError, CheckpointError, OutputWriteError: see the module doc.
    DivergenceError: a round had non-finite values and
      `config.on_divergence == 'stop'`; its `result` holds the rows so far.
    ValueError: `opened` is another directory's.
  """
  config.validate()
  runtime_contexts.require_managed_context()  # Never TFF's unmanaged worker.
  if opened is not None and opened.output_dir != config.output_dir:
    raise ValueError(f"opened is the run of {opened.output_dir}, not of "
                     f"config.output_dir {config.output_dir}")
  with run_lock.RunLock(config.output_dir):
    return _run_locked(name, process, fed_data, spec, sampler, evaluate_fn,
                       config, log_fn, progress_bar, opened)


def _run_locked(name, process, fed_data, spec, sampler, evaluate_fn, config,
                log_fn, progress_bar, opened) -> RunResult:
  """`run_federated_training`'s body, under the run's lock."""
  log = log_fn or (lambda _: None)
  if opened is None:
    opened = _open(process, fed_data, spec, config, log)
  training_process, state = opened.training_process, opened.state
  version, checkpoints = opened.version, opened.checkpoints
  client_states = opened.client_states
  kept = resume.prepare(opened, name, log)  # What `open_run` read, acted on.
  metrics_csv = opened.metrics_csv
  rows: List[Dict[str, object]] = list(kept)
  cumulative = int(kept[-1]["cumulative_batch_budget"] or 0) if kept else 0
  tb_dir = os.path.join(config.output_dir, "tensorboard")
  purged = tensorboard.purge_tensorboard(tb_dir, version)
  if version:
    log(f"[{name}] resuming from the checkpoint of round {version}"
        + (f" (dropped {purged} TensorBoard values after it)" if purged else ""))
  if progress_bar is None:
    progress_bar = log_fn is print and sys.stdout.isatty()
  progress = progress_lib.Progress(name, config.total_rounds, version, log_fn,
                       progress_bar)
  writer = tf.summary.create_file_writer(tb_dir)
  own = algorithm_metrics(training_process)
  rates = {"client": config.client_schedule, "server": config.server_schedule}
  try:
    for round_num in range(version + 1, config.total_rounds + 1):
      t0 = time.time()
      keys = sampler.round_keys(round_num)
      if config.schedule_columns:  # This round's rates, then as trained.
        state = schedule.with_learning_rates(state, **{
            k: schedule.Schedule(*s).at(round_num) if s else None
            for k, s in rates.items()})
        scheduled = dict(zip(("client_learning_rate", "server_learning_rate"),
                             schedule.learning_rates(state)))
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
             run_files.DROPPED_NON_FINITE: work.get(run_files.DROPPED_NON_FINITE),
             **dict(config.round_columns)}
      row.update({k: float(output.metrics["algorithm"][k]) for k in own})
      row.update({k: scheduled[k] for k in config.schedule_columns})
      evaluation = None
      if (round_num % config.rounds_per_eval == 0
          or round_num == config.total_rounds):
        evaluation = evaluate_fn(training_process.get_model_weights(state))
        row["test_loss"] = evaluation["loss"]
        row["test_accuracy"] = evaluation["accuracy"]
        row.update({f"test_{k}": evaluation[k] for k in config.eval_columns})
        if config.full_train_loss:
          row[metrics_csv_lib.FULL_TRAIN_LOSS] = _full_train_loss(evaluation)
      reasons = divergence.non_finite_reasons(
          output.metrics, _model_weights(training_process, state), evaluation)
      row["non_finite"] = int(bool(reasons))
      row["round_seconds"] = round(time.time() - t0, 3)
      rows.append(metrics_csv.append(row))  # As recorded: what a rerun reads.
      tensorboard.write_scalars(writer, row, tb_dir,
                                config.schedule_columns + own)
      progress.round_done(row)
      if reasons:
        if config.on_divergence == "stop":
          error = errors.DivergenceError(name, round_num, reasons)
          error.result = _result(name, rows, version, config, "diverged")
          raise error
        progress.message(f"[{name}] round {round_num}: {'; '.join(reasons)} "
                         "(on_divergence='continue')")
      if (round_num % config.rounds_per_checkpoint == 0
          or round_num == config.total_rounds):
        checkpoints.save(state, round_num)
        if client_states is not None:  # Only what a kept checkpoint reads.
          client_states.commit(checkpoints.versions())
  finally:
    progress.close()
    writer.close()

  last = rows[-1] if rows else {}
  finite_end = (divergence.all_finite(_model_weights(training_process, state))
                and all(math.isfinite(float(last.get(k) or 0.0))
                        for k in ("test_loss", "test_accuracy")))
  return _result(name, rows, version, config,
                 "completed" if finite_end else "diverged")
