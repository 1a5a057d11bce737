"""A run's own files, read back like user input and written atomically.

A run reads back what an earlier invocation wrote (metrics.csv to resume,
centralized.json to reuse the baseline, experiment.json to know which
experiment the directory holds) and `report_main`, sweeps and reproduction
reports read summary.json, hparams.json and metrics.csv. Each format has one
reader here, which checks the file as it would check user input (ours: the
first rule of the package, a silently wrong number is worse than a crash):

  metrics.csv   `read_metrics_csv`: the header, then every row (field count,
                integer and number cells, rounds 1, 2, 3, ... in order, the
                cumulative batch budget the running sum of the budgets). A
                damaged end -- the last row cut short (no end of line) by a
                crash or a full disk, or lines after the last intact row
                that are not rows -- is what an interrupted append leaves: it
                is dropped and said so (`MetricsFile.dropped`); the loop
                redoes those rounds. Damage followed by intact rows is not:
                one `RunFileError` naming the file and the line.
  JSON records  `read_json`: strict JSON (no NaN / Infinity), an object and,
                if it is sealed, matching its checksum: `seal` adds the
                sha256 (`CHECKSUM_KEY`) of the rest of the object (compact,
                keys sorted), so an edited or half-written record is
                noticed instead of trusted. Each caller then checks the
                fields it uses (`require`).

Every output is written through `atomic_path` (a temporary file beside it,
renamed over it once complete; removed on any failure), so a file is whole
or absent: a full disk (or any `OSError`, or TensorFlow's `OpError` of a
TensorFlow writer) becomes one `OutputWriteError` line naming the file.

TensorFlow-free (report_main reads run directories without it).
"""

import contextlib
import csv
import glob
import hashlib
import json
import math
import os
import re
import sys
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence

import numpy as np

from federated_vision.training.run_errors import OutputWriteError
from federated_vision.training.run_errors import RunFileError
from federated_vision.training.run_errors import describe_error

CHECKSUM_KEY = "sha256"
# The server model's loss on the pooled training data, on evaluated rounds
# of a run that asks for it (`--full_train_loss`; McMahan et al. 2017
# Figure 6): `keras_eval.with_full_train_loss` computes it, the loop writes
# it (`LoopConfig.full_train_loss`), figures read it.
FULL_TRAIN_LOSS = "full_train_loss"
# Clients dropped as non-finite in a round (update zeroed, weight 0).
DROPPED_NON_FINITE = "clients_dropped_non_finite"
# metrics.csv columns holding integers; "extra_broadcast_bytes": mixing runs.
INT_COLUMNS = frozenset(("round", "clients", "batch_budget",
                         "cumulative_batch_budget",
                         "clients_dropped_non_finite", "non_finite",
                         "extra_broadcast_bytes"))
FLOAT_COLUMNS = frozenset(("train_loss", "train_accuracy", "test_loss",
                           "test_accuracy", "round_seconds", FULL_TRAIN_LOSS))
_INT = re.compile(r"-?[0-9]+\Z")
_NUMBER = re.compile(r"(-?([0-9]+\.?[0-9]*|\.[0-9]+)(e[-+]?[0-9]+)?|nan|-?inf)\Z")


# --- writing -------------------------------------------------------------------

def is_write_error(error: BaseException) -> bool:
  """An `OSError`, or a TensorFlow `OpError` (TensorFlow's writers raise
  `ResourceExhaustedError` on a full disk) when TensorFlow is loaded."""
  if isinstance(error, OSError):
    return True
  tf = sys.modules.get("tensorflow")
  errors = getattr(tf, "errors", None)
  return errors is not None and isinstance(error, errors.OpError)


def write_failed(path: str, error: BaseException,
                 what: Optional[str] = None) -> OutputWriteError:
  """The one line of a failed write: `cannot write <what>: <cause>; no
  partial file was kept` (as the checkpoint writer says it)."""
  return OutputWriteError(path, f"cannot write {what or path}: "
                          f"{describe_error(error)}; no partial file was kept")


def _remove(path: str) -> None:
  try:
    os.remove(path)
  except OSError:
    pass


@contextlib.contextmanager
def atomic_path(path: str, suffix: str = "") -> Iterator[str]:
  """Yields a temporary path beside `path` to write; renames it over `path`
  when the block ends, removes it if the block fails.

  Args:
    path: the file to write.
    suffix: of the temporary name (e.g. ".png" for a writer that infers the
      format from it).

  Raises:
    OutputWriteError: the block or the rename failed with an `OSError` (or
      TensorFlow `OpError`); `path` is as it was.
  """
  directory = os.path.dirname(os.path.abspath(path))
  tmp = os.path.join(directory,
                     f".{os.path.basename(path)}.tmp{os.getpid()}{suffix}")
  try:
    os.makedirs(directory, exist_ok=True)
    yield tmp
    os.replace(tmp, path)
  except BaseException as e:
    _remove(tmp)
    if is_write_error(e):
      raise write_failed(path, e) from None
    raise


