"""Runs every benchmark in turn (`make bench`)."""

import subprocess
import sys

BENCHMARKS = ("benchmarks.bench_partition", "benchmarks.bench_client_datasets",
              "benchmarks.bench_realworld_builders")


def main():
  failed = []
  for module in BENCHMARKS:
    print(f"== {module}", flush=True)
    if subprocess.call([sys.executable, "-m", module]) != 0:
      failed.append(module)
  if failed:
    print("failed: " + ", ".join(failed), file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
  main()
