"""Gathers every summary.json under a directory into one results table.

One row per (run directory, method): point name (the run directory relative
to --input_dir), dataset, partition, alpha, algorithm, C, clients per round,
E, B, final test accuracy, rounds to the target accuracy (McMahan et al.
2017: best-so-far curve, linear interpolation, from <method>/metrics.csv via
`federated_vision.evaluation.convergence`), speedup over the --reference row and the EMD
non-identicalness of the partition. Printed, and written as report.csv and
report.md to --output_dir (default: --input_dir).

Does not import TensorFlow.

  python -m experiments.report_main --input_dir=output/mcmahan_mnist_grid \
      --reference=2nn_iid_C0.1_E1_Binf
"""

import csv
import json
import math
import os
import sys

from absl import app
from absl import flags

from federated_vision.evaluation import convergence



def define_flags():
  """The binary's flags (defined in __main__ only, so importing this module
  next to `flags_lib`, which also has --target_accuracy, is safe)."""
  flags.DEFINE_string("input_dir", None, "Directory searched (recursively) for "
                      "summary.json files, e.g. <root_output_dir>/<sweep>.")
  flags.DEFINE_string("output_dir", None, "Where report.csv and report.md go "
                      "(default: --input_dir).")
  flags.DEFINE_string("reference", None, "Row whose rounds-to-target is the "
                      "speedup reference: a point name, or point/method when the "
                      "point ran several methods.")
  flags.DEFINE_float("target_accuracy", None, "Target accuracy for "
                     "rounds-to-target (default: each run's --target_accuracy; "
                     "none -> empty column).")


FLAGS = flags.FLAGS

COLUMNS = ("point", "dataset", "partition", "alpha", "algorithm", "C",
           "clients_per_round", "E", "B", "rounds", "final_accuracy", "target",
           "rounds_to_target", "speedup", "emd")


class ReportError(ValueError):
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


def _rows_of_run(run_dir, name, target):
  summary = _read_json(os.path.join(run_dir, "summary.json"))
  hp_path = os.path.join(run_dir, "hparams.json")
  hp = _read_json(hp_path) if os.path.isfile(hp_path) else {}
  resolved = hp.get("resolved", {})
  data = hp.get("data", {})
  stats = hp.get("partition") if isinstance(hp.get("partition"), dict) else {}
  partition = resolved.get("partition") or data.get("partition") or "dirichlet"
  num_clients = resolved.get("num_clients") or stats.get("num_clients")
  per_round = resolved.get("clients_per_round", hp.get("clients_per_round"))
  fraction = hp.get("client_fraction")
  if fraction is None and per_round and num_clients:
    fraction = per_round / num_clients
  emd = summary.get("emd", stats.get("emd"))
  run_target = target if target is not None else summary.get("target_accuracy")
  rows = []
  for method, m in summary.get("methods", {}).items():
    fedsgd = method.split("+")[0] == "fedsgd"
    batch = hp.get("client_batch_size")
    rtt = None
    if run_target is not None:
      rtt = convergence.rounds_to_target(
          *curve_from_csv(os.path.join(run_dir, method, "metrics.csv")),
          run_target)
    rows.append({
        "point": name, "dataset": hp.get("dataset"), "partition": partition,
        "alpha": hp.get("alpha") if partition == "dirichlet" else None,
        "algorithm": method, "C": fraction, "clients_per_round": per_round,
        "E": 1 if fedsgd else hp.get("client_epochs"),
        "B": "inf" if fedsgd or batch == 0 else batch,
        "rounds": m.get("rounds"), "final_accuracy": m.get("final_accuracy"),
        "target": run_target, "rounds_to_target": rtt, "speedup": None,
        "emd": emd})
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
    if not math.isfinite(v):
      return str(v)
    return f"{v:g}" if v == int(v) and abs(v) < 1e6 else f"{v:.4f}"
  return str(v)


def format_table(rows):
  cells = [list(COLUMNS)] + [[_cell(r[c]) for c in COLUMNS] for r in rows]
  widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
  lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
           for row in cells]
  lines.insert(1, "  ".join("-" * w for w in widths))
  return "\n".join(lines)


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


def _fail(message):
  print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr)
  sys.exit(2)


def main(argv):
  if len(argv) > 1:
    _fail(f"unexpected arguments {argv[1:]}; all options are --flags")
  if not FLAGS.input_dir:
    _fail("--input_dir is required (a directory holding summary.json files)")
  try:
    rows = gather(FLAGS.input_dir, FLAGS.target_accuracy, FLAGS.reference)
    paths = write_outputs(rows, FLAGS.output_dir or FLAGS.input_dir)
  except ReportError as e:
    _fail(str(e))
  except OSError as e:
    _fail(f"--output_dir={FLAGS.output_dir or FLAGS.input_dir}: cannot write "
          f"({e.strerror or e})")
  print(format_table(rows))
  print(f"\n{len(rows)} rows: {paths[0]}, {paths[1]}")


if __name__ == "__main__":
  define_flags()
  app.run(main)
