"""Synthetic twins of the real-world loaders (tiny JPEGs, published CSVs).

`synthetic_inaturalist` and `synthetic_landmarks` write a few random JPEGs
and a split in the published format under a directory, then open it with the
real loaders (`image_data`), so they return `FederatedDataset`s with exactly
the real element structure. Used by smoke runs of the experiment binaries
(`--dataset=synthetic_inaturalist|synthetic_landmarks`) and by tests.
"""

import os
from typing import Sequence

import numpy as np

from federated_vision.data import split_io
from federated_vision.realworld import image_data

# iNaturalist-like source ids of the synthetic classes (`label` column):
# class c is source category LABEL_OFFSET + 7 * c, deliberately not 0..K-1.
LABEL_OFFSET = 100


def write_jpeg(path: str, seed: int, size=(12, 16)) -> None:
  """A small random RGB JPEG (decodable by PIL and tf.io.decode_jpeg)."""
  # Local: PIL is a heavy optional dependency, loaded only to write JPEGs.
  from PIL import Image  # pylint: disable=g-import-not-at-top
  os.makedirs(os.path.dirname(path), exist_ok=True)
  rng = np.random.default_rng(seed)
  pixels = rng.integers(0, 256, size=(size[0], size[1], 3), dtype=np.uint8)
  Image.fromarray(pixels).save(path, "JPEG")


def write_images(root: str, relative_paths: Sequence[str], seed: int = 0) -> None:
  """A distinct random JPEG at each `root/relative path`."""
  for i, rel in enumerate(relative_paths):
    write_jpeg(os.path.join(root, rel), seed * 1_000_003 + i)


def write_synthetic_split(root: str, num_clients: int, examples_per_client: int,
                          num_classes: int, seed: int = 0,
                          num_test: int = 8, with_label: bool = True):
  """A published-format split, its test file and the JPEGs under `root`.

  Client k gets examples of classes (k + j) % num_classes. With `with_label`
  (iNaturalist) the files are `user_id,image_id,class,label` and
  `image_id,class,label`, `label` = LABEL_OFFSET + 7 * class; otherwise
  (Landmarks) `user_id,image_id,class` and `image_id,class`.

  Returns:
    (split_csv_path, test_csv_path).
  """
  def row(*fields, c):
    return fields + ((c, LABEL_OFFSET + 7 * c) if with_label else (c,))

  rows, rel = [], []
  for k in range(num_clients):
    for j in range(examples_per_client):
      image_id = f"img{k:04d}_{j:03d}"
      rows.append(row(f"u{k:04d}", image_id, c=(k + j) % num_classes))
      rel.append(f"{image_id}.jpg")
  test = []
  for j in range(num_test):
    image_id = f"test{j:04d}"
    test.append(row(image_id, c=j % num_classes))
    rel.append(f"{image_id}.jpg")
  write_images(root, rel, seed)
  split_path = os.path.join(root, "split.csv")
  test_path = os.path.join(root, "test.csv")
  split_io.write_csv(split_path, split_io.INAT_COLUMNS if with_label
                     else split_io.COLUMNS, rows)
  split_io.write_csv(test_path, split_io.INAT_TEST_COLUMNS if with_label
                     else split_io.TEST_COLUMNS, test)
  return split_path, test_path


def synthetic_inaturalist(root: str, num_clients: int = 4,
                          examples_per_client: int = 5, num_classes: int = 3,
                          seed: int = 0, image_size: int = 299, **config_kw):
  """Synthetic twin of `image_data.load_inaturalist`: same element structure.

  Writes tiny JPEGs and a `user_id,image_id,class,label` split under `root`.
  """
  split_path, test_path = write_synthetic_split(
      root, num_clients, examples_per_client, num_classes, seed)
  config_kw.setdefault("cache_dir", os.path.join(root, "cache"))
  return image_data.load_inaturalist(
      split_path, root, test_csv=test_path,
      config=image_data.LoaderConfig(image_size=image_size, **config_kw))


def synthetic_landmarks(root: str, num_clients: int = 4,
                        examples_per_client: int = 5, num_classes: int = 3,
                        seed: int = 0, image_size: int = 224, **config_kw):
  """Synthetic twin of `image_data.load_landmarks` (user_id,image_id,class)."""
  split_path, test_path = write_synthetic_split(
      root, num_clients, examples_per_client, num_classes, seed,
      with_label=False)
  config_kw.setdefault("cache_dir", os.path.join(root, "cache"))
  return image_data.load_image_split(
      "landmarks_synthetic", split_path, root, test_csv=test_path,
      config=image_data.LoaderConfig(image_size=image_size, **config_kw))
