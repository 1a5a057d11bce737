"""Times the Dirichlet partition of the CIFAR-10 training index.

Hsu, Qi & Brown 2019 split the 50,000 CIFAR-10 training examples (10 balanced
classes) into 100 clients of 500 for alpha in {100, 1, 0.1, 0}. Each must take
under one second. Run: `python -m benchmarks.bench_partition`.

Exit status 1 if any alpha's best-of-`--repeats` time exceeds the budget.
"""

import argparse
import sys
import time

import numpy as np

from federated_vision.data import partition

ALPHAS = (100.0, 1.0, 0.1, 0.0)
BUDGET_SEC = 1.0


def run(repeats: int = 3, seed: int = 0) -> dict:
  """Best wall time (s) per alpha, plus each partition's EMD."""
  labels = np.repeat(np.arange(10), 5000)
  np.random.default_rng(seed).shuffle(labels)
  results = {}
  for alpha in ALPHAS:
    times = []
    for r in range(repeats):
      start = time.perf_counter()
      part = partition.dirichlet_partition(labels, 100, 500, alpha, seed=seed + r)
      times.append(time.perf_counter() - start)
    assert len(part) == 100 and all(len(v) == 500 for v in part.values())
    emd = partition.emd_noniidness(partition.class_counts(labels, part))
    results[alpha] = {"seconds": min(times), "emd": emd}
  return results


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  if args.repeats < 1:
    parser.error("--repeats must be >= 1")
  results = run(args.repeats, args.seed)
  ok = True
  print("Dirichlet partition, CIFAR-10 index: 50,000 examples -> 100 clients x 500")
  for alpha, r in results.items():
    status = "ok" if r["seconds"] < BUDGET_SEC else "OVER BUDGET"
    ok &= r["seconds"] < BUDGET_SEC
    print(f"  alpha={alpha:>6g}: {r['seconds'] * 1000:8.2f} ms  "
          f"(EMD {r['emd']:.3f})  {status} (< {BUDGET_SEC:g} s)")
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
