"""Statistics JSON and figures of federated splits (Hsu, Qi & Brown 2020).

Per split: number of clients, examples and classes, examples-per-client and
classes-per-client summaries, the average EMD non-identicalness
(`partition.emd_noniidness` against the clients' population distribution,
plus `emd_reference` against the balanced set's distribution when the two
differ), and two PNGs like the paper's Figures 2-3:
examples per client against client rank (log scale) and the distribution of
classes per client.
"""

import os
from typing import Dict, Mapping, Optional, Sequence

import numpy as np

from federated_vision.data import partition


def split_stats(client_of_example: Sequence[str], labels: Sequence[int],
                num_classes: Optional[int] = None,
                extra: Optional[Mapping[str, object]] = None,
                reference: Optional[Sequence[float]] = None) -> dict:
  """`partition.partition_stats` of a split given per-example client ids."""
  clients = np.asarray(client_of_example, dtype=object)
  labels = np.asarray(labels, dtype=np.int64)
  if clients.size == 0:
    out = {"num_clients": 0, "num_examples": 0,
           "num_classes": int(num_classes or 0)}
  else:
    uniq, inverse = np.unique(clients.astype(str), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(uniq)))[:-1]
    parts = dict(zip(uniq.tolist(), np.split(order, bounds)))
    out = partition.partition_stats(labels, parts, num_classes, reference)
    out["num_classes_present"] = int(np.unique(labels).size)
  if extra:
    out.update(extra)
  return out


def plot_split(name: str, sizes: Sequence[int], classes_per_client: Sequence[int],
               output_dir: str) -> Dict[str, str]:
  """Writes `<name>_examples_per_client.png` and `<name>_classes_per_client.png`."""
  # Local: matplotlib is a heavy optional dependency, loaded only to draw.
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  os.makedirs(output_dir, exist_ok=True)
  paths = {}
  sizes = np.sort(np.asarray(sizes))[::-1]
  fig, ax = plt.subplots(figsize=(4, 3))
  ax.plot(np.arange(1, sizes.size + 1), sizes)
  ax.set_yscale("log")
  ax.set_xlabel("client rank")
  ax.set_ylabel("examples per client")
  ax.set_title(f"{name}: {sizes.size} clients, {int(sizes.sum())} examples",
               fontsize=8)
  fig.tight_layout()
  paths["examples_per_client"] = os.path.join(
      output_dir, f"{name}_examples_per_client.png")
  fig.savefig(paths["examples_per_client"], metadata={"Software": None})
  plt.close(fig)
  cpc = np.asarray(classes_per_client)
  fig, ax = plt.subplots(figsize=(4, 3))
  ax.hist(cpc, bins=min(50, max(1, int(cpc.max()) if cpc.size else 1)))
  ax.set_xlabel("classes per client")
  ax.set_ylabel("clients")
  ax.set_title(f"{name}: classes per client", fontsize=8)
  fig.tight_layout()
  paths["classes_per_client"] = os.path.join(
      output_dir, f"{name}_classes_per_client.png")
  fig.savefig(paths["classes_per_client"], metadata={"Software": None})
  plt.close(fig)
  return paths


def report_split(name: str, client_of_example: Sequence[str],
                 labels: Sequence[int], num_classes: int, output_dir: str,
                 extra: Optional[Mapping[str, object]] = None,
                 plots: bool = True,
                 reference: Optional[Sequence[float]] = None) -> dict:
  """Stats of one split (+ PNGs when `plots`); `reference` p as in
  `partition.partition_stats`."""
  stats = split_stats(client_of_example, labels, num_classes, extra, reference)
  if plots and stats["num_examples"]:
    clients = np.asarray(client_of_example, dtype=object).astype(str)
    labels = np.asarray(labels, np.int64)
    uniq, inverse = np.unique(clients, return_inverse=True)
    sizes = np.bincount(inverse)
    pairs = np.unique(inverse.astype(np.int64) * (num_classes + 1) + labels)
    cpc = np.bincount(pairs // (num_classes + 1), minlength=uniq.size)
    stats["figures"] = {k: os.path.basename(v) for k, v in
                        plot_split(name, sizes, cpc, output_dir).items()}
  return stats


def write_json(path: str, obj) -> str:
  """`federated_vision.evaluation.reporting.write_json` (atomic, sorted keys).

  Imported on use: `evaluation.reporting` imports TensorFlow (through
  `evaluation.metrics`), which the builders otherwise never load.
  """
  # Local: evaluation.reporting imports TensorFlow (see the docstring).
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  return reporting.write_json(path, obj)
