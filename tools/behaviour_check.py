"""Runs every built-in method on digits and compares metrics.csv between trees.

  python tools/behaviour_check.py run OUT_DIR [RUN...] # train the set (or RUNs) into OUT_DIR
  python tools/behaviour_check.py compare BEFORE AFTER # metric columns, side by side

The set: the default run (`train_main` with no flags) and 4-round digits
runs of every built-in method, grouped (the default client groups) and
ungrouped (`--client_group_size=1`), with equal and with log-normal client
sizes, and each mixing strategy. `compare` reads every `metrics.csv` below
BEFORE and AFTER and prints, per method, the largest absolute and relative
difference of the metric columns (every column but `round_seconds`, which is
a wall time); it exits 1 when a file is missing on one side or a difference
is above 1e-6 relative.
"""

import csv
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SHORT = ["--total_rounds=4", "--rounds_per_eval=1", "--centralized_epochs=0"]
# --server_learning_rate=1.0 given: the adaptive optimizers' own default rate
# is not 1 (before it was every optimizer's), and the comparison is of the
# same settings.
_METHODS = ("fedavg,fedavgm,fedsgd,fedavg+fedir,fedavg+fedvc,fedavg+fedprox,"
            "scaffold,fedavg@adam,fedavg@yogi,fedavg@adagrad,fedavgm@nesterov")
_UNEQUAL = "fedavg,fedavg+fedir,fedavg+fedvc,fedavg+fedprox,scaffold,fedsgd"
_MIXING = "none,parallel,example_transfer,gradient_transfer,oracle"
# (run name, flags). Each run is one train_main command.
RUNS = (
    ("default", []),
    ("methods_grouped", _SHORT + [f"--methods={_METHODS}",
                                  "--server_learning_rate=1.0"]),
    ("methods_ungrouped", _SHORT + [f"--methods={_METHODS}",
                                    "--server_learning_rate=1.0",
                                    "--client_group_size=1"]),
    ("unequal_grouped", _SHORT + [f"--methods={_UNEQUAL}",
                                  "--imbalance_sigma=1.0"]),
    ("unequal_ungrouped", _SHORT + [f"--methods={_UNEQUAL}",
                                    "--imbalance_sigma=1.0",
                                    "--client_group_size=1"]),
    ("mixing_grouped", _SHORT + ["--methods=fedavg,fedavgm",
                                 f"--mixing={_MIXING}"]),
    ("mixing_ungrouped", _SHORT + ["--methods=fedavg,fedavgm",
                                   f"--mixing={_MIXING}",
                                   "--client_group_size=1"]),
)
_NOT_METRICS = ("round_seconds",)
_TOLERANCE = 1e-6


def run(out_dir, only=()):
  for name, flags in RUNS:
    if only and name not in only:
      continue
    cmd = [sys.executable, "-m", "experiments.train_main",
           f"--root_output_dir={out_dir}", f"--experiment_name={name}",
           "--overwrite"] + flags
    print(" ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def _metrics(path):
  with open(path) as f:
    rows = list(csv.DictReader(f))
  return {(r["round"], k): v for r in rows for k, v in r.items()
          if k not in _NOT_METRICS}


def _files(root):
  return sorted(os.path.relpath(os.path.join(d, "metrics.csv"), root)
                for d, _, files in os.walk(root) if "metrics.csv" in files)


def _final(values, column="test_accuracy"):
  rounds = sorted({int(r) for r, k in values if k == column
                   and values[(r, k)] not in ("", None)})
  return values.get((str(rounds[-1]), column), "") if rounds else ""


def compare(before, after):
  """Prints the table; returns the number of files that differ too much."""
  bad = 0
  names = sorted(set(_files(before)) | set(_files(after)))
  print("| run/method | rows | final test_accuracy before | after | "
        "max abs diff | max rel diff | columns that differ |")
  print("|---|---|---|---|---|---|---|")
  for rel in names:
    paths = [os.path.join(before, rel), os.path.join(after, rel)]
    if not all(os.path.exists(p) for p in paths):
      print(f"| {os.path.dirname(rel)} | missing "
            f"{'after' if os.path.exists(paths[0]) else 'before'} | | | | | |")
      bad += 1
      continue
    a, b = (_metrics(p) for p in paths)
    worst_abs = worst_rel = 0.0
    differ = set()
    for key in set(a) | set(b):
      x, y = a.get(key), b.get(key)
      if x == y:
        continue
      differ.add(key[1])
      try:
        fx, fy = float(x), float(y)
      except (TypeError, ValueError):
        worst_abs = worst_rel = float("inf")
        continue
      worst_abs = max(worst_abs, abs(fx - fy))
      worst_rel = max(worst_rel, abs(fx - fy) / max(abs(fx), abs(fy), 1e-30))
    bad += worst_rel > _TOLERANCE
    rows = len({r for r, _ in a})
    print(f"| {os.path.dirname(rel)} | {rows} | {_final(a)} | {_final(b)} | "
          f"{worst_abs:.3g} | {worst_rel:.3g} | "
          f"{', '.join(sorted(differ)) or '-'} |")
  return bad


def main(argv):
  if len(argv) >= 3 and argv[1] == "run":
    run(os.path.abspath(argv[2]), argv[3:])
  elif len(argv) == 4 and argv[1] == "compare":
    sys.exit(1 if compare(argv[2], argv[3]) else 0)
  else:
    sys.exit(__doc__)


if __name__ == "__main__":
  main(sys.argv)
