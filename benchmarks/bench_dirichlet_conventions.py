"""The EMD of the two Dirichlet conventions at CIFAR-10 shapes (docs/datasets).

Same alpha, different partitions: `--partition=dirichlet` (Hsu, Qi & Brown
2019: q_k ~ Dir(alpha p) per client, 100 clients x 500) and
`--partition=dirichlet_per_class` (NIID-Bench / FedLab / Flower: each class
divided over the 100 clients by Dir(alpha 1_K), all 50,000 examples). The
EMD is Hsu, Qi & Brown 2020's average EMD (Section 6.1,
`partition.emd_noniidness`).

The labels are CIFAR-10's class sizes (10 classes x 5,000); both partitions'
class counts depend only on those sizes and the seed, not on the order of the
examples, so the numbers are those of the real CIFAR-10 training set.

Run: `python -m benchmarks.bench_dirichlet_conventions [--seed=0]`; prints the
markdown table of docs/datasets.md. tests/data/test_partition_per_class.py
checks that page against `table()`.
"""

import argparse
import sys
from typing import List

import numpy as np

from federated_vision.data import partition as partition_lib
from federated_vision.data import partition_per_class

ALPHAS = (0.1, 0.5, 1.0, 10.0)
NUM_CLIENTS = 100
EXAMPLES_PER_CLIENT = 500
CLASS_SIZES = (5000,) * 10


def table(seed: int = 0, alphas=ALPHAS, num_clients: int = NUM_CLIENTS,
          examples_per_client: int = EXAMPLES_PER_CLIENT,
          class_sizes=CLASS_SIZES) -> List[dict]:
  """One row per alpha: both conventions' EMD and the per-class client sizes.

  Returns:
    [{"alpha", "emd_dirichlet", "emd_per_class", "per_class_min_size",
    "per_class_max_size", "per_class_draws"}].
  """
  labels = np.repeat(np.arange(len(class_sizes)), class_sizes)
  rows = []
  for alpha in alphas:
    hsu = partition_lib.dirichlet_partition(labels, num_clients,
                                            examples_per_client, alpha,
                                            seed=seed)
    per_class, info = partition_per_class.dirichlet_per_class_partition(
        labels, num_clients, alpha, seed=seed)
    counts = partition_lib.class_counts(labels, per_class)
    sizes = counts.sum(axis=1)
    rows.append({
        "alpha": alpha,
        "emd_dirichlet": partition_lib.emd_noniidness(
            partition_lib.class_counts(labels, hsu)),
        "emd_per_class": partition_lib.emd_noniidness(counts),
        "per_class_min_size": int(sizes.min()),
        "per_class_max_size": int(sizes.max()),
        "per_class_draws": info["draws"]})
  return rows


def markdown(rows: List[dict]) -> str:
  """The table of docs/datasets.md."""
  lines = ["| α | EMD, `dirichlet` (Hsu: Dir(α·p) per client, 100 × 500) | "
           "EMD, `dirichlet_per_class` (Dir(α·1_K) per class) | "
           "`dirichlet_per_class` client sizes |",
           "|---|---|---|---|"]
  for r in rows:
    lines.append(f"| {r['alpha']:g} | {r['emd_dirichlet']:.3f} | "
                 f"{r['emd_per_class']:.3f} | {r['per_class_min_size']}–"
                 f"{r['per_class_max_size']} |")
  return "\n".join(lines)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  print(markdown(table(args.seed)))
  return 0


if __name__ == "__main__":
  sys.exit(main())
