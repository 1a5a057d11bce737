"""Test-only writers of run directories in federated_vision/experiment/runner.py's layout.

  <root>/<run>/hparams.json          flag values (top level) + resolved
  <root>/<run>/summary.json          methods, centralized, emd, refs
  <root>/<run>/<method>/metrics.csv  metrics_csv_lib.CSV_COLUMNS
"""

import csv
import os
from typing import Mapping, Optional, Sequence, Tuple

from experiments.reproduce_lib import SOURCES_HEADER
from federated_vision.experiment import config as config_lib
from federated_vision.evaluation import reporting

# metrics_csv_lib.CSV_COLUMNS (not imported: that module imports TensorFlow).
CSV_COLUMNS = ("round", "clients", "train_loss", "train_accuracy", "test_loss",
               "test_accuracy", "batch_budget", "cumulative_batch_budget",
               "round_seconds")


def write_hparams(run_dir: str, flags: Mapping[str, object], **overrides):
  """hparams.json as runner.py writes it: every config field at the top
  level (the defaults, overridden by `flags` and `overrides`)."""
  os.makedirs(run_dir, exist_ok=True)
  values = config_lib.flat(config_lib.ExperimentConfig())
  values.update({k: list(v) if isinstance(v, tuple) else v
                 for k, v in flags.items()})
  values.update(overrides)
  values["resolved"] = {"num_clients": 20}
  reporting.write_json(os.path.join(run_dir, "hparams.json"), values)


def write_metrics(run_dir: str, method: str,
                  curve: Sequence[Tuple[int, Optional[float]]],
                  batches_per_round: int = 4,
                  full_train_loss: Optional[Mapping[int, float]] = None,
                  clients: int = 10) -> str:
  """metrics.csv with one row per round 1..last; `curve` gives (round,
  test accuracy) of the evaluated rounds (others have no test accuracy);
  `full_train_loss` ({round: loss} of evaluated rounds): that column too,
  before the timing column, as `--full_train_loss` runs write it; each
  round trains `clients` clients."""
  evaluated = dict(curve)
  last = max(evaluated)
  path = os.path.join(run_dir, method, "metrics.csv")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  extra = full_train_loss is not None
  with open(path, "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(CSV_COLUMNS[:-1] + (("full_train_loss",) if extra else ())
               + CSV_COLUMNS[-1:])
    for r in range(1, last + 1):
      acc = evaluated.get(r)
      loss = [full_train_loss.get(r, "")] if extra else []
      w.writerow([r, clients, 1.0, 0.5, "" if acc is None else 0.9,
                  "" if acc is None else acc, batches_per_round,
                  r * batches_per_round] + loss + [0.1])
  return path


def write_summary(run_dir: str, methods: Mapping[str, Mapping[str, object]],
                  centralized: Optional[float] = None,
                  emd: float = 0.5, **extra) -> None:
  summary = {"methods": {m: dict(v) for m, v in methods.items()},
             "centralized": None if centralized is None else {
                 "accuracy": centralized, "epochs": 30},
             "emd": emd}
  summary.update(extra)
  # Strict JSON as the runner writes it (a NaN is null: not measured).
  reporting.write_json(os.path.join(run_dir, "summary.json"), summary)


def finished_run(root: str, run, curves: Mapping[str, Sequence[Tuple[int, float]]],
                 entries: Optional[Mapping[str, Mapping[str, object]]] = None,
                 centralized: Optional[float] = None, emd: float = 0.5,
                 batches_per_round: int = 4,
                 full_train_loss: Optional[Mapping[str, Mapping[int, float]]]
                 = None, clients: int = 10,
                 hparams: Optional[Mapping[str, object]] = None,
                 **summary_extra) -> str:
  """A finished run of a `spec.Run`: hparams.json from its flags (and
  `hparams`' entries), metrics.csv per method from `curves` (and
  `full_train_loss`'s column, per method; `clients` a round), summary.json
  whose final_accuracy is each curve's last value (updated by `entries`)."""
  run_dir = os.path.join(root, run.name)
  write_hparams(run_dir, run.flags, **(hparams or {}))
  methods = {}
  for method, curve in curves.items():
    write_metrics(run_dir, method, curve, batches_per_round,
                  (full_train_loss or {}).get(method), clients)
    methods[method] = {"final_accuracy": curve[-1][1], "rounds": curve[-1][0]}
    methods[method].update((entries or {}).get(method, {}))
  write_summary(run_dir, methods, centralized, emd, **summary_extra)
  return run_dir


def centralized_run(root: str, run, accuracy) -> str:
  """A finished centralized run (one FedAvg round + the baseline)."""
  return finished_run(root, run, {"fedavg": [(1, 0.1)]}, centralized=accuracy)


def listing_runs(lines: Sequence[str]) -> dict:
  """{"base" | run name: [items]} from `reproduce_lib.describe_runs` lines
  (after the header; continuation lines belong to the line above)."""
  runs, current = {}, None
  for line in lines[1:]:
    if line == SOURCES_HEADER:  # The settings' sources follow the runs.
      break
    if line.startswith("      "):
      runs[current] += line.split()
    elif line.startswith("  base"):
      current = "base"
      runs["base"] = line.split(":", 1)[1].split()
    else:
      head, rest = line.split(":", 1)
      current = head.split()[-1]
      runs[current] = rest.split()
  return runs


def listing_settings(items: Sequence[str]) -> dict:
  """{flag: shown value} of the `--flag=value` items of `listing_runs`."""
  return dict(i[2:].split("=", 1) for i in items
              if i.startswith("--") and "=" in i)
