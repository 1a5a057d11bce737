"""MNIST as a federated data set (McMahan et al. 2017).

Sources (no download ever happens):
  * tensorflow-datasets: `load_arrays_tfds(data_dir)` reads a prepared `mnist`
    under `data_dir` with `download=False`. tfds stores MNIST shuffled and has
    no 'id' feature, so its training order differs from the IDX files'.
  * the four canonical IDX files `train-images-idx3-ubyte.gz` etc. in a
    directory (`load_arrays_archive`), in file order.

Clients, as in McMahan et al. 2017: IID (100 clients x 600,
`partition.iid_partition`), pathological non-IID (200 shards of 300 sorted by
label, 2 per client, `partition.shard_partition`), or Dirichlet (Hsu et al.
2019). Raw elements are uint8 [28, 28, 1]; the model input `x` is float32
[28, 28, 1] in [0, 1]. There is no augmentation: `train_map_fn` ignores its
seed.
"""

from typing import Mapping, Optional

import numpy as np
import tensorflow as tf

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import partition as partition_lib
from federated_vision.data import archives

NUM_CLASSES = 10
INPUT_SHAPE = (28, 28, 1)
NUM_TRAIN = 60_000
PARTITIONS = ("iid", "shards", "dirichlet")


def load_arrays_tfds(data_dir: Optional[str] = None) -> archives.ImageArrays:
  """MNIST arrays from a prepared tensorflow-datasets directory.

  Raises:
    FileNotFoundError: MNIST is not prepared under `data_dir` (named).
  """
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  try:
    train, test = tfds.load("mnist", split=["train", "test"], data_dir=data_dir,
                            download=False, try_gcs=False)
  except (AssertionError, FileNotFoundError,
          tfds.core.registered.DatasetNotFoundError) as e:
    raise FileNotFoundError(
        f"tensorflow-datasets 'mnist' is not prepared under data_dir="
        f"{data_dir!r} (download=False; prepare it there with tfds, or use "
        f"the IDX files instead): {e}") from e
  train = archives.dataset_to_numpy(train, ["image", "label"])
  test = archives.dataset_to_numpy(test, ["image", "label"])
  arrays = archives.ImageArrays(
      np.asarray(train["image"], np.uint8), np.asarray(train["label"], np.int64),
      np.asarray(test["image"], np.uint8), np.asarray(test["label"], np.int64),
      [str(d) for d in range(NUM_CLASSES)], f"tfds:mnist@{data_dir}")
  archives.check_arrays(arrays, NUM_CLASSES, INPUT_SHAPE)
  return arrays


def load_arrays_archive(directory: str) -> archives.ImageArrays:
  """MNIST arrays from the four IDX files (gzipped or not) in `directory`."""
  arrays = archives.read_mnist(directory)
  archives.check_arrays(arrays, NUM_CLASSES, INPUT_SHAPE)
  return arrays


def load_arrays(data_dir: Optional[str] = None,
                archive: Optional[str] = None) -> archives.ImageArrays:
  """From the IDX directory `archive` when given, else tfds under `data_dir`."""
  if archive is not None and data_dir is not None:
    raise ValueError("give either data_dir (tfds) or archive, not both")
  if archive is not None:
    return load_arrays_archive(archive)
  return load_arrays_tfds(data_dir)


def _to_input(element: Mapping[str, tf.Tensor]) -> dict:
  x = tf.image.convert_image_dtype(element["x"], tf.float32)  # [0, 1].
  return {"x": tf.ensure_shape(x, INPUT_SHAPE),
          "y": tf.cast(element["y"], tf.int32)}


def train_map_fn(element: Mapping[str, tf.Tensor], seed: tf.Tensor) -> dict:
  """uint8 -> float32 [28, 28, 1] in [0, 1]; no augmentation (seed unused)."""
  del seed
  return _to_input(element)


def eval_map_fn(element: Mapping[str, tf.Tensor]) -> dict:
  """Same as `train_map_fn`."""
  return _to_input(element)


def make_partition(labels: np.ndarray, scheme: str = "iid", *,
                   num_clients: int = 100, examples_per_client: int = 600,
                   num_shards: int = 200, shards_per_client: int = 2,
                   alpha: Optional[float] = None, seed: int = 0):
  """McMahan et al.'s IID / shard partitions or Hsu et al.'s Dirichlet.

  Args:
    labels: training labels.
    scheme: 'iid' (num_clients x examples_per_client), 'shards' (num_shards
      label-sorted shards, shards_per_client each) or 'dirichlet' (alpha).
    num_clients: K for 'iid' and 'dirichlet'.
    examples_per_client: n for 'iid' and 'dirichlet'.
    num_shards: for 'shards'.
    shards_per_client: for 'shards'.
    alpha: for 'dirichlet'.
    seed: partition seed.

  Returns:
    (partition, info dict).
  """
  if scheme not in PARTITIONS:
    raise ValueError(f"scheme must be one of {PARTITIONS}, got {scheme!r}")
  if scheme == "iid":
    part = partition_lib.iid_partition(len(labels), num_clients,
                                       examples_per_client, seed=seed)
    info = {"num_clients": num_clients, "examples_per_client": examples_per_client}
  elif scheme == "shards":
    part = partition_lib.shard_partition(labels, num_shards, shards_per_client,
                                         seed=seed)
    info = {"num_shards": num_shards, "shards_per_client": shards_per_client}
  else:
    if alpha is None:
      raise ValueError("alpha is required for scheme='dirichlet'")
    part = partition_lib.dirichlet_partition(labels, num_clients,
                                             examples_per_client, alpha, seed=seed)
    info = {"num_clients": num_clients, "examples_per_client": examples_per_client,
            "alpha": float(alpha)}
  return part, dict(info, partition=scheme, partition_seed=seed)


