"""`MetricsCsv`: the run's metrics.csv, one row per round."""

import csv
import math
import os
from typing import Dict, List, Mapping, Sequence

import numpy as np

from federated_vision.algorithms import fedavg
from federated_vision.training.errors import OutputWriteError
from federated_vision.training.errors import describe_error

METRIC_COLUMNS = ("round", "clients", "train_loss", "train_accuracy",
                  "test_loss", "test_accuracy", "batch_budget",
                  "cumulative_batch_budget", fedavg.DROPPED_NON_FINITE,
                  "non_finite")
TIMING_COLUMNS = ("round_seconds",)
CSV_COLUMNS = METRIC_COLUMNS + TIMING_COLUMNS


def format_value(value) -> str:
  """A cell as written to metrics.csv (floats to 9 significant digits)."""
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
                             f"{describe_error(e)}") from None
    return rows

  def append(self, row: Mapping[str, object]) -> None:
    size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
    try:
      with open(self.path, "a", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow(
            [format_value(row.get(c)) for c in self.columns])
        f.flush()
    except OSError as e:
      with open(self.path, "r+") as f:
        f.truncate(size)
      raise OutputWriteError(self.path, f"cannot append round {row['round']} "
                             f"to {self.path}: {describe_error(e)}") from None
