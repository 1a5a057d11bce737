"""`reproduce --parallel_runs=N` against N = 1, back to back (issue 18).

Runs `python -m experiments.reproduce --preset=P --parallel_runs=1` and then
`--parallel_runs=N` (each into a fresh results root), `--repeats` times in
turn (1, N, 1, N, ...), and prints for each pair the wall time, the CPU
seconds of the whole process tree (`RUSAGE_CHILDREN`: the binary, its
`run_point` children and every TFF worker, all waited for) and their N / 1
ratios, min / median / max over the pairs; then checks that every run's
metrics.csv (without its timing column) is identical between the two.

Also printed, to read the ratio (`utilization`): the cores each invocation
kept busy (CPU s / wall s) and the floor, the wall ratio N's CPU seconds
would give with all K cores busy (CPU_N / (K x wall_1)): no scheduling can
beat it, so a target below it needs fewer CPU seconds, not more overlap.

`--env_n NAME=VALUE` (repeatable) sets an environment variable for the
--parallel_runs=N invocation only (the N = 1 one keeps this process's
environment); its children and their TFF workers inherit it. E.g.
`--env_n=TF_NUM_INTEROP_THREADS=1` tries a thread split; the metrics check
then says whether it changed any result (TF_NUM_INTRAOP_THREADS=1 does:
docs/experiments.md, "--parallel_runs"). `--flags_n=--flag=value`
(repeatable) adds a `reproduce` flag to the N invocation only, e.g.
`--flags_n=--max_concurrent_computation_calls=1`.

  python -m benchmarks.bench_parallel_runs                 # digits_claims, N=2
  python -m benchmarks.bench_parallel_runs --preset=digits_claims --n=2 --repeats=2
  python -m benchmarks.bench_parallel_runs --quick    # its 4 alpha_* runs
  python -m benchmarks.bench_parallel_runs --quick --env_n=TF_NUM_INTEROP_THREADS=1
  python -m benchmarks.bench_parallel_runs --flags_n=--max_concurrent_computation_calls=1
  python -m benchmarks.bench_parallel_runs --overlap=digits_claims_alpha_1,digits_claims_alpha_100

`--overlap=A,B` measures what two runs at once can keep busy on this
machine, with no parallel-runs machinery at all: it starts `reproduce
--only=A` and `reproduce --only=B` as two independent processes (fresh
results roots), samples /proc/stat every `SAMPLE_SEC` while both are alive,
and prints the cores busy then (`busy_cores`). With N=1 keeping u_1 cores
busy and two runs at once at most u_pair, N = 2 cannot beat the wall ratio
(CPU_N / CPU_1) x u_1 / u_pair, however the runs are scheduled.
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
from typing import Dict, Optional, Sequence, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import harness  # pylint: disable=g-import-not-at-top

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _children_cpu() -> float:
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def cores() -> int:
  """The cores this process may run on (its affinity mask)."""
  return len(os.sched_getaffinity(0))


def parse_env(items: Sequence[str]) -> Dict[str, str]:
  """['NAME=VALUE', ...] -> {NAME: VALUE}.

  Raises:
    ValueError: an item without '=' or with an empty name (naming it).
  """
  out = {}
  for item in items:
    name, sep, value = item.partition("=")
    if not sep or not name:
      raise ValueError(f"--env_n={item}: must be NAME=VALUE")
    out[name] = value
  return out


def utilization(wall_1: float, cpu_1: float, wall_n: float, cpu_n: float,
                k: int) -> Tuple[float, float, float]:
  """(cores busy with N = 1, cores busy with N, floor of the wall ratio).

  Cores busy = CPU s / wall s. The floor is the wall ratio N's CPU seconds
  allow on `k` cores: CPU_N / (k x wall_1).
  """
  return cpu_1 / wall_1, cpu_n / wall_n, cpu_n / (k * wall_1)


SAMPLE_SEC = 0.5


def cpu_jiffies(stat_text: str) -> Tuple[int, int]:
  """(total, idle) jiffies of the aggregate 'cpu' line of /proc/stat
  (idle = idle + iowait)."""
  fields = stat_text.split("\n", 1)[0].split()
  if not fields or fields[0] != "cpu":
    raise ValueError(f"not a /proc/stat text: {stat_text[:40]!r}")
  values = [int(v) for v in fields[1:]]
  return sum(values), values[3] + values[4]


def busy_cores(before: Tuple[int, int], after: Tuple[int, int],
               k: int) -> float:
  """Cores busy between two `cpu_jiffies` readings on `k` cores."""
  total, idle = after[0] - before[0], after[1] - before[1]
  return k * (total - idle) / total if total else 0.0


def _read_stat() -> Tuple[int, int]:
  with open("/proc/stat") as f:
    return cpu_jiffies(f.read())


def overlap(preset: str, runs: Sequence[str], tmp: str, k: int
            ) -> Tuple[float, float]:
  """(cores busy while both runs' processes were alive, those seconds):
  `reproduce --only=<run>` for each of `runs`, started together as
  independent processes (module docstring, `--overlap`)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=_ROOT)
  procs = [subprocess.Popen(
      [sys.executable, "-m", "experiments.reproduce", f"--preset={preset}",
       f"--only={run}", f"--results_root={os.path.join(tmp, f'overlap{i}')}"],
      cwd=_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
      text=True) for i, run in enumerate(runs)]
  first, start = _read_stat(), time.perf_counter()
  last = first
  while all(p.poll() is None for p in procs):
    time.sleep(SAMPLE_SEC)
    if all(p.poll() is None for p in procs):  # Both still alive: counts.
      last, seconds = _read_stat(), time.perf_counter() - start
  for p, run in zip(procs, runs):
    _, err = p.communicate()
    if p.returncode != 0:
      sys.exit(f"bench_parallel_runs: --overlap: reproduce --only={run} "
               f"exited {p.returncode}: {err.strip().splitlines()[-1:]}")
  if last is first:
    sys.exit("bench_parallel_runs: --overlap: a run ended within "
             f"{SAMPLE_SEC} s; give longer runs")
  return busy_cores(first, last, k), seconds


