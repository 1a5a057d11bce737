"""`MetricsCsv`: the run's metrics.csv, one row per round."""

import csv
import io
import os
from typing import Dict, List, Mapping, Optional, Sequence

from federated_vision.training import run_files
from federated_vision.training.run_errors import OutputWriteError
from federated_vision.training.run_errors import describe_error

METRIC_COLUMNS = ("round", "clients", "train_loss", "train_accuracy",
                  "test_loss", "test_accuracy", "batch_budget",
                  "cumulative_batch_budget", run_files.DROPPED_NON_FINITE,
                  "non_finite")
TIMING_COLUMNS = ("round_seconds",)
FULL_TRAIN_LOSS = run_files.FULL_TRAIN_LOSS  # Re-exported.
CSV_COLUMNS = METRIC_COLUMNS + TIMING_COLUMNS
# Re-exported: the cell format lives with the reader (run_files).
format_value = run_files.format_value


class MetricsCsv:
  """Append-only metrics CSV that can be truncated back to a checkpoint.

  Every write is whole: a failed append is cut back to the previous size, a
  rewrite goes through a temporary file and a rename. Read back through
  `run_files.read_metrics_csv` (checked; a damaged end dropped).
  """

  def __init__(self, path: str, columns: Sequence[str] = CSV_COLUMNS,
               remedy: Optional[str] = None):
    self.path = path
    self.columns = tuple(columns)
    self.remedy = remedy or (f"delete {os.path.dirname(path) or '.'} to start "
                             "over")

  def read_checked(self) -> run_files.MetricsFile:
    """The intact rows, typed, and what was dropped from a damaged end.

    Raises:
      RunFileError: see `run_files.read_metrics_csv`.
    """
    return run_files.read_metrics_csv(self.path, self.remedy, self.columns)

  def read(self) -> List[Dict[str, object]]:
    return self.read_checked().rows

  def truncate_after(self, round_num: int,
                     rows: Optional[Sequence[Mapping[str, object]]] = None
                     ) -> List[Dict[str, object]]:
    """Rewrites the file with the rows of round <= round_num (of `rows`,
    default: `read()`'s); returns them."""
    rows = [r for r in (self.read() if rows is None else rows)
            if int(r["round"]) <= round_num]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(self.columns)
    writer.writerows([format_value(r.get(c)) for c in self.columns]
                     for r in rows)
    run_files.write_text(self.path, out.getvalue())
    return rows

  def append(self, row: Mapping[str, object]) -> Dict[str, object]:
    """Appends `row`; returns it as the file records it (`run_files.recorded`),
    the values every later number is computed from."""
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
    return run_files.recorded(row, self.columns)