def remove_temporaries(directory: str) -> List[str]:
  """Deletes the temporary files `atomic_path` left under `directory` (its
  method directories too) when a process was killed mid-write; returns
  them. Call only while holding the directory's `RunLock`."""
  pattern = ".*.tmp[0-9]*"
  found = sorted(glob.glob(os.path.join(directory, pattern))
                 + glob.glob(os.path.join(directory, "*", pattern)))
  for path in found:
    _remove(path)
  return found


def write_text(path: str, text: str) -> str:
  """Writes `text` (UTF-8) to `path` atomically (`atomic_path`)."""
  with atomic_path(path) as tmp:
    with open(tmp, "w", encoding="utf-8", newline="") as f:
      f.write(text)
  return path


# --- JSON records ----------------------------------------------------------------

def checksum(value) -> str:
  """sha256 of a JSON value written compactly with sorted keys."""
  text = json.dumps(value, sort_keys=True, separators=(",", ":"),
                    allow_nan=False)
  return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal(value: dict) -> dict:
  """`value` (JSON-native) with `CHECKSUM_KEY`: the checksum of the rest."""
  body = {k: v for k, v in value.items() if k != CHECKSUM_KEY}
  return dict(body, **{CHECKSUM_KEY: checksum(body)})


def _refuse_constant(name):
  raise ValueError(f"holds {name}, which strict JSON has not")


def read_json(path: str, remedy: str, sealed: Optional[bool] = None,
              missing_ok: bool = False) -> Optional[dict]:
  """The JSON object in `path`, without its checksum.

  Args:
    path: the file.
    remedy: what the user should do, ending every error's line.
    sealed: True: `CHECKSUM_KEY` must be there and match; None: checked
      when there (records written by hand or by an older version have
      none); False: not checked.
    missing_ok: a missing file gives None instead of an error.

  Raises:
    RunFileError: missing (unless `missing_ok`), unreadable, not strict JSON
      (e.g. cut short), not an object, or not matching its checksum.
  """
  try:
    with open(path, "rb") as f:
      data = f.read()
  except FileNotFoundError:
    if missing_ok:
      return None
    raise RunFileError(path, "missing", remedy) from None
  except OSError as e:
    raise RunFileError(path, f"cannot be read ({describe_error(e)})",
                       remedy) from None
  try:
    value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
  except ValueError as e:  # UnicodeDecodeError too.
    raise RunFileError(path, f"not valid JSON ({str(e).splitlines()[0][:120]}"
                       "; cut short or damaged)", remedy) from None
  if not isinstance(value, dict):
    raise RunFileError(path, f"holds a JSON {type(value).__name__}, not an "
                       "object", remedy)
  stored = value.pop(CHECKSUM_KEY, None)
  if sealed is not False:
    if stored is None and sealed:
      raise RunFileError(path, f"has no {CHECKSUM_KEY} checksum", remedy)
    if stored is not None and stored != checksum(value):
      raise RunFileError(path, f"does not match its {CHECKSUM_KEY} checksum "
                         "(edited, or damaged)", remedy)
  return value


def is_number(value) -> bool:
  """An int or float (not a bool) and finite."""
  return (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value))


def require(ok: bool, path: str, problem: str, remedy: str) -> None:
  """`RunFileError(path, problem, remedy)` unless `ok`."""
  if not ok:
    raise RunFileError(path, problem, remedy)


# --- metrics.csv ---------------------------------------------------------------

def format_value(value) -> str:
  """A cell as written to metrics.csv (floats to 9 significant digits)."""
  if value is None:
    return ""
  if isinstance(value, (float, np.floating)):
    return str(float(value)) if not math.isfinite(value) else f"{float(value):.9g}"
  return str(value)


def parse_cell(column: str, text: str):
  """A metrics.csv cell's value: None (empty), int or float.

  Raises:
    ValueError: not what `column` holds.
  """
  if text == "":
    return None
  if column in INT_COLUMNS or (column not in FLOAT_COLUMNS
                               and _INT.match(text)):
    if not _INT.match(text):
      raise ValueError(f"{column} {text[:40]!r} is not an integer")
    return int(text)
  if not _NUMBER.match(text):
    raise ValueError(f"{column} {text[:40]!r} is not a number")
  return float(text)


def recorded(row, columns: Sequence[str]) -> Dict[str, object]:
  """`row` as metrics.csv records it and `read_metrics_csv` gives it back
  (9 significant digits, typed): what every later number comes from, so a
  run and its rerun report the same."""
  return {c: parse_cell(c, format_value(row.get(c))) for c in columns}


