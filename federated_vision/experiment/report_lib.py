"""The results table of `report_main`: every summary.json under a directory.

One row per (run directory, method), read from summary.json alone (its
`config`, `resolved` and each method's `settings`, written by
`runner.run`); nothing is inferred from names. Rounds to target accuracy
come from <method>/metrics.csv (McMahan et al. 2017: best-so-far curve,
linear interpolation, `federated_vision.evaluation.convergence`).

Does not import TensorFlow.
"""

import csv
import json
import math
import os

from federated_vision.errors import ConfigError
from federated_vision.evaluation import convergence

COLUMNS = ("point", "dataset", "partition", "alpha", "algorithm", "status",
           "C", "clients_per_round", "E", "B", "rounds", "final_accuracy",
           "relative_accuracy", "target", "rounds_to_target", "speedup", "emd")


class ReportError(ConfigError):
  """Unusable input; the message names the flag or file."""


def _read_json(path):
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError) as e:
    raise ReportError(f"{path}: unreadable JSON ({e})") from None


def curve_from_csv(path):
  """(rounds, test accuracies) of the evaluated rounds of a metrics.csv."""
  rounds, accs = [], []
  if not os.path.isfile(path):
    return rounds, accs
  with open(path, newline="") as f:
    for row in csv.DictReader(f):
      if row.get("test_accuracy") not in (None, ""):
        rounds.append(float(row["round"]))
        accs.append(float(row["test_accuracy"]))
  return rounds, accs


def _finite(value) -> bool:
  return isinstance(value, (int, float)) and math.isfinite(value)


def _rows_of_run(run_dir, name, target):
  """Rows of one run directory, from its summary.json alone: the config,
  the resolved defaults and every method's recorded settings."""
  path = os.path.join(run_dir, "summary.json")
  summary = _read_json(path)
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
    if run_target is not None:
      rtt = convergence.rounds_to_target(
          *curve_from_csv(os.path.join(run_dir, method, "metrics.csv")),
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
        "emd": summary.get("emd")})
  return rows


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
      rows += _rows_of_run(root, name, target)
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
      r["speedup"] = convergence.speedup(ref, r["rounds_to_target"])
  return rows


def _cell(v):
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
  """One line per column holding a '-' cell: the column and why."""
  return [f"{prefix}`-` in {c}: {NOTES[c]}" for c in COLUMNS
          if c in NOTES and any(_cell(r[c]) == "-" for r in rows)]


def format_table(rows):
  cells = [list(COLUMNS)] + [[_cell(r[c]) for c in COLUMNS] for r in rows]
  widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
  lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
           for row in cells]
  lines.insert(1, "  ".join("-" * w for w in widths))
  return "\n".join(lines + footnotes(rows))


def format_markdown(rows):
  out = ["| " + " | ".join(COLUMNS) + " |",
         "|" + "|".join("---" for _ in COLUMNS) + "|"]
  out += ["| " + " | ".join(_cell(r[c]) for c in COLUMNS) + " |" for r in rows]
  return "\n".join(out) + "\n"


def write_outputs(rows, output_dir):
  """report.csv (raw values, empty = none) and report.md; returns paths."""
  os.makedirs(output_dir, exist_ok=True)
  csv_path = os.path.join(output_dir, "report.csv")
  with open(csv_path, "w", newline="") as f:
    writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: ("" if v is None else v) for k, v in r.items()}
                     for r in rows)
  md_path = os.path.join(output_dir, "report.md")
  with open(md_path, "w") as f:
    f.write(format_markdown(rows))
  return csv_path, md_path
