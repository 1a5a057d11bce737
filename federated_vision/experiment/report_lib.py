"""The results table of `report_main`: every summary.json under a directory.

One row per (run directory, method), read from summary.json alone (its
`config`, `resolved` and each method's `settings`, written by
`runner.run`); nothing is inferred from names. Rounds to target accuracy
come from <method>/metrics.csv (McMahan et al. 2017: best-so-far curve,
linear interpolation, `federated_vision.evaluation.convergence`).

Both are read checked (`training.run_files`): a damaged summary.json stops
the report with one line naming it; a missing or damaged metrics.csv makes
the cells that need it `Unknown`: they print `missing` / `damaged` (never a
value, nor `-`, which means "none"), a footnote names the file, and
`check_complete` then fails the report with one line (exit 1).

Does not import TensorFlow.
"""

import csv
import io
import math
import os
from typing import NamedTuple

from federated_vision.errors import ConfigError
from federated_vision.evaluation import convergence
from federated_vision.evaluation import model_averaging
from federated_vision.training import run_errors
from federated_vision.training import run_files

REMEDY = "rerun the point's command to write it again"

COLUMNS = ("point", "dataset", "partition", "alpha", "algorithm", "status",
           "C", "clients_per_round", "E", "B", "rounds", "final_accuracy",
           "relative_accuracy", "target", "rounds_to_target", "speedup", "emd")
# A row's method settings as recorded (summary.json's `settings`: learning
# rates, server optimizer, each component's own options, a researcher's
# included, read without importing any component) are columns where they
# differ between rows (`columns`); E, B and the name have their own.
HPARAMS = "hparams"
_NOT_HPARAMS = ("name", "algorithm", "variants", "E", "B",
                "clients_per_round")


class ReportError(ConfigError):
  """Unusable input; the message names the flag or file."""


class Unknown(NamedTuple):
  """A cell that could not be computed: `word` is printed in it ('missing',
  'damaged'), `why` (the file, what is wrong, what to do) below the table."""
  word: str
  why: str


def curve_from_csv(path):
  """(rounds, test accuracies) of the evaluated rounds of a finished run's
  metrics.csv (`run_files.read_metrics_csv`).

  Raises:
    RunFileError: the file is missing or damaged (a damaged end too: the
      run's summary.json was written from rows it no longer holds).
  """
  if not os.path.isfile(path):
    raise run_errors.RunFileError(path, "missing", REMEDY)
  metrics = run_files.read_metrics_csv(path, REMEDY,
                                       required=("round", "test_accuracy"))
  if metrics.dropped:
    raise run_errors.RunFileError(path, metrics.dropped.split(": ", 1)[-1],
                                  REMEDY)
  evaluated = [r for r in metrics.rows if r["test_accuracy"] is not None]
  return ([float(r["round"]) for r in evaluated],
          [float(r["test_accuracy"]) for r in evaluated])


def _rounds_to_target(path, target):
  """rounds_to_target of a method's metrics.csv, or `Unknown` saying why."""
  try:
    return convergence.rounds_to_target(*curve_from_csv(path), target)
  except run_errors.RunFileError as e:
    return Unknown("missing" if e.problem == "missing" else "damaged", str(e))


def _finite(value) -> bool:
  return isinstance(value, (int, float)) and math.isfinite(value)