class MetricsFile(NamedTuple):
  """A metrics.csv as read back.

  Attributes:
    path: the file.
    columns: its header.
    rows: its intact rows, typed (`parse_cell`), rounds 1, 2, ... in order.
    dropped: what was dropped from its damaged end, and why (None: nothing).
  """
  path: str
  columns: tuple
  rows: List[Dict[str, object]]
  dropped: Optional[str] = None


def _parse_line(raw: bytes, columns: Sequence[str]) -> Dict[str, object]:
  """One row of metrics.csv, typed (ValueError saying what is wrong)."""
  try:
    text = raw.decode("ascii")
  except UnicodeDecodeError:
    raise ValueError("bytes that are not text") from None
  cells = next(csv.reader([text]), [])
  if len(cells) != len(columns):
    raise ValueError(f"{len(cells)} fields, not {len(columns)}")
  return {c: parse_cell(c, v) for c, v in zip(columns, cells)}


def _check_order(row, previous) -> None:
  """ValueError unless `row` follows `previous` (None: the first row)."""
  expected = 1 if previous is None else previous["round"] + 1
  if row["round"] != expected:
    raise ValueError(f"round {row['round']} where round {expected} belongs")
  for c in INT_COLUMNS & set(row):
    if row[c] is not None and row[c] < 0:
      raise ValueError(f"{c} {row[c]} is negative")
  if row.get("non_finite") not in (None, 0, 1):
    raise ValueError(f"non_finite {row['non_finite']} is not 0 or 1")
  budget, total = row.get("batch_budget"), row.get("cumulative_batch_budget")
  if budget is not None and total is not None:
    before = 0 if previous is None else previous["cumulative_batch_budget"]
    if before is not None and total != before + budget:
      raise ValueError(f"cumulative_batch_budget {total} is not {before} + "
                       f"{budget}")


def _header(raw: bytes, path: str, columns, required, remedy):
  try:
    header = tuple(next(csv.reader([raw.decode("ascii")]), []))
  except UnicodeDecodeError:
    header = ()
  if columns is not None:
    require(header == tuple(columns), path, "its header is not the run's "
            f"columns ({','.join(columns)[:200]})", remedy)
  else:
    missing = [c for c in required if c not in header]
    require(not missing and len(set(header)) == len(header), path,
            f"its header lacks {', '.join(missing) or 'unique columns'}",
            remedy)
  return header


def read_metrics_csv(path: str, remedy: str,
                     columns: Optional[Sequence[str]] = None,
                     required: Sequence[str] = ("round",)) -> MetricsFile:
  """Reads and checks a metrics.csv (see the module docstring).

  Args:
    path: the file (missing: no rows; the caller decides what that means).
    remedy: what the user should do, ending an error's line.
    columns: the exact header expected (the loop's), or None (readers of
      finished runs): then it must hold `required`.
    required: see `columns`.

  Raises:
    RunFileError: the header is damaged or not the expected one, or a
      damaged line is followed by intact rows.
  """
  try:
    with open(path, "rb") as f:
      data = f.read()
  except FileNotFoundError:
    return MetricsFile(path, tuple(columns or ()), [])
  except OSError as e:
    raise RunFileError(path, f"cannot be read ({describe_error(e)})",
                       remedy) from None
  lines = data.split(b"\n")
  partial = lines.pop()  # b"" when the file ends with an end of line.
  if not lines:  # No whole header: a write cut short (or an empty file).
    expected = ",".join(columns or ()).encode()
    require(columns is not None and expected.startswith(partial), path,
            "it has no header line", remedy)
    return MetricsFile(path, tuple(columns), [],
                       f"{path} held no whole header (cut short); dropped"
                       if partial else None)
  header = _header(lines[0], path, columns, required, remedy)
  rows = []
  for i, raw in enumerate(lines[1:]):
    try:
      row = _parse_line(raw, header)
      _check_order(row, rows[-1] if rows else None)
    except ValueError as e:
      return MetricsFile(path, header, rows,
                         _damaged_end(path, lines, i + 2, e, header, remedy))
    rows.append(row)
  dropped = None
  if partial:
    dropped = (f"dropped the last row of {path}: cut short (no end of line; "
               "a write was interrupted)")
  return MetricsFile(path, header, rows, dropped)


def _damaged_end(path, lines, line, error, header, remedy) -> str:
  """What `read_metrics_csv` drops from line `line` (1-based, a damaged
  one) on; RunFileError if an intact row follows it."""
  for later, raw in enumerate(lines[line:], line + 1):
    try:
      _parse_line(raw, header)
    except ValueError:
      continue
    raise RunFileError(path, f"line {line} is damaged ({error}) and intact "
                       f"rows follow it (line {later})", remedy)
  return (f"dropped the damaged end of {path} from line {line} ({error}; a "
          "write was interrupted)")
