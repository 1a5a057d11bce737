"""Runs every benchmark in turn (`make bench`; `make bench ARGS=--quick`).

  python -m benchmarks.run_all            # full sizes (about an hour on 2 cores)
  python -m benchmarks.run_all --quick    # smoke sizes, a few minutes
  python -m benchmarks.run_all --only bench_round_time,bench_workers

Each benchmark runs in its own process and prints its own ratios; this exits
non-zero (naming them) if any failed.
"""

import argparse
import subprocess
import sys

# (module, arguments of the full run, arguments of the quick run).
BENCHMARKS = (
    ("benchmarks.bench_partition", [], ["--repeats=1"]),
    ("benchmarks.bench_client_datasets", [], ["--quick"]),
    ("benchmarks.bench_round_time", [], ["--quick"]),
    ("benchmarks.bench_round_time", ["--model=mobilenet_v2_gn",
                                     "--variants=fedavg"],
     ["--model=mobilenet_v2_gn", "--variants=fedavg", "--quick"]),
    ("benchmarks.bench_memory", [], ["--quick"]),
    ("benchmarks.bench_workers", [], ["--quick"]),
    ("benchmarks.bench_small_clients", [], ["--quick"]),
    ("benchmarks.bench_realworld_builders", [], ["--skip_per_n_max"]),
    ("benchmarks.bench_parallel_runs", [], ["--quick"]),
)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--only", default="",
                      help="comma-separated module names (without package)")
  args = parser.parse_args(argv)
  only = {m for m in args.only.split(",") if m}
  unknown = only - {m.split(".")[-1] for m, _, _ in BENCHMARKS}
  if unknown:
    parser.error(f"--only: unknown benchmarks {sorted(unknown)}")
  failed = []
  for module, full, quick in BENCHMARKS:
    if only and module.split(".")[-1] not in only:
      continue
    extra = quick if args.quick else full
    print(f"== {module} {' '.join(extra)}", flush=True)
    if subprocess.call([sys.executable, "-m", module, *extra]) != 0:
      failed.append(" ".join([module, *extra]))
  if failed:
    print("failed: " + "; ".join(failed), file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
  main()