def _rows_of_run(run_dir, name, target):
  """Rows of one run directory, from its summary.json alone: the config,
  the resolved defaults and every method's recorded settings."""
  path = os.path.join(run_dir, "summary.json")
  summary = run_files.read_json(path, REMEDY)
  if model_averaging.SUMMARY_KEY in summary:  # Not a train_main run.
    raise ReportError(f"{path}: an averaging run (McMahan 2017 Figure 1), "
                      "not a train_main run: `reproduce --preset="
                      "mcmahan2017_figure1 --report_only` reports it; give "
                      "--input_dir a directory of train_main runs")
  config, resolved = summary.get("config"), summary.get("resolved")
  if not isinstance(config, dict) or not isinstance(resolved, dict):
    raise ReportError(f"{path}: no config/resolved settings (written by an "
                      "older train_main); rerun that point")
  data, training = config["data"], config["training"]
  partition = resolved["partition"]
  fraction = training.get("client_fraction")
  run_target = target if target is not None else summary.get("target_accuracy")
  central = summary.get("centralized") or {}
  central_ok = (central.get("status", "completed") == "completed"
                and _finite(central.get("accuracy")))
  rows = []
  for method, m in summary.get("methods", {}).items():
    status = m.get("status", "completed")
    s = m.get("settings")
    if not isinstance(s, dict):
      raise ReportError(f"{path}: method {method} has no recorded settings "
                        "(written by an older train_main); rerun that point")
    per_round = s["clients_per_round"]
    rtt = None
    if run_target is not None and status != "not_run":
      rtt = _rounds_to_target(os.path.join(run_dir, method, "metrics.csv"),
                              run_target)
    rows.append({
        "point": name, "dataset": data["dataset"], "partition": partition,
        "alpha": (data["alpha"] if partition in ("dirichlet",
                                                  "dirichlet_per_class")
                  else None),
        "algorithm": method, "status": status,
        "C": (fraction if fraction is not None
              else per_round / resolved["num_clients"]),
        "clients_per_round": per_round, "E": s["E"],
        "B": "inf" if s["B"] is None else s["B"],
        "rounds": m.get("rounds"), "final_accuracy": m.get("final_accuracy"),
        "relative_accuracy": (
            m.get("relative_accuracy") if status == "completed" and central_ok
            and _finite(m.get("relative_accuracy")) else None),
        "target": run_target, "rounds_to_target": rtt, "speedup": None,
        "emd": summary.get("emd"), HPARAMS: _hparams(s)})
  return rows


def _hparams(settings) -> dict:
  """A method's recorded settings with a single value (numbers, strings,
  booleans, None), but the ones with a column of their own."""
  return {k: v for k, v in settings.items() if k not in _NOT_HPARAMS
          and (v is None or isinstance(v, (bool, int, float, str)))}


def columns(rows) -> tuple:
  """`COLUMNS`, then each method hyper-parameter whose value differs
  between rows (absent from a row: '-'), in first-seen order."""
  keys = []
  for r in rows:
    keys += [k for k in r.get(HPARAMS, {}) if k not in keys]
  varying = [k for k in keys if len({repr(r.get(HPARAMS, {}).get(k))
                                     for r in rows}) > 1]
  return COLUMNS + tuple(varying)


def _value(row, column):
  return row[column] if column in COLUMNS else row.get(HPARAMS, {}).get(column)


def gather(input_dir, target=None, reference=None):
  """All rows under `input_dir`, sorted by point then method; with speedups.

  Raises:
    ReportError: no summary.json found, or --reference names no row.
  """
  if not os.path.isdir(input_dir):
    raise ReportError(f"--input_dir={input_dir}: not a directory")
  rows = []
  for root, dirs, files in os.walk(input_dir):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    if "summary.json" in files:
      rel = os.path.relpath(root, input_dir)
      name = (os.path.basename(os.path.abspath(input_dir)) if rel == "."
              else rel.replace(os.sep, "/"))
      try:
        rows += _rows_of_run(root, name, target)
      except (KeyError, TypeError, AttributeError) as e:  # A field missing.
        raise run_errors.RunFileError(
            os.path.join(root, "summary.json"), f"lacks a field the report "
            f"reads ({type(e).__name__}: {e})", REMEDY) from None
      dirs[:] = []  # Method sub-directories hold no summaries.
  if not rows:
    raise ReportError(f"--input_dir={input_dir}: no summary.json found")
  if reference is not None:
    matches = [r for r in rows if reference in
               (r["point"], f"{r['point']}/{r['algorithm']}")]
    if len(matches) != 1:
      raise ReportError(
          f"--reference={reference}: matches {len(matches)} rows; name a point"
          " (or point/method) of the table")
    ref = matches[0]["rounds_to_target"]
    for r in rows:
      unknown = [v for v in (ref, r["rounds_to_target"])
                 if isinstance(v, Unknown)]
      r["speedup"] = (unknown[0] if unknown else
                      convergence.speedup(ref, r["rounds_to_target"]))
  return rows


