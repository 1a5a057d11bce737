"""CelebA smiles as TFF ships it: the mixing scenario of Augenstein et al.

Label-biased retention: phones keep the smiling portraits, so the federated
clients (LEAF's celebrities, one client each) hold only *smiling* images,
while the server holds every *unsmiling* image of the same training clients.
Evaluation uses TFF's held-out test clients with both labels, reported overall
and per label. The task is binary: y = 1 smiling, y = 0 not smiling, on
84 x 84 x 3 images.

Everything is read through `tff.simulation.datasets.celeba.load_data(
split_by_clients=True, cache_dir=...)` from a local `celeba.sqlite` (TFF's
`SqlClientData` schema: tables `examples(split_name, client_id,
serialized_example_proto)` and `client_metadata(client_id, split_name,
num_examples)`). Nothing is downloaded: TFF downloads only when that file is
absent; `load_scenario` decompresses TFF's published `celeba.sqlite.lzma` (or
an `.xz` of it) found in `cache_dir`, else stops with one line saying where
to put it.

Client datasets stay in-executor: a client's smiling images are TFF's own
SQL-backed dataset filtered in-graph, and centralized examples are read by
SQLite rowid in-graph. The per-example smiling labels (for client sizes and
the centralized rowids) are indexed once and cached next to the file.
"""

import os
import sqlite3
from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import lzma_files
from federated_vision.mixing import scenarios as mixing_scenarios
from federated_vision.data import round_keys

SQLITE_FILE = "celeba.sqlite"
ORIGIN = "https://storage.googleapis.com/tff-datasets-public/celeba.sqlite.lzma"
# Archives read in place of SQLITE_FILE (decompressed beside it once).
ARCHIVE_SUFFIXES = (".lzma", ".xz")
TRAIN_SPLIT = "split_by_clients_train"
TEST_SPLIT = "split_by_clients_test"
IMAGE_SHAPE = (84, 84, 3)
NUM_CLASSES = 2  # 0: not smiling, 1: smiling.
LABEL_NAMES = ("not_smiling", "smiling")
_INDEX_VERSION = 1
_PARSE_CHUNK = 512


def sqlite_path(cache_dir: str) -> str:
  """Where `tff.simulation.datasets.celeba.load_data` looks for the data."""
  return os.path.join(os.fspath(cache_dir), SQLITE_FILE)


# (The archive's reader is shared with the Shakespeare SQLite: lzma_files.)
_decompress = lzma_files.decompress


def require_sqlite(cache_dir: str) -> str:
  """The SQLite path, decompressed from `celeba.sqlite.lzma` / `.xz` in
  `cache_dir` when only an archive is there; else FileNotFoundError with one
  line saying where to put it."""
  path = sqlite_path(cache_dir)
  for archive in (path + ext for ext in ARCHIVE_SUFFIXES):
    if not os.path.isfile(path) and os.path.isfile(archive):
      _decompress(archive, path)
  if not os.path.isfile(path):
    raise FileNotFoundError(
        f"CelebA not found: {path} does not exist; nothing is downloaded "
        f"here: fetch {ORIGIN} elsewhere and put it (or {SQLITE_FILE}.xz, or "
        f"{SQLITE_FILE} decompressed by `xz -d`, which reads both "
        f"containers) in {os.fspath(cache_dir)}")
  return path


class SmileIndex(NamedTuple):
  """Per-example (rowid, split, client, smiling) of the train and test splits."""
  rowid: np.ndarray     # int64
  split: np.ndarray     # str
  client_id: np.ndarray  # str
  smiling: np.ndarray   # bool


def _fingerprint(path: str) -> str:
  st = os.stat(path)
  return f"v{_INDEX_VERSION}:{st.st_size}:{st.st_mtime_ns}"


