"""Lazy ClientData over an index file of image examples (no image in the graph).

The iNaturalist and Landmarks splits of Hsu, Qi & Brown 2020 (ECCV) have
120k-160k images over up to ~10k clients. A `ClientData` here never holds
images or even all paths in its graph: opening a split writes one
tab-separated *index file* (one line per example, grouped by client, cached by
content hash), and the graph holds only the sorted client ids, a hash lookup
and each client's byte range in that file. `serializable_dataset_fn(key)`:

  round key -> base client id -> row (fingerprint + searchsorted, checked)
  -> FixedLengthRecordDataset reading the client's block of the index
  -> elements {'path': string, 'range': int64[3], 'y': int64}.

Decoding is `image_transforms`' job.
"""

import dataclasses
import hashlib
import os
from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf

from federated_vision.data import in_graph_client_data
from federated_vision.data import round_keys
from federated_vision.training import run_files

_HASH_BUCKETS = 2**62


def _fingerprints(ids: Sequence[str]) -> np.ndarray:
  return tf.strings.to_hash_bucket_fast(
      tf.constant(list(ids), tf.string), _HASH_BUCKETS).numpy().astype(np.int64)


def make_row_lookup(client_ids: Sequence[str]):
  """Returns `lookup(key) -> row` usable in any graph (no lookup tables).

  Client ids are fingerprinted once; in the graph a key's base id is
  fingerprinted, located by `tf.searchsorted` among the sorted fingerprints
  and verified by string equality, so unknown ids raise InvalidArgumentError.
  """
  ids = list(client_ids)
  hashes = _fingerprints(ids)
  order = np.argsort(hashes, kind="stable")
  sorted_hashes = hashes[order]
  if np.any(sorted_hashes[1:] == sorted_hashes[:-1]):
    raise ValueError("client id fingerprint collision; rename a client")
  ids_arr = np.array(ids, dtype=object)

  def lookup(key):
    base = round_keys.base_client_id(key)
    h = tf.strings.to_hash_bucket_fast(base, _HASH_BUCKETS)
    pos = tf.searchsorted(tf.constant(sorted_hashes), tf.reshape(h, [1]))[0]
    pos = tf.minimum(pos, len(ids) - 1)
    row = tf.gather(tf.constant(order.astype(np.int64)), pos)
    found = tf.equal(tf.gather(tf.constant(ids_arr.astype(bytes)), row), base)
    check = tf.debugging.Assert(found, ["unknown client id", base])
    with tf.control_dependencies([check]):
      return tf.identity(row)
  return lookup


# ----------------------------------------------------------------------------
# Index of examples.


@dataclasses.dataclass(frozen=True)
class ExampleIndex:
  """Examples of a split: one row per example.

  Attributes:
    client_ids: client of each example (None for a test set).
    paths: absolute image path (or tar shard path) of each example.
    ranges: int64 [n, 3] (offset, length, file_size); (0, -1, -1) = whole file.
    labels: int64 [n].
    image_ids: image id of each example (for reports).
  """
  client_ids: Optional[List[str]]
  paths: List[str]
  ranges: np.ndarray
  labels: np.ndarray
  image_ids: List[str]

  def __len__(self):
    return len(self.paths)

  def subset(self, keep: np.ndarray) -> "ExampleIndex":
    keep = np.asarray(keep, bool)
    pick = lambda xs: [x for x, k in zip(xs, keep) if k]
    return ExampleIndex(
        None if self.client_ids is None else pick(self.client_ids),
        pick(self.paths), self.ranges[keep], self.labels[keep],
        pick(self.image_ids))


def _index_bytes(index: ExampleIndex, order: np.ndarray) -> List[bytes]:
  lines = []
  for i in order:
    p = index.paths[i]
    if "\t" in p or "\n" in p:
      raise ValueError(f"image path {p!r} contains a tab or newline")
    r = index.ranges[i]
    lines.append(f"{p}\t{r[0]}\t{r[1]}\t{r[2]}\t{index.labels[i]}".encode())
  return lines


def _holds(path: str, content: bytes) -> bool:
  """Whether the cached index file `path` holds exactly `content` (a file
  cut short, edited or damaged -- even one of the same size -- is written
  again: its byte offsets must be the graph's)."""
  try:
    with open(path, "rb") as f:
      return f.read() == content
  except OSError:
    return False