def unknown_cells(rows):
  """[(point/algorithm, column, `Unknown`)] of the rows, in table order."""
  return [(f"{r['point']}/{r['algorithm']}", c, r[c]) for r in rows
          for c in COLUMNS if isinstance(r.get(c), Unknown)]


def check_complete(rows) -> None:
  """Raises `RunError` (exit 1, one line naming the first file) if a cell
  could not be computed (`Unknown`); call after printing and writing the
  report, whose cells and footnotes say which and why."""
  unknown = unknown_cells(rows)
  if unknown:
    first = unknown[0][2].why
    raise run_errors.RunError(
        f"{len(unknown)} cell(s) could not be computed (marked "
        f"{'/'.join(sorted({u.word for _, _, u in unknown}))}): {first}")


def _cell(v):
  if isinstance(v, Unknown):
    return v.word
  if v is None:
    return "-"
  if isinstance(v, float):
    if math.isnan(v):
      return "-"  # not measured, as None
    if not math.isfinite(v):
      return str(v)
    return f"{v:g}" if v == int(v) and abs(v) < 1e6 else f"{v:.4f}"
  return str(v)


# Why a cell is '-' (printed below the table for the columns that have one).
NOTES = {
    "alpha": "not a Dirichlet partition",
    "relative_accuracy": "the method or its run's centralized baseline did "
                         "not complete (or --centralized_epochs=0)",
    "target": "no --target_accuracy (nor one recorded by the run)",
    "rounds_to_target": "no target, or the target was never reached",
    "speedup": "no --reference, or it or this row never reached the target",
    "emd": "not recorded by the run",
}


def footnotes(rows, prefix="  - "):  # printed below `format_table`
  """One line per column holding a '-' cell: the column and why; one per
  cell that could not be computed: the row, the column and why."""
  return ([f"{prefix}`-` in {c}: {NOTES[c]}" for c in COLUMNS
           if c in NOTES and any(_cell(r[c]) == "-" for r in rows)]
          + [f"{prefix}`{u.word}` in {c} of {name}: {u.why}"
             for name, c, u in unknown_cells(rows)])


def format_table(rows):
  cols = columns(rows)
  cells = [list(cols)] + [[_cell(_value(r, c)) for c in cols] for r in rows]
  widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
  lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
           for row in cells]
  lines.insert(1, "  ".join("-" * w for w in widths))
  return "\n".join(lines + footnotes(rows))


def format_markdown(rows):
  cols = columns(rows)
  out = ["| " + " | ".join(cols) + " |",
         "|" + "|".join("---" for _ in cols) + "|"]
  out += ["| " + " | ".join(_cell(_value(r, c)) for c in cols) + " |"
          for r in rows]
  unknown = [f"`{u.word}` in {c} of {name}: {u.why}"
             for name, c, u in unknown_cells(rows)]
  return "\n".join(out + ([""] + unknown if unknown else [])) + "\n"


def write_outputs(rows, output_dir):
  """report.csv (raw values, empty = none, `missing` / `damaged` = could not
  be computed) and report.md, each atomically (`run_files.write_text`: a
  failed write is one `OutputWriteError` line); returns paths.

  Raises:
    OSError: `output_dir` cannot be created.
  """
  os.makedirs(output_dir, exist_ok=True)
  text = io.StringIO()
  cols = columns(rows)
  writer = csv.DictWriter(text, cols, lineterminator="\n")
  writer.writeheader()
  writer.writerows({c: ("" if v is None else _cell(v) if isinstance(
      v, Unknown) else v) for c, v in ((c, _value(r, c)) for c in cols)}
                   for r in rows)
  csv_path = run_files.write_text(os.path.join(output_dir, "report.csv"),
                                  text.getvalue())
  md_path = run_files.write_text(os.path.join(output_dir, "report.md"),
                                 format_markdown(rows))
  return csv_path, md_path
