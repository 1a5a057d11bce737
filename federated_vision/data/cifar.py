"""CIFAR-10 / CIFAR-100 as federated data sets (Hsu, Qi & Brown 2019).

Sources (no download ever happens):
  * tensorflow-datasets: `load_arrays_tfds(name, data_dir)` reads a prepared
    `cifar10` / `cifar100` under `data_dir` (`download=False`); the training
    examples are put back in the original file order using tfds' 'id'
    feature ('train_00042' -> 42), so indices match the published splits.
  * the canonical archives `cifar-10-python.tar.gz` / `cifar-100-python.tar.gz`
    (`load_arrays_archive`), see `federated_vision.data.archives`.

Clients: a partition of the 50,000 training indices, e.g. Hsu et al. 2019's
Dirichlet partition into 100 clients of 500, or a published split CSV; the
tasks `cifar10` / `cifar100` / `synthetic_cifar10` (`federated_vision.tasks`)
choose it with `tasks.partitions.make_partition` and call `from_arrays`.

Preprocessing (McMahan et al. 2017, Section 3, after the TensorFlow CIFAR-10
tutorial): raw elements are uint8 32x32x3 images. Training: random 24x24
crop, random left-right flip, random brightness (max delta 63/255) and
contrast (factor in [0.2, 1.8]), per-image standardisation. Evaluation:
centre 24x24 crop, per-image standardisation. Training randomness uses only
stateless ops keyed by the `seed` argument, so every run is reproducible.
"""

import re
from typing import Mapping, Optional

import numpy as np
import tensorflow as tf

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import in_graph_client_data
from federated_vision.data import partition as partition_lib
from federated_vision.data import archives

NUM_CLASSES = {"cifar10": 10, "cifar100": 100}
IMAGE_SHAPE = (32, 32, 3)
CROP_SIZE = 24
INPUT_SHAPE = (CROP_SIZE, CROP_SIZE, 3)
NUM_TRAIN = 50_000
MAX_BRIGHTNESS_DELTA = 63.0 / 255.0  # 63 on the tutorial's [0, 255] scale.
CONTRAST_RANGE = (0.2, 1.8)


def _check_name(name: str) -> None:
  if name not in NUM_CLASSES:
    raise ValueError(f"name must be one of {sorted(NUM_CLASSES)}, got {name!r}")


def num_classes_of(name: str, label_mode: str = "fine") -> int:
  """10 for cifar10, 100 (fine) or 20 (coarse) for cifar100."""
  _check_name(name)
  if label_mode not in ("fine", "coarse"):
    raise ValueError(f"label_mode must be 'fine' or 'coarse', got {label_mode!r}")
  return 20 if (name == "cifar100" and label_mode == "coarse") else NUM_CLASSES[name]


def _id_order(ids: np.ndarray, prefix: str) -> Optional[np.ndarray]:
  """Permutation putting tfds examples in file order, or None if ids lack it."""
  pattern = re.compile(rf"^{prefix}_(\d+)$")
  index = []
  for i in ids:
    match = pattern.match(i.decode() if isinstance(i, bytes) else str(i))
    if not match:
      return None
    index.append(int(match.group(1)))
  index = np.asarray(index, np.int64)
  if not np.array_equal(np.sort(index), np.arange(len(index))):
    return None
  return np.argsort(index)


def load_arrays_tfds(name: str = "cifar10", data_dir: Optional[str] = None,
                     label_mode: str = "fine") -> archives.ImageArrays:
  """CIFAR arrays from a prepared tensorflow-datasets directory.

  Args:
    name: 'cifar10' or 'cifar100'.
    data_dir: the tfds data directory (None: tfds' default,
      ~/tensorflow_datasets). Nothing is downloaded.
    label_mode: CIFAR-100 'fine' (100) or 'coarse' (20) labels.

  Returns:
    `archives.ImageArrays`; training examples in the original file order when
    tfds' 'id' feature allows (info 'order' says which).

  Raises:
    FileNotFoundError: the data set is not prepared under `data_dir` (the
      message names `data_dir`).
  """
  num_classes = num_classes_of(name, label_mode)
  (train, test), info = archives.load_prepared_tfds(name, data_dir,
                                                    "the archive path")
  label_key = "coarse_label" if label_mode == "coarse" else "label"
  out = []
  keys = ["image", label_key] + (["id"] if "id" in train.element_spec else [])
  for split, ds in (("train", train), ("test", test)):
    ds = archives.dataset_to_numpy(ds, keys)
    x = np.asarray(ds["image"], np.uint8)
    y = np.asarray(ds[label_key], np.int64)
    if "id" in ds:
      order = _id_order(np.asarray(ds["id"]), split)
      if order is not None:
        x, y = x[order], y[order]
    out += [x, y]
  names = list(getattr(info.features[label_key], "names", None) or [])
  if len(names) != num_classes:
    names = [str(c) for c in range(num_classes)]
  arrays = archives.ImageArrays(*out, names,
                                f"tfds:{name}@{data_dir}")
  archives.check_arrays(arrays, num_classes, IMAGE_SHAPE)
  return arrays


