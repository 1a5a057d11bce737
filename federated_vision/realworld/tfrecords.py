"""Optional one-time conversion of a split to per-client TFRecord shards.

Epochs over JPEG files cost one `open` per image; per-client TFRecord shards
(one file per client, each record a `tf.train.Example` with the encoded image
bytes and the label) turn that into one sequential read per client. The
converted split loads with `load_tfrecords` into a `FederatedDataset` whose
raw elements are {'image': string (encoded JPEG), 'y': int64}; its map
functions are the JPEG loaders' (`image_transforms.make_map_fns`), so model
input is identical.

Layout of `output_dir`: `clients/<row>.tfrecord`, `clients.csv`
(`client_id,num_examples,file`), `test.tfrecord`, `class_counts.npy`,
`meta.json`.
"""

import json
import os
from typing import Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import client_data as cd
from federated_vision.data import in_graph_client_data
from federated_vision.data import round_keys
from federated_vision.data import split_io
from federated_vision.realworld import image_config
from federated_vision.realworld import image_index
from federated_vision.realworld import image_transforms

_FEATURES = {"image": tf.io.FixedLenFeature([], tf.string),
             "y": tf.io.FixedLenFeature([], tf.int64)}


def _read(path: str, byte_range) -> bytes:
  with open(path, "rb") as f:
    if byte_range[1] >= 0:
      f.seek(int(byte_range[0]))
      return f.read(int(byte_range[1]))
    return f.read()


def _example(image: bytes, label: int) -> bytes:
  return tf.train.Example(features=tf.train.Features(feature={
      "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
      "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
  })).SerializeToString()


def _write(path, elements) -> int:
  n = 0
  with tf.io.TFRecordWriter(path) as w:
    for e in elements:
      w.write(_example(_read(e["path"].decode(), e["range"]), e["y"]))
      n += 1
  return n


def convert_to_tfrecords(fds: cd.FederatedDataset, output_dir: str) -> dict:
  """Writes per-client TFRecord shards of a JPEG-backed `FederatedDataset`.

  Load `fds` with `LoaderConfig(check_images='decode')` first so bad images
  are reported (or dropped) before conversion; any unreadable file here
  raises.

  Args:
    fds: from `image_data.load_image_split` (or its wrappers).
    output_dir: created; see module doc.

  Returns:
    Summary: clients, examples, test examples.
  """
  if not isinstance(fds.client_data, image_index.IndexedImageClientData):
    raise TypeError("fds must come from image_data.load_* (file-backed)")
  os.makedirs(os.path.join(output_dir, "clients"), exist_ok=True)
  rows = []
  total = 0
  for row, cid in enumerate(fds.client_data.client_ids):
    rel = os.path.join("clients", f"{row:06d}.tfrecord")
    n = _write(os.path.join(output_dir, rel),
               fds.client_data.create_tf_dataset_for_client(cid).as_numpy_iterator())
    if n != fds.client_sizes[cid]:
      raise RuntimeError(f"client {cid}: wrote {n} of {fds.client_sizes[cid]}")
    rows.append((cid, n, rel))
    total += n
  num_test = _write(os.path.join(output_dir, "test.tfrecord"),
                    fds.test_data.as_numpy_iterator())
  split_io.write_csv(os.path.join(output_dir, "clients.csv"),
                     ("client_id", "num_examples", "file"), rows)
  np.save(os.path.join(output_dir, "class_counts.npy"), fds.class_counts)
  meta = {"name": fds.name, "num_classes": fds.num_classes,
          "input_shape": list(fds.input_shape), "num_clients": len(rows),
          "num_examples": total, "num_test_examples": num_test,
          "source": {k: v for k, v in fds.info.items() if k != "class_names"}}
  with open(os.path.join(output_dir, "meta.json"), "w") as f:
    json.dump(meta, f, indent=1, sort_keys=True)
  return meta


class TFRecordClientData(in_graph_client_data.InGraphClientData):
  """ClientData over per-client TFRecord shards ({'image', 'y'} elements)."""

  def __init__(self, output_dir: str):
    self._client_ids, self._sizes, files = [], {}, []
    for line, r in split_io.read_rows(
        os.path.join(output_dir, "clients.csv"),
        ("client_id", "num_examples", "file")):
      self._client_ids.append(r["client_id"])
      self._sizes[r["client_id"]] = int(r["num_examples"])
      files.append(os.path.abspath(os.path.join(output_dir, r["file"])))
    round_keys.check_client_ids(self._client_ids)
    lookup = image_index.make_row_lookup(self._client_ids)

    def dataset_fn(client_id):
      row = lookup(client_id)
      path = tf.gather(tf.constant(files), row)
      return tf.data.TFRecordDataset(path).map(
          lambda s: tf.io.parse_single_example(s, _FEATURES))
    self._dataset_fn = dataset_fn
    self._spec = {"image": tf.TensorSpec([], tf.string),
                  "y": tf.TensorSpec([], tf.int64)}


def load_tfrecords(output_dir: str,
                   config: Optional[image_config.LoaderConfig] = None
                   ) -> cd.FederatedDataset:
  """A `FederatedDataset` from `convert_to_tfrecords` output.

  Args:
    output_dir: the conversion's output directory.
    config: crop size/augmentation; defaults to the converted split's size.
  """
  meta_path = os.path.join(output_dir, "meta.json")
  if not os.path.isfile(meta_path):
    raise FileNotFoundError(f"{meta_path}: no such file (not a converted split)")
  with open(meta_path) as f:
    meta = json.load(f)
  if config is None:
    config = image_config.LoaderConfig(image_size=meta["input_shape"][0],
                                       check_images="none")
  client_data = TFRecordClientData(output_dir)
  train_map_fn, eval_map_fn = image_transforms.make_map_fns(config)
  test = tf.data.TFRecordDataset(os.path.join(output_dir, "test.tfrecord")).map(
      lambda s: tf.io.parse_single_example(s, _FEATURES))
  size = int(config.image_size)
  return cd.FederatedDataset(
      name=meta["name"], client_data=client_data, test_data=test,
      train_map_fn=train_map_fn, eval_map_fn=eval_map_fn,
      num_classes=meta["num_classes"], client_sizes=client_data.client_sizes,
      class_counts=np.load(os.path.join(output_dir, "class_counts.npy")),
      input_shape=(size, size, 3),
      info={"tfrecords": os.path.abspath(output_dir), **meta["source"]})
