"""ClientData whose datasets the TFF worker builds itself from a client id.

TFF's C++ worker receives client datasets either as serialised Python-side
datasets (slow, 100 MB cap per client) or as a `tff.Computation` mapping a
client id to a `tf.data.Dataset` that it runs itself. Every ClientData here
is the latter: its `serializable_dataset_fn` graph holds (or reads from disk)
the examples and the partition, and accepts plain ids and round keys
(`round_keys`).
"""

import hashlib
import os
from typing import Dict, Mapping, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import round_keys

# Arrays larger than this are written to per-client files instead of being
# embedded as graph constants (graphs are re-sent to the worker every round).
MAX_INLINE_BYTES = 16 << 20


class InGraphClientData(tff.simulation.datasets.ClientData):
  """A ClientData whose datasets are built in-graph from the client id.

  Subclasses set, in `__init__`: `self._client_ids` (list), `self._sizes`
  (client id -> examples), `self._dataset_fn` (serializable; accepts plain ids
  and round keys) and `self._spec` (element spec dict).
  """

  @property
  def client_ids(self):
    return list(self._client_ids)

  @property
  def serializable_dataset_fn(self):
    return self._dataset_fn

  def create_tf_dataset_for_client(self, client_id: str) -> tf.data.Dataset:
    if client_id not in self._sizes:
      raise ValueError(f"unknown client id {client_id!r}")
    return self._dataset_fn(tf.constant(client_id))

  @property
  def element_type_structure(self):
    return dict(self._spec)

  def client_size(self, client_id: str) -> int:
    return int(self._sizes[client_id])

  @property
  def client_sizes(self) -> Dict[str, int]:
    return dict(self._sizes)


class ArrayClientData(InGraphClientData):
  """ClientData over in-memory arrays and a partition of their indices.

  Elements are dicts of the given arrays' rows (e.g. {'x': image, 'y': label}).
  Small arrays are graph constants; larger ones are written once per client
  under `storage_dir` (serialized tensors) and read by the graph.
  """

  def __init__(self, arrays: Mapping[str, np.ndarray],
               partition: Mapping[str, np.ndarray],
               storage_dir: Optional[str] = None,
               max_inline_bytes: int = MAX_INLINE_BYTES):
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    sizes = {len(v) for v in arrays.values()}
    if len(sizes) != 1:
      raise ValueError(f"arrays must have equal lengths, got "
                       f"{ {k: len(v) for k, v in arrays.items()} }")
    total = sizes.pop()
    self._client_ids = list(partition.keys())
    round_keys.check_client_ids(self._client_ids)
    self._indices = [np.asarray(partition[c], np.int64) for c in self._client_ids]
    self._sizes = {c: len(i) for c, i in zip(self._client_ids, self._indices)}
    for cid, idx in zip(self._client_ids, self._indices):
      if idx.size and (idx.min() < 0 or idx.max() >= total):
        raise ValueError(f"client {cid!r} has indices outside [0, {total})")
    self._arrays = arrays
    self._spec = {k: tf.TensorSpec(v.shape[1:], tf.as_dtype(v.dtype))
                  for k, v in arrays.items()}
    nbytes = sum(v.nbytes for v in arrays.values())
    self._files = None
    if nbytes > max_inline_bytes:
      if storage_dir is None:
        raise ValueError(f"arrays take {nbytes} bytes (> {max_inline_bytes}); "
                         "give storage_dir for per-client files")
      self._files = self._write_client_files(storage_dir)
    self._dataset_fn = self._build_dataset_fn()

  def _write_client_files(self, storage_dir: str) -> Dict[str, list]:
    digest = hashlib.sha1()
    for k in sorted(self._arrays):
      digest.update(k.encode())
      digest.update(np.ascontiguousarray(self._arrays[k]).data)
    for cid, idx in zip(self._client_ids, self._indices):
      digest.update(cid.encode())
      digest.update(idx.tobytes())
    root = os.path.join(storage_dir, digest.hexdigest()[:16])
    files = {k: [] for k in self._arrays}
    done = os.path.join(root, "COMPLETE")
    for row, idx in enumerate(self._indices):
      for k, v in self._arrays.items():
        files[k].append(os.path.join(root, f"{row}.{k}.tensor"))
    if not os.path.exists(done):
      os.makedirs(root, exist_ok=True)
      for row, idx in enumerate(self._indices):
        for k, v in self._arrays.items():
          tf.io.write_file(files[k][row], tf.io.serialize_tensor(v[idx]))
      with open(done, "w") as f:
        f.write("ok\n")
    return files

  def _build_dataset_fn(self):
    client_ids = list(self._client_ids)
    spec = self._spec
    if self._files is None:
      flat = np.concatenate(self._indices) if self._indices else np.zeros([0], np.int64)
      splits = np.cumsum([0] + [len(i) for i in self._indices]).astype(np.int64)
      arrays = self._arrays

      def dataset_fn(client_id):
        row = round_keys.row_lookup(client_ids)(client_id)
        idx = tf.constant(flat)[tf.constant(splits)[row]:tf.constant(splits)[row + 1]]
        return tf.data.Dataset.from_tensor_slices(
            {k: tf.gather(tf.constant(v), idx) for k, v in arrays.items()})
    else:
      files = self._files

      def dataset_fn(client_id):
        row = round_keys.row_lookup(client_ids)(client_id)
        return tf.data.Dataset.from_tensor_slices({
            k: tf.ensure_shape(
                tf.io.parse_tensor(tf.io.read_file(tf.constant(paths)[row]),
                                   spec[k].dtype), [None] + spec[k].shape.as_list())
            for k, paths in files.items()})
    return dataset_fn