def build_smile_index(path: str) -> SmileIndex:
  """Reads every train/test example's 'smiling' attribute (one pass)."""
  spec = {"smiling": tf.io.FixedLenFeature([], tf.int64)}
  rowids, splits, clients, smiling = [], [], [], []
  try:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    cursor = connection.execute(
        "SELECT rowid, split_name, client_id, serialized_example_proto "
        "FROM examples WHERE split_name IN (?, ?) ORDER BY rowid",
        (TRAIN_SPLIT, TEST_SPLIT))
    while True:
      rows = cursor.fetchmany(_PARSE_CHUNK)
      if not rows:
        break
      rowids.extend(r[0] for r in rows)
      splits.extend(r[1] for r in rows)
      clients.extend(r[2] for r in rows)
      parsed = tf.io.parse_example([bytes(r[3]) for r in rows], spec)
      smiling.append(parsed["smiling"].numpy() != 0)
    connection.close()
  except (sqlite3.Error, tf.errors.InvalidArgumentError) as e:
    raise ValueError(f"{path}: not a CelebA SQLite file in TFF's format "
                     f"({type(e).__name__}: {str(e).splitlines()[0]})") from None
  return SmileIndex(
      rowid=np.asarray(rowids, np.int64), split=np.asarray(splits, str),
      client_id=np.asarray(clients, str),
      smiling=np.concatenate(smiling) if smiling else np.zeros([0], bool))


def load_smile_index(path: str, index_dir: Optional[str] = None) -> SmileIndex:
  """`build_smile_index`, cached as an .npz in `index_dir` (default: beside
  the SQLite file) and rebuilt when the file's size or mtime changes."""
  index_dir = index_dir or os.path.dirname(path)
  cache = os.path.join(index_dir, SQLITE_FILE + ".smile_index.npz")
  fingerprint = _fingerprint(path)
  if os.path.exists(cache):
    with np.load(cache) as f:
      if str(f["fingerprint"]) == fingerprint:
        return SmileIndex(*(f[k] for k in SmileIndex._fields))
  index = build_smile_index(path)
  try:
    os.makedirs(index_dir, exist_ok=True)
    tmp = cache + ".tmp.npz"
    np.savez(tmp, fingerprint=fingerprint, **index._asdict())
    os.replace(tmp, cache)
  except OSError:
    pass  # A read-only cache directory: index again next time.
  return index


def _to_raw(element):
  """TFF's parsed example -> {'x': uint8 image, 'y': 1 if smiling else 0}."""
  return {"x": tf.cast(element["image"], tf.uint8),
          "y": tf.cast(element["smiling"], tf.int64)}


def train_map_fn(element, seed):
  del seed  # No augmentation.
  return eval_map_fn(element)


def eval_map_fn(element):
  return {"x": tf.cast(element["x"], tf.float32) / 255.0, "y": element["y"]}


RAW_SPEC = {"x": tf.TensorSpec(IMAGE_SHAPE, tf.uint8),
            "y": tf.TensorSpec([], tf.int64)}


def _sql_gather_fn(path: str, rowids: np.ndarray):
  """int64 indices into `rowids` -> raw rows, read in-graph by SQLite rowid."""
  table = np.asarray(rowids, np.int64)
  spec = {"image": tf.io.FixedLenFeature(IMAGE_SHAPE, tf.int64),
          "smiling": tf.io.FixedLenFeature([], tf.int64)}

  def gather_fn(indices):
    wanted = tf.gather(tf.constant(table), indices)
    unique = tf.unique(wanted).y
    query = tf.strings.join([
        "SELECT rowid, serialized_example_proto FROM examples WHERE rowid IN (",
        tf.strings.reduce_join(tf.strings.as_string(unique), separator=","),
        ")"])
    rows = tf.data.experimental.SqlDataset(
        "sqlite", path, query, (tf.int64, tf.string))
    # A sentinel row, so that even zero rows batch into one element.
    rows = rows.concatenate(tf.data.Dataset.from_tensors(
        (tf.constant(-1, tf.int64), tf.constant(b""))))
    got_ids, protos = rows.batch(tf.size(unique, out_type=tf.int64) + 1
                                 ).get_single_element()
    match = tf.equal(wanted[:, None], got_ids[None, :])
    check = tf.debugging.assert_equal(
        tf.reduce_all(tf.reduce_any(match, axis=1)), True,
        message=f"centralized CelebA rows missing from {path}")
    with tf.control_dependencies([check]):
      position = tf.argmax(tf.cast(match, tf.int32), axis=1)
    parsed = tf.io.parse_example(tf.gather(protos, position), spec)
    return {"x": tf.cast(parsed["image"], tf.uint8),
            "y": tf.cast(parsed["smiling"], tf.int64)}
  return gather_fn


