"""The one partition dispatcher: training labels -> clients.

Schemes (every task with in-memory labels uses this; the real-world image
tasks read their split CSV directly):
  * dirichlet (Hsu, Qi & Brown 2019): q_k ~ Dir(alpha p), K x n examples.
  * dirichlet_per_class (Yurochkin et al. 2019 as in NIID-Bench, FedLab,
    Flower): each class divided over the K clients by Dir(alpha 1_K); every
    example used, client sizes vary (`data.partition_per_class`).
  * iid (McMahan et al. 2017): a random equal share, K x n examples.
  * shards (McMahan et al. 2017): label-sorted examples cut into 2K shards,
    2 per client (MNIST: 200 shards of 300); leftovers (N mod 2K) dropped.
  * a published `user_id,image_id,class` split CSV (`split_io`).
"""

import os
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from federated_vision.data import partition as partition_lib
from federated_vision.data import partition_per_class

SCHEMES = ("dirichlet", "iid", "shards", "dirichlet_per_class")
# Schemes that use every training example, so --examples_per_client is not
# theirs to set (shards: N / (2K) each; dirichlet_per_class: sizes vary).
SIZED_BY_DATA = ("shards", "dirichlet_per_class")
SHARDS_PER_CLIENT = 2


def make_partition(labels: Sequence[int], scheme: Optional[str] = None, *,
                   split_csv: Optional[str] = None,
                   num_clients: Optional[int] = None,
                   examples_per_client: Optional[int] = None,
                   alpha: Optional[float] = None,
                   seed: int = 0) -> Tuple[partition_lib.Partition, Dict]:
  """Partitions the examples of `labels` by `scheme` or a split CSV.

  Args:
    labels: training labels; indices into them are what clients hold.
    scheme: one of `SCHEMES`, or None with `split_csv`.
    split_csv: a published split whose image ids index `labels`.
    num_clients: K (all schemes).
    examples_per_client: n (dirichlet, iid).
    alpha: the Dirichlet concentration (dirichlet, dirichlet_per_class).
    seed: partition seed.

  Returns:
    (client id -> sorted example indices, info dict: partition, its
    parameters, partition_seed or split_csv).

  Raises:
    ValueError: missing/inconsistent arguments, or what the partition
      functions raise (e.g. not enough examples of a class).
  """
  labels = np.asarray(labels)
  if (scheme is None) == (split_csv is None):
    raise ValueError("give exactly one of a partition scheme or split_csv")
  if split_csv is not None:
    from federated_vision.data import indexed_splits  # pylint: disable=g-import-not-at-top
    split = indexed_splits.read_split_csv(split_csv, labels=labels)
    return split.partition, {"partition": "csv",
                             "split_csv": os.path.abspath(split_csv)}
  if scheme not in SCHEMES:
    raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}, got "
                     f"{scheme!r}")
  if num_clients is None:
    raise ValueError(f"num_clients is required for scheme={scheme!r}")
  k, n = num_clients, examples_per_client
  if scheme not in SIZED_BY_DATA and n is None:
    raise ValueError(f"examples_per_client is required for scheme={scheme!r}")
  if scheme == "iid":
    part = partition_lib.iid_partition(len(labels), k, n, seed=seed)
    info = {"num_clients": k, "examples_per_client": n}
  elif scheme == "shards":
    part, info = partition_lib.client_shard_partition(
        labels, k, SHARDS_PER_CLIENT, seed=seed)
  elif scheme == "dirichlet_per_class":
    if alpha is None:
      raise ValueError("alpha is required for scheme='dirichlet_per_class'")
    part, info = partition_per_class.dirichlet_per_class_partition(
        labels, k, alpha, seed=seed)
    info = dict(info, num_clients=k, alpha=float(alpha))
  else:
    if alpha is None:
      raise ValueError("alpha is required for scheme='dirichlet'")
    part = partition_lib.dirichlet_partition(labels, k, n, alpha, seed=seed)
    info = {"num_clients": k, "examples_per_client": n, "alpha": float(alpha)}
  return part, dict(info, partition=scheme, partition_seed=seed)