def load_arrays_archive(path: str, name: str = "cifar10",
                        label_mode: str = "fine") -> archives.ImageArrays:
  """CIFAR arrays from `cifar-10-python.tar.gz` / `cifar-100-python.tar.gz`.

  Args:
    path: the archive, or a directory holding it or its extracted folder.
    name: 'cifar10' or 'cifar100'.
    label_mode: CIFAR-100 'fine' or 'coarse'.

  Returns:
    `archives.ImageArrays` in file order (index = published `image_id`).
  """
  num_classes = num_classes_of(name, label_mode)
  arrays = (archives.read_cifar10(path) if name == "cifar10"
            else archives.read_cifar100(path, label_mode))
  archives.check_arrays(arrays, num_classes, IMAGE_SHAPE)
  return arrays


def load_arrays(name: str = "cifar10", data_dir: Optional[str] = None,
                archive: Optional[str] = None,
                label_mode: str = "fine") -> archives.ImageArrays:
  """From `archive` when given, else from tfds under `data_dir`."""
  if archive is not None and data_dir is not None:
    raise ValueError("give either data_dir (tfds) or archive, not both")
  if archive is not None:
    return load_arrays_archive(archive, name, label_mode)
  return load_arrays_tfds(name, data_dir, label_mode)


def _to_float(image: tf.Tensor) -> tf.Tensor:
  return tf.image.convert_image_dtype(image, tf.float32)  # uint8 -> [0, 1].


def train_map_fn(element: Mapping[str, tf.Tensor],
                 seed: tf.Tensor) -> dict:
  """McMahan et al.'s training augmentation, stateless and keyed by `seed`.

  Random 24x24 crop, left-right flip, brightness (+-63/255), contrast
  ([0.2, 1.8]), then per-image standardisation.

  Args:
    element: {'x': uint8 [32, 32, 3], 'y': int}.
    seed: int [2] stateless seed (from `client_data.build_training_dataset_fn`).

  Returns:
    {'x': float32 [24, 24, 3], 'y': int32 scalar}.
  """
  seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 4)
  image = _to_float(element["x"])
  image = tf.image.stateless_random_crop(image, INPUT_SHAPE, seed=seeds[0])
  image = tf.image.stateless_random_flip_left_right(image, seed=seeds[1])
  image = tf.image.stateless_random_brightness(image, MAX_BRIGHTNESS_DELTA,
                                               seed=seeds[2])
  image = tf.image.stateless_random_contrast(image, *CONTRAST_RANGE,
                                             seed=seeds[3])
  image = tf.image.per_image_standardization(image)
  return {"x": tf.ensure_shape(image, INPUT_SHAPE),
          "y": tf.cast(element["y"], tf.int32)}


def eval_map_fn(element: Mapping[str, tf.Tensor]) -> dict:
  """Centre 24x24 crop and per-image standardisation (no randomness)."""
  image = tf.image.resize_with_crop_or_pad(_to_float(element["x"]), CROP_SIZE,
                                           CROP_SIZE)
  image = tf.image.per_image_standardization(image)
  return {"x": tf.ensure_shape(image, INPUT_SHAPE),
          "y": tf.cast(element["y"], tf.int32)}


def from_arrays(name: str, arrays: archives.ImageArrays,
                partition: Mapping[str, np.ndarray], num_classes: int,
                storage_dir: Optional[str] = None,
                info: Optional[Mapping[str, object]] = None,
                max_inline_bytes: int = in_graph_client_data.MAX_INLINE_BYTES
                ) -> client_data_lib.FederatedDataset:
  """A `FederatedDataset` of raw uint8 images + a partition of train indices.

  Args:
    name: data set name recorded in the result.
    arrays: images and labels (train indices are what `partition` refers to).
    partition: client id -> training indices.
    num_classes: number of classes.
    storage_dir: where `ArrayClientData` writes per-client files when the
      training arrays exceed its inline limit (needed for the real data set:
      50,000 x 3,072 bytes).
    info: extra metadata.

  Returns:
    The `FederatedDataset` (raw elements {'x': uint8 [32, 32, 3], 'y': int32}).
  """
  archives.check_arrays(arrays, num_classes)
  if not partition:
    raise ValueError("partition must have at least one client")
  y_train = arrays.train_y.astype(np.int32)
  cd = in_graph_client_data.ArrayClientData({"x": arrays.train_x, "y": y_train},
                                       partition, storage_dir=storage_dir,
                                       max_inline_bytes=max_inline_bytes)
  test = tf.data.Dataset.from_tensor_slices(
      {"x": arrays.test_x, "y": arrays.test_y.astype(np.int32)})
  counts = partition_lib.class_counts(arrays.train_y, partition, num_classes)
  meta = archives.describe(arrays)
  meta.update({"label_names": list(arrays.label_names),
               "preprocessing": "McMahan et al. 2017: train random 24x24 crop, "
                                "flip, brightness/contrast, standardise; eval "
                                "centre crop, standardise"})
  meta.update(info or {})
  return client_data_lib.FederatedDataset(
      name=name, client_data=cd, test_data=test, train_map_fn=train_map_fn,
      eval_map_fn=eval_map_fn, num_classes=num_classes,
      client_sizes={c: int(len(i)) for c, i in partition.items()},
      class_counts=counts, input_shape=INPUT_SHAPE, info=meta)


def synthetic_arrays(num_train: int = 200, num_test: int = 40,
                     num_classes: int = 10, seed: int = 0) -> archives.ImageArrays:
  """Random uint8 32x32x3 images with balanced labels (test twin)."""
  return archives.synthetic_image_arrays(
      IMAGE_SHAPE, [f"class_{c}" for c in range(num_classes)], num_train,
      num_test, seed)
