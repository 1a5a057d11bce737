"""CelebA fixture: a small celeba.sqlite in exactly TFF's schema (test-only)."""

import lzma
import os
import sqlite3

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import celeba

# client -> smiling flags of its examples, in row order.
TRAIN = {"c0": [1, 0, 1, 1, 0], "c1": [1, 1], "c2": [0, 0], "c3": [0, 1]}
TEST = {"t0": [1, 0, 1], "t1": [0, 0, 1]}


def _example(value: int, smiling: int) -> bytes:
  """A tf.train.Example as in TFF's celeba.sqlite: image + 40 attributes."""
  image = np.full(celeba.IMAGE_SHAPE, value, np.int64)
  image[0, 0, 1] = 255 - value
  feature = {celeba_attr: tf.train.Feature(int64_list=tf.train.Int64List(
      value=[smiling if celeba_attr == "smiling" else value % 2]))
             for celeba_attr in tff.simulation.datasets.celeba.ATTRIBUTE_NAMES}
  feature["image"] = tf.train.Feature(
      int64_list=tf.train.Int64List(value=image.reshape(-1)))
  return tf.train.Example(
      features=tf.train.Features(feature=feature)).SerializeToString()


def write_celeba_sqlite(cache_dir) -> dict:
  """Writes cache_dir/celeba.sqlite; returns value -> (split, client, smiling).

  Every example's image is filled with a distinct value (its identity).
  """
  path = os.path.join(cache_dir, celeba.SQLITE_FILE)
  connection = sqlite3.connect(path)
  connection.execute("CREATE TABLE examples (split_name TEXT, client_id TEXT, "
                     "serialized_example_proto BLOB)")
  connection.execute("CREATE TABLE client_metadata (client_id TEXT, "
                     "split_name TEXT, num_examples INTEGER)")
  truth, value = {}, 10
  for split, clients in ((celeba.TRAIN_SPLIT, TRAIN), (celeba.TEST_SPLIT, TEST)):
    for cid, flags in clients.items():
      connection.execute("INSERT INTO client_metadata VALUES (?, ?, ?)",
                         (cid, split, len(flags)))
      for smiling in flags:
        connection.execute("INSERT INTO examples VALUES (?, ?, ?)",
                           (split, cid, _example(value, smiling)))
        truth[value] = (split, cid, smiling)
        value += 7
  connection.commit()
  connection.close()
  return truth


def write_celeba_archive(cache_dir, suffix: str) -> dict:
  """Only `celeba.sqlite.lzma` (LZMA-alone, the published container) or
  `celeba.sqlite.xz` in cache_dir; returns what `write_celeba_sqlite` does."""
  truth = write_celeba_sqlite(cache_dir)
  path = os.path.join(cache_dir, celeba.SQLITE_FILE)
  form = {".lzma": lzma.FORMAT_ALONE, ".xz": lzma.FORMAT_XZ}[suffix]
  with open(path, "rb") as f:
    data = lzma.compress(f.read(), format=form)
  with open(path + suffix, "wb") as f:
    f.write(data)
  os.remove(path)
  return truth
