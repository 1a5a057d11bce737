"""`reproduce --parallel_runs=N` against N = 1, back to back (issue 18).

Runs `python -m experiments.reproduce --preset=P --parallel_runs=1` and then
`--parallel_runs=N` (each into a fresh results root), `--repeats` times in
turn (1, N, 1, N, ...), and prints for each pair the wall time, the CPU
seconds of the whole process tree (`RUSAGE_CHILDREN`: the binary, its
`run_point` children and every TFF worker, all waited for) and their N / 1
ratios, min / median / max over the pairs; then checks that every run's
metrics.csv (without its timing column) is identical between the two.

  python -m benchmarks.bench_parallel_runs                 # digits_claims, N=2
  python -m benchmarks.bench_parallel_runs --preset=digits_claims --n=2 --repeats=2
  python -m benchmarks.bench_parallel_runs --quick    # its 4 alpha_* runs
"""

import argparse
import csv
import glob
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import harness  # pylint: disable=g-import-not-at-top

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _children_cpu() -> float:
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def run_preset(preset: str, n: int, root: str, only: str = ""):
  """(wall s, CPU s) of one `reproduce` invocation (exits if it failed)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=_ROOT)
  cmd = [sys.executable, "-m", "experiments.reproduce", f"--preset={preset}",
         f"--parallel_runs={n}", f"--results_root={root}",
         f"--root_output_dir={root}"] + ([f"--only={only}"] if only else [])
  cpu0, wall0 = _children_cpu(), time.perf_counter()
  proc = subprocess.run(cmd, cwd=_ROOT, env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True, check=False)
  wall, cpu = time.perf_counter() - wall0, _children_cpu() - cpu0
  if proc.returncode != 0:
    sys.exit(f"bench_parallel_runs: {' '.join(cmd[2:])} exited "
             f"{proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
  return wall, cpu


def metric_rows(path: str):
  with open(path, newline="") as f:
    return [{k: v for k, v in r.items() if k != "round_seconds"}
            for r in csv.DictReader(f)]


def compare_metrics(root_a: str, root_b: str):
  """(identical, different run/method names) over every metrics.csv."""
  same, different = 0, []
  for path in sorted(glob.glob(os.path.join(root_a, "*", "*", "metrics.csv"))):
    rel = os.path.relpath(path, root_a)
    other = os.path.join(root_b, rel)
    if os.path.exists(other) and metric_rows(path) == metric_rows(other):
      same += 1
    else:
      different.append(os.path.dirname(rel))
  return same, different


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--preset", default="digits_claims")
  parser.add_argument("--n", type=int, default=2, help="--parallel_runs")
  parser.add_argument("--repeats", type=int, default=1)
  parser.add_argument("--only", default="", help="reproduce's --only")
  parser.add_argument("--quick", action="store_true",
                      help="the preset's digits_claims_alpha_* runs only")
  args = parser.parse_args(argv)
  only = "digits_claims_alpha_*" if args.quick else args.only
  print(harness.load_line())
  pairs = []
  with tempfile.TemporaryDirectory(prefix="bench_parallel_runs_") as tmp:
    for rep in range(args.repeats):
      roots = {}
      for n in (1, args.n):
        roots[n] = os.path.join(tmp, f"rep{rep}_n{n}")
        wall, cpu = run_preset(args.preset, n, roots[n], only)
        print(f"  repeat {rep + 1} --parallel_runs={n}: {wall:7.1f} s wall "
              f"{cpu:7.1f} CPU-s  ({harness.load_line()})")
        pairs.append((n, wall, cpu))
      same, different = compare_metrics(roots[1], roots[args.n])
      print(f"  repeat {rep + 1}: metrics.csv identical in {same} run/method"
            f"(s), different in {len(different)}: {different or ''}")
      if different or not same:
        sys.exit("bench_parallel_runs: per-run metrics differ")
  ones = [p for p in pairs if p[0] == 1]
  ns = [p for p in pairs if p[0] == args.n]
  for label, k in (("wall", 1), ("CPU", 2)):
    ratios = [b[k] / a[k] for a, b in zip(ones, ns)]
    print(f"{args.preset} --parallel_runs={args.n} / 1, {label}: median "
          f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max "
          f"{max(ratios):.2f}); seconds {statistics.median(b[k] for b in ns):.1f}"
          f" vs {statistics.median(a[k] for a in ones):.1f}")


if __name__ == "__main__":
  main()