def run_preset(preset: str, n: int, root: str, only: str = "",
               extra_env: Optional[Dict[str, str]] = None,
               extra_flags: Sequence[str] = ()):
  """(wall s, CPU s) of one `reproduce` invocation (exits if it failed)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=_ROOT)
  env.update(extra_env or {})
  cmd = [sys.executable, "-m", "experiments.reproduce", f"--preset={preset}",
         f"--parallel_runs={n}", f"--results_root={root}",
         f"--root_output_dir={root}"] + ([f"--only={only}"] if only else []
                                         ) + list(extra_flags)
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
  parser.add_argument("--env_n", action="append", default=[],
                      metavar="NAME=VALUE", help="environment of the "
                      "--parallel_runs=N invocation only (repeatable)")
  parser.add_argument("--flags_n", action="append", default=[],
                      metavar="--FLAG=VALUE", help="a reproduce flag of the "
                      "--parallel_runs=N invocation only (repeatable)")
  parser.add_argument("--overlap", default="", metavar="RUN_A,RUN_B",
                      help="only measure the cores two of the preset's runs "
                      "keep busy when run at once as independent processes")
  args = parser.parse_args(argv)
  runs = [r for r in args.overlap.split(",") if r]
  if args.overlap and len(runs) != 2:
    print(f"bench_parallel_runs: --overlap={args.overlap}: must be two run "
          "names, RUN_A,RUN_B", file=sys.stderr)
    sys.exit(2)
  bad = [f for f in args.flags_n if not f.startswith("--") or "=" not in f]
  if bad:
    print(f"bench_parallel_runs: --flags_n={bad[0]}: must be --flag=value",
          file=sys.stderr)
    sys.exit(2)
  try:
    env_n = parse_env(args.env_n)
  except ValueError as e:
    print(f"bench_parallel_runs: {e}", file=sys.stderr)
    sys.exit(2)
  only = "digits_claims_alpha_*" if args.quick else args.only
  ncores = cores()
  if runs:
    print(f"{harness.load_line()}; {ncores} usable cores")
    with tempfile.TemporaryDirectory(prefix="bench_parallel_runs_") as tmp:
      busy, seconds = overlap(args.preset, runs, tmp, ncores)
    print(f"{' and '.join(runs)} at once, as independent processes: "
          f"{busy:.2f} of {ncores} cores busy over the {seconds:.1f} s both "
          f"ran  ({harness.load_line()})")
    return
  print(f"{harness.load_line()}; {ncores} usable cores; --parallel_runs={args.n}"
        f" env: {' '.join(f'{n}={v}' for n, v in env_n.items()) or 'as N=1'}"
        f"; flags: {' '.join(args.flags_n) or 'as N=1'}"
        f"; TF_NUM_INTRAOP_THREADS/TF_NUM_INTEROP_THREADS inherited: "
        f"{os.environ.get('TF_NUM_INTRAOP_THREADS', 'unset')}/"
        f"{os.environ.get('TF_NUM_INTEROP_THREADS', 'unset')}")
  pairs = []
  with tempfile.TemporaryDirectory(prefix="bench_parallel_runs_") as tmp:
    for rep in range(args.repeats):
      roots = {}
      for n in (1, args.n):
        roots[n] = os.path.join(tmp, f"rep{rep}_n{n}")
        wall, cpu = run_preset(args.preset, n, roots[n], only,
                               env_n if n != 1 else None,
                               args.flags_n if n != 1 else ())
        print(f"  repeat {rep + 1} --parallel_runs={n}: {wall:7.1f} s wall "
              f"{cpu:7.1f} CPU-s, {cpu / wall:.2f} cores busy  "
              f"({harness.load_line()})")
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
  for (_, w1, c1), (_, wn, cn) in zip(ones, ns):
    busy_1, busy_n, floor = utilization(w1, c1, wn, cn, ncores)
    print(f"  cores busy {busy_1:.2f} (N=1) vs {busy_n:.2f} (N={args.n}) of "
          f"{ncores}; floor of the wall ratio with N's CPU on {ncores} cores: "
          f"{floor:.2f}")


if __name__ == "__main__":
  main()
