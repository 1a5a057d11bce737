"""MNIST as a federated data set (McMahan et al. 2017).

Sources (no download ever happens):
  * tensorflow-datasets: `load_arrays_tfds(data_dir)` reads a prepared `mnist`
    under `data_dir` with `download=False`. tfds stores MNIST shuffled and has
    no 'id' feature, so its training order differs from the IDX files'.
  * the four canonical IDX files `train-images-idx3-ubyte.gz` etc. in a
    directory (`load_arrays_archive`), in file order.

Clients, as in McMahan et al. 2017: IID (100 clients x 600), pathological
non-IID (200 shards of 300 sorted by label, 2 per client), or Dirichlet (Hsu
et al. 2019); the tasks `mnist` / `synthetic_mnist` (`federated_vision.tasks`)
choose it with `tasks.partitions.make_partition` and call `from_arrays`. Raw elements are uint8 [28, 28, 1]; the model input `x` is float32
[28, 28, 1] in [0, 1]. There is no augmentation: `train_map_fn` ignores its
seed.
"""

from typing import Mapping, Optional

import numpy as np
import tensorflow as tf

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import in_graph_client_data
from federated_vision.data import partition as partition_lib
from federated_vision.data import archives

NUM_CLASSES = 10
INPUT_SHAPE = (28, 28, 1)
NUM_TRAIN = 60_000


def load_arrays_tfds(data_dir: Optional[str] = None) -> archives.ImageArrays:
  """MNIST arrays from a prepared tensorflow-datasets directory.

  Raises:
    FileNotFoundError: MNIST is not prepared under `data_dir` (named).
  """
  (train, test), _ = archives.load_prepared_tfds("mnist", data_dir,
                                                 "the IDX files")
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


def from_arrays(name: str, arrays: archives.ImageArrays,
                partition: Mapping[str, np.ndarray],
                storage_dir: Optional[str] = None,
                info: Optional[Mapping[str, object]] = None,
                max_inline_bytes: int = in_graph_client_data.MAX_INLINE_BYTES
                ) -> client_data_lib.FederatedDataset:
  """A `FederatedDataset` of raw uint8 [28, 28, 1] images + a partition.

  `storage_dir` is needed for the full training set (47 MB > the inline
  limit of `in_graph_client_data.ArrayClientData`).
  """
  archives.check_arrays(arrays, NUM_CLASSES, INPUT_SHAPE)
  if not partition:
    raise ValueError("partition must have at least one client")
  cd = in_graph_client_data.ArrayClientData(
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


def synthetic_arrays(num_train: int = 200, num_test: int = 40,
                     seed: int = 0) -> archives.ImageArrays:
  """Random uint8 28x28x1 images, balanced labels (test twin)."""
  return archives.synthetic_image_arrays(
      INPUT_SHAPE, [str(d) for d in range(NUM_CLASSES)], num_train, num_test,
      seed)