def load_scenario(cache_dir: str,
                  index_dir: Optional[str] = None
                  ) -> mixing_scenarios.MixingScenario:
  """The CelebA smile scenario from a local TFF `celeba.sqlite`.

  Args:
    cache_dir: directory holding `celeba.sqlite` (TFF's `cache_dir`).
    index_dir: where the smile index is cached (default `cache_dir`).

  Returns:
    A `MixingScenario`: federated = the train clients' smiling images (each
    celebrity with at least one a client); centralized = all unsmiling images
    of the train clients, each tagged with its celebrity; test = every image
    of the test clients; groups 'smiling' and 'unsmiling'.

  Raises:
    FileNotFoundError: no `celeba.sqlite` in `cache_dir` (one line).
    ValueError: the file is not in TFF's CelebA format.
  """
  path = require_sqlite(cache_dir)
  index = load_smile_index(path, index_dir)
  try:
    train, test = tff.simulation.datasets.celeba.load_data(
        split_by_clients=True, cache_dir=os.fspath(cache_dir))
  except Exception as e:  # pylint: disable=broad-except
    raise ValueError(f"{path}: TFF's CelebA loader failed "
                     f"({type(e).__name__}: {str(e).splitlines()[0]})") from None
  is_train = index.split == TRAIN_SPLIT
  unknown = set(index.client_id[is_train].tolist()) - set(train.client_ids)
  if unknown:
    raise ValueError(f"{path}: examples of train clients missing from "
                     f"client_metadata, e.g. {sorted(unknown)[:3]}")

  smiling_train = is_train & index.smiling
  ids, counts = np.unique(index.client_id[smiling_train], return_counts=True)
  ids = [str(c) for c in ids]
  sizes = {c: int(n) for c, n in zip(ids, counts)}
  if not ids:
    raise ValueError(f"{path}: no smiling images among the train clients")
  train_fn = train.serializable_dataset_fn

  def dataset_fn(key):
    row = round_keys.row_lookup(ids)(key)
    client_id = tf.gather(tf.constant(ids), row)
    return train_fn(client_id).filter(lambda e: e["smiling"]).map(_to_raw)

  class_counts = np.zeros([len(ids), NUM_CLASSES], np.int64)
  class_counts[:, 1] = counts
  central_rows = is_train & ~index.smiling
  if not central_rows.any():
    raise ValueError(f"{path}: no unsmiling images among the train clients")
  test_labels = index.smiling[index.split == TEST_SPLIT].astype(np.int64)
  info = {"source": path, "loader": "tff.simulation.datasets.celeba.load_data",
          "label_names": list(LABEL_NAMES),
          "train_clients": len(train.client_ids),
          "federated_clients": len(ids),
          "federated_examples": int(counts.sum()),
          "centralized_examples": int(central_rows.sum()),
          "test_clients": len(test.client_ids),
          "test_examples": int(len(test_labels)),
          "test_smiling": int(test_labels.sum())}
  federated = client_data_lib.FederatedDataset(
      name="celeba_smiling",
      client_data=mixing_scenarios.FunctionClientData(
          ids, sizes, dataset_fn, RAW_SPEC),
      test_data=test.create_tf_dataset_from_all_clients().map(_to_raw),
      train_map_fn=train_map_fn, eval_map_fn=eval_map_fn,
      num_classes=NUM_CLASSES, client_sizes=sizes, class_counts=class_counts,
      input_shape=IMAGE_SHAPE, info=info)
  central = mixing_scenarios.CentralizedData(
      name="celeba_not_smiling", num_examples=int(central_rows.sum()),
      element_spec=RAW_SPEC,
      gather_fn=_sql_gather_fn(path, index.rowid[central_rows]),
      train_map_fn=train_map_fn,
      labels=np.zeros(int(central_rows.sum()), np.int64),
      source_clients=[str(c) for c in index.client_id[central_rows]]).validate()
  return mixing_scenarios.MixingScenario(
      "celeba_smile", federated, central,
      {"smiling": [1], "unsmiling": [0]}, info)