class IndexedImageClientData(in_graph_client_data.InGraphClientData):
  """ClientData of {'path', 'range', 'y'} elements read from an index file.

  The graph holds sorted client ids and byte offsets only; see module doc.
  Construction reads no image.
  """

  def __init__(self, index: ExampleIndex, cache_dir: str):
    if index.client_ids is None:
      raise ValueError("index has no client ids")
    n = len(index)
    if n == 0:
      raise ValueError("a ClientData needs at least one example")
    clients = np.array(index.client_ids, dtype=object)
    client_ids = sorted(set(index.client_ids))
    round_keys.check_client_ids(client_ids)
    row_of = {c: r for r, c in enumerate(client_ids)}
    rows = np.fromiter((row_of[c] for c in clients), np.int64, count=n)
    order = np.argsort(rows, kind="stable")
    sizes = np.bincount(rows, minlength=len(client_ids)).astype(np.int64)
    lines = _index_bytes(index, order)
    lengths = np.fromiter((len(l) for l in lines), np.int64, count=n)
    # Block of a client: its lines joined by '\n'; blocks separated by '\n'.
    line_starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]])
    ends = np.cumsum(sizes)
    starts = ends - sizes
    block_offset = line_starts[starts]
    block_length = line_starts[ends - 1] + lengths[ends - 1] - block_offset
    content = b"\n".join(lines) + b"\n"
    digest = hashlib.sha1(content).hexdigest()[:20]
    os.makedirs(cache_dir, exist_ok=True)
    self._index_path = os.path.abspath(
        os.path.join(cache_dir, f"index-{digest}.tsv"))
    if not _holds(self._index_path, content):  # Re-derived, never trusted.
      with run_files.atomic_path(self._index_path) as tmp:
        with open(tmp, "wb") as f:
          f.write(content)
    self._client_ids = client_ids
    self._sizes = dict(zip(client_ids, sizes.tolist()))
    self._rows = rows
    self._order = order
    self._labels = index.labels
    self._spec = {"path": tf.TensorSpec([], tf.string),
                  "range": tf.TensorSpec([3], tf.int64),
                  "y": tf.TensorSpec([], tf.int64)}
    self._dataset_fn = self._build(block_offset.astype(np.int64),
                                   block_length.astype(np.int64),
                                   len(content))

  def _build(self, offsets, lengths, total):
    lookup = make_row_lookup(self._client_ids)
    index_path = self._index_path

    def dataset_fn(client_id):
      row = lookup(client_id)
      off = tf.gather(tf.constant(offsets), row)
      length = tf.gather(tf.constant(lengths), row)
      block = tf.data.FixedLengthRecordDataset(
          index_path, record_bytes=length, header_bytes=off,
          footer_bytes=total - off - length)

      def to_elements(record):
        lines = tf.strings.split(record, "\n")
        path, o, l, s, y = tf.io.decode_csv(
            lines, [[""], [0], [0], [0], [0]], field_delim="\t",
            use_quote_delim=False)
        return tf.data.Dataset.from_tensor_slices({
            "path": path,
            "range": tf.stack([tf.cast(o, tf.int64), tf.cast(l, tf.int64),
                               tf.cast(s, tf.int64)], axis=1),
            "y": tf.cast(y, tf.int64)})
      return block.take(1).flat_map(to_elements)
    return dataset_fn

  @property
  def index_path(self) -> str:
    return self._index_path



  def class_counts(self, num_classes: int) -> np.ndarray:
    counts = np.zeros([len(self._client_ids), num_classes], np.int64)
    np.add.at(counts, (self._rows, self._labels), 1)
    return counts


def index_dataset(index: ExampleIndex) -> tf.data.Dataset:
  """A centralized dataset of raw elements (test sets)."""
  return tf.data.Dataset.from_tensor_slices({
      "path": tf.constant(index.paths, tf.string) if len(index)
              else tf.zeros([0], tf.string),
      "range": tf.constant(index.ranges.reshape([-1, 3]), tf.int64),
      "y": tf.constant(index.labels, tf.int64)})
