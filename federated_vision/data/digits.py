"""scikit-learn's handwritten digits as a federated data set (no download).

1,797 8x8 grey-scale images of the digits 0-9 ship inside scikit-learn. A fixed
stratified split holds out 20% for centralized testing; the training part is
partitioned over clients with the Dirichlet scheme of Hsu et al. 2019
(q_k ~ Dir(alpha p)), with equal client sizes or heavy-tailed ones, McMahan's
shards, or the per-class Dirichlet (`partition_per_class`).
"""

from typing import Optional

import numpy as np
import tensorflow as tf

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import in_graph_client_data
from federated_vision.data import partition as partition_lib
from federated_vision.data import partition_per_class

NUM_CLASSES = 10
INPUT_SHAPE = (8, 8, 1)


def load_arrays(test_fraction: float = 0.2, split_seed: int = 0):
  """(x_train, y_train, x_test, y_test); x float32 in [0, 1], [N, 8, 8, 1]."""
  # Local: scikit-learn is a heavy optional dependency (its digits data).
  from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top
  if not 0 < test_fraction < 1:
    raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
  digits = sk_datasets.load_digits()
  x = (digits.images.astype(np.float32) / 16.0)[..., None]
  y = digits.target.astype(np.int64)
  rng = np.random.default_rng(split_seed)
  test = np.zeros(len(y), bool)
  for c in range(NUM_CLASSES):  # Stratified: the same fraction of each class.
    idx = rng.permutation(np.flatnonzero(y == c))
    test[idx[:int(round(len(idx) * test_fraction))]] = True
  return x[~test], y[~test], x[test], y[test]


def _identity_train(element, seed):
  del seed
  return {"x": element["x"], "y": element["y"]}


def _identity_eval(element):
  return {"x": element["x"], "y": element["y"]}


def from_arrays(name: str, x_train, y_train, x_test, y_test,
                partition: partition_lib.Partition, num_classes: int,
                info: Optional[dict] = None) -> client_data_lib.FederatedDataset:
  """FederatedDataset over in-memory arrays (no augmentation)."""
  cd = in_graph_client_data.ArrayClientData({"x": x_train, "y": y_train}, partition)
  test = tf.data.Dataset.from_tensor_slices({"x": x_test, "y": y_test})
  counts = partition_lib.class_counts(y_train, partition, num_classes)
  return client_data_lib.FederatedDataset(
      name=name, client_data=cd, test_data=test,
      train_map_fn=_identity_train, eval_map_fn=_identity_eval,
      num_classes=num_classes,
      client_sizes={c: int(len(i)) for c, i in partition.items()},
      class_counts=counts, input_shape=tuple(x_train.shape[1:]),
      info=dict(info or {}))


def load_federated(num_clients: int = 20, alpha: float = 0.5,
                   seed: int = 0, imbalance_sigma: Optional[float] = None,
                   partition: str = "dirichlet",
                   ) -> client_data_lib.FederatedDataset:
  """Digits partitioned over `num_clients`: q_k ~ Dir(alpha p), or shards.

  Args:
    num_clients: K.
    alpha: Dirichlet concentration (0 = one class per client, inf = IID
      class proportions); unused with `partition='shards'`.
    seed: partition seed.
    imbalance_sigma: None for equal client sizes (len(train) // K each);
      otherwise client sizes are log-normal with this sigma (heavy-tailed),
      at least 5 examples each, using the whole training set (dirichlet
      only).
    partition: 'dirichlet', or 'shards': McMahan et al.'s pathological
      non-IID split (label-sorted examples cut into 2K shards, 2 per client;
      `partition.client_shard_partition`), or 'dirichlet_per_class': each
      class divided over the clients by Dir(alpha 1_K), all training
      examples, sizes vary (`partition_per_class`).

  Returns:
    A `FederatedDataset` named 'digits'.
  """
  x_tr, y_tr, x_te, y_te = load_arrays()
  if not 0 < num_clients <= len(y_tr):
    raise ValueError(f"num_clients must be in [1, {len(y_tr)}], got {num_clients}")
  info = {"source": "sklearn.datasets.load_digits",
          "train_examples": int(len(y_tr)), "test_examples": int(len(y_te)),
          "num_clients": num_clients}
  if partition == "shards":
    if imbalance_sigma is not None:
      raise ValueError("imbalance_sigma: shards give every client 2 shards "
                       "of equal size")
    part, shard_info = partition_lib.client_shard_partition(
        y_tr, num_clients, seed=seed)
    info.update(shard_info, partition="shards", partition_seed=seed)
  elif partition == "dirichlet":
    if imbalance_sigma is None:
      sizes = [len(y_tr) // num_clients] * num_clients
    else:
      sizes = partition_lib.heavy_tailed_sizes(
          num_clients, len(y_tr), imbalance_sigma, min_size=5, seed=seed)
    part = partition_lib.dirichlet_partition_with_sizes(
        y_tr, sizes, alpha, seed=seed)
    info.update(alpha=alpha, imbalance_sigma=imbalance_sigma)
  elif partition == "dirichlet_per_class":
    if imbalance_sigma is not None:
      raise ValueError("imbalance_sigma: the per-class Dirichlet partition "
                       "sets the client sizes itself")
    part, draw_info = partition_per_class.dirichlet_per_class_partition(
        y_tr, num_clients, alpha, seed=seed)
    info.update(draw_info, alpha=alpha, partition=partition,
                partition_seed=seed)
  else:
    raise ValueError(f"partition must be dirichlet, shards or "
                     f"dirichlet_per_class, got {partition!r}")
  return from_arrays("digits", x_tr, y_tr, x_te, y_te, part, NUM_CLASSES,
                     info=info)


def synthetic(num_clients: int = 3, examples_per_client: int = 12,
              num_test: int = 20, seed: int = 0) -> client_data_lib.FederatedDataset:
  """Tiny random twin of `load_federated` with the same element structure."""
  rng = np.random.default_rng(seed)
  n = num_clients * examples_per_client
  x = rng.random((n + num_test,) + INPUT_SHAPE, dtype=np.float32)
  y = rng.integers(0, NUM_CLASSES, n + num_test).astype(np.int64)
  partition = partition_lib.iid_partition(n, num_clients, seed=seed)
  return from_arrays("synthetic_digits", x[:n], y[:n], x[n:], y[n:],
                     partition, NUM_CLASSES, info={"synthetic": True})