def from_arrays(name: str, arrays: archives.ImageArrays,
                partition: Mapping[str, np.ndarray],
                storage_dir: Optional[str] = None,
                info: Optional[Mapping[str, object]] = None,
                max_inline_bytes: int = client_data_lib.MAX_INLINE_BYTES
                ) -> client_data_lib.FederatedDataset:
  """A `FederatedDataset` of raw uint8 [28, 28, 1] images + a partition.

  `storage_dir` is needed for the full training set (47 MB > the inline
  limit of `client_data.ArrayClientData`).
  """
  archives.check_arrays(arrays, NUM_CLASSES, INPUT_SHAPE)
  if not partition:
    raise ValueError("partition must have at least one client")
  cd = client_data_lib.ArrayClientData(
      {"x": arrays.train_x, "y": arrays.train_y.astype(np.int32)}, partition,
      storage_dir=storage_dir, max_inline_bytes=max_inline_bytes)
  test = tf.data.Dataset.from_tensor_slices(
      {"x": arrays.test_x, "y": arrays.test_y.astype(np.int32)})
  meta = archives.describe(arrays)
  meta.update(info or {})
  return client_data_lib.FederatedDataset(
      name=name, client_data=cd, test_data=test, train_map_fn=train_map_fn,
      eval_map_fn=eval_map_fn, num_classes=NUM_CLASSES,
      client_sizes={c: int(len(i)) for c, i in partition.items()},
      class_counts=partition_lib.class_counts(arrays.train_y, partition,
                                              NUM_CLASSES),
      input_shape=INPUT_SHAPE, info=meta)


def load_federated(scheme: str = "iid", *, data_dir: Optional[str] = None,
                   archive: Optional[str] = None, partition=None,
                   storage_dir: Optional[str] = None, partition_seed: int = 0,
                   **partition_kwargs) -> client_data_lib.FederatedDataset:
  """MNIST over clients (McMahan et al. 2017 / Hsu et al. 2019 settings).

  Args:
    scheme: 'iid', 'shards' or 'dirichlet' (see `make_partition`), ignored
      when `partition` is given.
    data_dir: tfds data directory (used when `archive` is None).
    archive: directory of the IDX files.
    partition: explicit client id -> training indices.
    storage_dir: per-client file directory (required for the full data set).
    partition_seed: seed of the partition.
    **partition_kwargs: `make_partition` arguments (num_clients, alpha, ...).

  Returns:
    A `FederatedDataset` named 'mnist'.
  """
  arrays = load_arrays(data_dir, archive)
  if partition is not None:
    if partition_kwargs:
      raise ValueError("partition and partition arguments are exclusive: "
                       f"{sorted(partition_kwargs)}")
    part, info = dict(partition), {"partition": "given"}
  else:
    part, info = make_partition(arrays.train_y, scheme, seed=partition_seed,
                                **partition_kwargs)
  return from_arrays("mnist", arrays, part, storage_dir=storage_dir, info=info)


def synthetic_arrays(num_train: int = 200, num_test: int = 40,
                     seed: int = 0) -> archives.ImageArrays:
  """Random uint8 28x28x1 images, balanced labels (test twin)."""
  return archives.synthetic_image_arrays(
      INPUT_SHAPE, [str(d) for d in range(NUM_CLASSES)], num_train, num_test,
      seed)


def synthetic(num_clients: int = 4, examples_per_client: int = 10,
              scheme: str = "iid", num_test: int = 20,
              seed: int = 0) -> client_data_lib.FederatedDataset:
  """Tiny random twin of `load_federated` with the same element structure."""
  n = max(num_clients * examples_per_client, NUM_CLASSES)
  arrays = synthetic_arrays(n, num_test, seed)
  kwargs = {}
  if scheme == "shards":
    kwargs = {"num_shards": 2 * num_clients, "shards_per_client": 2}
  elif scheme in ("iid", "dirichlet"):
    kwargs = {"num_clients": num_clients, "examples_per_client": examples_per_client}
    if scheme == "dirichlet":
      kwargs["alpha"] = 1.0
  part, info = make_partition(arrays.train_y, scheme, seed=seed, **kwargs)
  return from_arrays("synthetic_mnist", arrays, part,
                     info=dict(info, synthetic=True))
