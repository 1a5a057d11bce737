"""The federated training loop: rounds, evaluation, metrics, checkpoints.

Per run (one method) it writes under `output_dir`:
  metrics.csv      one row per round (timing columns last)
  checkpoints/     `tff.program.FileProgramStateManager` program states
  tensorboard/     TensorBoard scalars
A run started again with the same arguments resumes from its last checkpoint,
drops metric rows written after it, and, because client sampling, shuffling
and augmentation depend only on (seed, round, client), ends with exactly the
metrics of an uninterrupted run.
"""

import asyncio
import csv
import math
import os
import time
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import execution

execution.install_managed_default_context()  # Never TFF's unmanaged worker.

from federated_vision.data import client_data as client_data_lib
from federated_vision.evaluation import metrics as metrics_lib

METRIC_COLUMNS = ("round", "clients", "train_loss", "train_accuracy",
                  "test_loss", "test_accuracy", "batch_budget",
                  "cumulative_batch_budget")
TIMING_COLUMNS = ("round_seconds",)
CSV_COLUMNS = METRIC_COLUMNS + TIMING_COLUMNS

EvaluateFn = Callable[[tff.learning.models.ModelWeights], Mapping[str, float]]


class LoopConfig(NamedTuple):
  """Loop settings (immutable).

  Attributes:
    total_rounds: rounds to run, > 0.
    rounds_per_eval: evaluate every this many rounds (and at the last one).
    rounds_per_checkpoint: checkpoint every this many rounds (and at the end).
    output_dir: where this run's files go.
    keep_checkpoints: how many program states to keep.
  """
  total_rounds: int
  output_dir: str
  rounds_per_eval: int = 1
  rounds_per_checkpoint: int = 10
  keep_checkpoints: int = 2

  def validate(self) -> "LoopConfig":
    for name in ("total_rounds", "rounds_per_eval", "rounds_per_checkpoint",
                 "keep_checkpoints"):
      if getattr(self, name) <= 0:
        raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
    return self


class RunResult(NamedTuple):
  """What a finished run reports."""
  name: str
  rows: List[Dict[str, object]]
  final_accuracy: float
  final_loss: float
  rounds: int
  seconds: float
  resumed_from: int
  output_dir: str


def _fmt(value) -> str:
  if value is None:
    return ""
  if isinstance(value, (float, np.floating)):
    return "nan" if math.isnan(value) else f"{float(value):.9g}"
  return str(value)


class MetricsCsv:
  """Append-only metrics CSV that can be truncated back to a checkpoint."""

  def __init__(self, path: str):
    self.path = path

  def read(self) -> List[Dict[str, str]]:
    if not os.path.exists(self.path):
      return []
    with open(self.path, newline="") as f:
      return list(csv.DictReader(f))

  def truncate_after(self, round_num: int) -> List[Dict[str, str]]:
    """Keeps rows with round <= round_num; returns them."""
    rows = [r for r in self.read() if int(r["round"]) <= round_num]
    tmp = self.path + ".tmp"
    with open(tmp, "w", newline="") as f:
      writer = csv.DictWriter(f, CSV_COLUMNS, lineterminator="\n")
      writer.writeheader()
      writer.writerows(rows)
    os.replace(tmp, self.path)
    return rows

  def append(self, row: Mapping[str, object]) -> None:
    with open(self.path, "a", newline="") as f:
      csv.writer(f, lineterminator="\n").writerow(
          [_fmt(row.get(c)) for c in CSV_COLUMNS])
      f.flush()


def build_keras_evaluate_fn(keras_model_fn: Callable[[], tf.keras.Model],
                            eval_dataset: tf.data.Dataset) -> EvaluateFn:
  """Centralized evaluation of model weights on a batched {'x','y'} dataset."""
  model = keras_model_fn()
  model.compile(
      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=[tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
  eval_dataset = eval_dataset.map(lambda b: (b["x"], b["y"]))

  def evaluate(model_weights: tff.learning.models.ModelWeights):
    model_weights.assign_weights_to(model)
    loss, accuracy = model.evaluate(eval_dataset, verbose=0)
    return {"loss": float(loss), "accuracy": float(accuracy)}
  return evaluate


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


def run_federated_training(
    name: str,
    process: tff.learning.templates.LearningProcess,
    fed_data: client_data_lib.FederatedDataset,
    spec: client_data_lib.TrainingSpec,
    sampler,
    evaluate_fn: EvaluateFn,
    config: LoopConfig,
    log_fn: Optional[Callable[[str], None]] = print,
) -> RunResult:
  """Trains `process` for `config.total_rounds`, resuming if possible.

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

  Returns:
    A `RunResult`.
  """
  config.validate()
  os.makedirs(config.output_dir, exist_ok=True)
  training_process = build_training_process(process, fed_data, spec)
  state = training_process.initialize()
  manager = tff.program.FileProgramStateManager(
      os.path.join(config.output_dir, "checkpoints"), prefix="round_",
      keep_total=config.keep_checkpoints, keep_first=False)
  loaded, version = asyncio.run(manager.load_latest(state))
  if loaded is None:
    version = 0
  else:
    state = loaded
  metrics_csv = MetricsCsv(os.path.join(config.output_dir, "metrics.csv"))
  kept = metrics_csv.truncate_after(version)
  if len(kept) != version:
    raise RuntimeError(
        f"{metrics_csv.path} has {len(kept)} rows up to checkpoint round "
        f"{version}; delete {config.output_dir} to start over")
  rows: List[Dict[str, object]] = [dict(r) for r in kept]
  cumulative = int(kept[-1]["cumulative_batch_budget"]) if kept else 0
  if version and log_fn:
    log_fn(f"[{name}] resuming from the checkpoint of round {version}")

  writer = tf.summary.create_file_writer(
      os.path.join(config.output_dir, "tensorboard"))
  start = time.time()
  last_eval = {"loss": math.nan, "accuracy": math.nan}
  for round_num in range(version + 1, config.total_rounds + 1):
    t0 = time.time()
    keys = sampler.round_keys(round_num)
    sizes = [fed_data.client_sizes[k.split(client_data_lib.ROUND_KEY_SEPARATOR)[0]]
             for k in keys]
    output = training_process.next(state, keys)
    state = output.state
    train = output.metrics["client_work"]["train"]
    budget = metrics_lib.round_batch_budget(sizes, spec)
    cumulative += budget
    row = {"round": round_num, "clients": len(keys),
           "train_loss": float(train["loss"]),
           "train_accuracy": float(train["accuracy"]),
           "batch_budget": budget, "cumulative_batch_budget": cumulative}
    if round_num % config.rounds_per_eval == 0 or round_num == config.total_rounds:
      last_eval = evaluate_fn(training_process.get_model_weights(state))
      row["test_loss"] = last_eval["loss"]
      row["test_accuracy"] = last_eval["accuracy"]
    row["round_seconds"] = round(time.time() - t0, 3)
    metrics_csv.append(row)
    rows.append(row)
    with writer.as_default(step=round_num):
      for key in ("train_loss", "train_accuracy", "test_loss", "test_accuracy",
                  "cumulative_batch_budget"):
        if row.get(key) is not None:
          tf.summary.scalar(key, row[key])
    writer.flush()
    if log_fn:
      log_fn(f"[{name}] round {round_num:4d}/{config.total_rounds}  "
             f"train_loss={row['train_loss']:.4f}  "
             f"test_accuracy={_fmt(row.get('test_accuracy')) or '-':>8}  "
             f"({row['round_seconds']:.2f} s)")
    if (round_num % config.rounds_per_checkpoint == 0
        or round_num == config.total_rounds):
      asyncio.run(manager.save(state, round_num))
  writer.close()

  final = [r for r in rows if r.get("test_accuracy") not in (None, "")]
  final_accuracy = float(final[-1]["test_accuracy"]) if final else math.nan
  final_loss = float(final[-1]["test_loss"]) if final else math.nan
  return RunResult(name=name, rows=rows, final_accuracy=final_accuracy,
                   final_loss=final_loss, rounds=config.total_rounds,
                   seconds=time.time() - start, resumed_from=version,
                   output_dir=config.output_dir)
