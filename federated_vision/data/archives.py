"""Readers of the canonical CIFAR and MNIST distribution files (no download).

* CIFAR-10 `cifar-10-python.tar.gz`: `cifar-10-batches-py/data_batch_1..5`,
  `test_batch` and `batches.meta`, Python pickles whose b'data' is uint8
  [N, 3072] (1024 red, 1024 green, 1024 blue values, rows of 32 pixels) and
  b'labels' a list of ints; meta has b'label_names'.
* CIFAR-100 `cifar-100-python.tar.gz`: `cifar-100-python/train`, `test` and
  `meta`, with b'data', b'fine_labels', b'coarse_labels' and meta
  b'fine_label_names', b'coarse_label_names'.
* MNIST: `train-images-idx3-ubyte.gz`, `train-labels-idx1-ubyte.gz`,
  `t10k-images-idx3-ubyte.gz`, `t10k-labels-idx1-ubyte.gz` (IDX: big-endian
  magic 2051 for images, 2049 for labels; gzip optional).

Training examples keep the files' order, so index i is the `image_id` of the
published splits (Hsu, Qi & Brown 2020) for CIFAR. Pickles are read with an
unpickler that only accepts plain containers and numpy arrays.

Pure numpy; no TensorFlow.
"""

import gzip
import io
import os
import pickle
import struct
import tarfile
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

CIFAR10_ARCHIVE = "cifar-10-python.tar.gz"
CIFAR10_DIR = "cifar-10-batches-py"
CIFAR10_TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR100_ARCHIVE = "cifar-100-python.tar.gz"
CIFAR100_DIR = "cifar-100-python"
MNIST_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
IDX_IMAGES_MAGIC = 2051
IDX_LABELS_MAGIC = 2049


class ArchiveError(ValueError):
  """A missing or malformed member of a canonical archive (named)."""


class ImageArrays(NamedTuple):
  """A labelled image data set as numpy arrays.

  Attributes:
    train_x: uint8 [N, H, W, C], in the source's order.
    train_y: int64 [N].
    test_x: uint8 [M, H, W, C].
    test_y: int64 [M].
    label_names: class names, index = label.
    source: where the arrays came from (path or 'tfds:<name>').
  """
  train_x: np.ndarray
  train_y: np.ndarray
  test_x: np.ndarray
  test_y: np.ndarray
  label_names: List[str]
  source: str


_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
}


class _SafeUnpickler(pickle.Unpickler):
  """Only builtins containers and numpy arrays; no arbitrary callables."""

  def find_class(self, module, name):
    if (module, name) in _ALLOWED_GLOBALS:
      return super().find_class(module, name)
    raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in a "
                                 "CIFAR pickle")


def _unpickle(data: bytes, where: str) -> dict:
  try:
    obj = _SafeUnpickler(io.BytesIO(data), encoding="bytes").load()
  except Exception as e:  # pylint: disable=broad-except
    raise ArchiveError(f"{where}: not a readable CIFAR pickle ({e})") from e
  if not isinstance(obj, dict):
    raise ArchiveError(f"{where}: expected a dict, got {type(obj).__name__}")
  return obj


class _Members:
  """Reads members of a .tar.gz archive or files of an extracted directory."""

  def __init__(self, path: str, archive_name: str, inner_dir: str):
    self._tar = None
    self._dir = None
    if os.path.isdir(path):
      if os.path.isdir(os.path.join(path, inner_dir)):
        self._dir = os.path.join(path, inner_dir)
      elif os.path.isfile(os.path.join(path, archive_name)):
        path = os.path.join(path, archive_name)
      elif os.path.basename(os.path.normpath(path)) == inner_dir:
        self._dir = path
      else:
        raise FileNotFoundError(
            f"neither {archive_name} nor {inner_dir}/ found in {path!r}")
    elif not os.path.isfile(path):
      raise FileNotFoundError(f"archive {path!r} does not exist")
    if self._dir is None:
      try:
        self._tar = tarfile.open(path, "r:*")
      except tarfile.TarError as e:
        raise ArchiveError(f"{path}: not a tar archive ({e})") from e
      self._names = {m.name.lstrip("./"): m for m in self._tar.getmembers()
                     if m.isfile()}
    self.path = path
    self._inner = inner_dir

  def read(self, name: str) -> Tuple[bytes, str]:
    """(bytes, human-readable location) of `<inner_dir>/<name>`."""
    if self._dir is not None:
      where = os.path.join(self._dir, name)
      if not os.path.isfile(where):
        raise ArchiveError(f"{where} is missing")
      with open(where, "rb") as f:
        return f.read(), where
    member = f"{self._inner}/{name}"
    where = f"{self.path}:{member}"
    if member not in self._names:
      raise ArchiveError(f"{where} is missing from the archive")
    return self._tar.extractfile(self._names[member]).read(), where

  def close(self):
    if self._tar is not None:
      self._tar.close()


def _cifar_images(batch: dict, where: str) -> np.ndarray:
  data = batch.get(b"data")
  if data is None:
    raise ArchiveError(f"{where}: no b'data' entry")
  data = np.asarray(data)
  if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
    raise ArchiveError(f"{where}: b'data' must be uint8 [N, 3072], got "
                       f"{data.dtype} {data.shape}")
  # Row-major RGB planes: [N, 3, 32, 32] -> [N, 32, 32, 3].
  return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy()


def _cifar_labels(batch: dict, key: bytes, n: int, num_classes: int,
                  where: str) -> np.ndarray:
  if key not in batch:
    raise ArchiveError(f"{where}: no {key!r} entry")
  y = np.asarray(batch[key], dtype=np.int64)
  if y.shape != (n,):
    raise ArchiveError(f"{where}: {key!r} has shape {y.shape}, expected ({n},)")
  if n and (y.min() < 0 or y.max() >= num_classes):
    raise ArchiveError(f"{where}: {key!r} outside [0, {num_classes})")
  return y


def _names(meta: dict, key: bytes, where: str) -> List[str]:
  if key not in meta:
    raise ArchiveError(f"{where}: no {key!r} entry")
  return [n.decode() if isinstance(n, bytes) else str(n) for n in meta[key]]


def read_cifar10(path: str) -> ImageArrays:
  """CIFAR-10 from `cifar-10-python.tar.gz` (or a directory holding it or the
  extracted `cifar-10-batches-py/`).

  Args:
    path: the archive file or a directory.

  Returns:
    `ImageArrays`; train is data_batch_1..5 concatenated in order.

  Raises:
    FileNotFoundError: `path` does not exist / holds neither form.
    ArchiveError: a member is missing or malformed (named).
  """
  members = _Members(path, CIFAR10_ARCHIVE, CIFAR10_DIR)
  try:
    meta = _unpickle(*members.read("batches.meta"))
    label_names = _names(meta, b"label_names", f"{members.path}:batches.meta")
    xs, ys = [], []
    for name in CIFAR10_TRAIN_FILES + ("test_batch",):
      batch = _unpickle(*members.read(name))
      where = f"{members.path}:{CIFAR10_DIR}/{name}"
      x = _cifar_images(batch, where)
      xs.append(x)
      ys.append(_cifar_labels(batch, b"labels", len(x), len(label_names), where))
  finally:
    members.close()
  return ImageArrays(np.concatenate(xs[:5]), np.concatenate(ys[:5]), xs[5],
                     ys[5], label_names, os.path.abspath(members.path))


def read_cifar100(path: str, label_mode: str = "fine") -> ImageArrays:
  """CIFAR-100 from `cifar-100-python.tar.gz` (or a directory, as CIFAR-10).

  Args:
    path: the archive file or a directory.
    label_mode: 'fine' (100 classes) or 'coarse' (20 superclasses).

  Returns:
    `ImageArrays` with the chosen labels.
  """
  if label_mode not in ("fine", "coarse"):
    raise ValueError(f"label_mode must be 'fine' or 'coarse', got {label_mode!r}")
  members = _Members(path, CIFAR100_ARCHIVE, CIFAR100_DIR)
  try:
    meta = _unpickle(*members.read("meta"))
    label_names = _names(meta, f"{label_mode}_label_names".encode(),
                         f"{members.path}:meta")
    out = []
    for name in ("train", "test"):
      batch = _unpickle(*members.read(name))
      where = f"{members.path}:{CIFAR100_DIR}/{name}"
      x = _cifar_images(batch, where)
      out += [x, _cifar_labels(batch, f"{label_mode}_labels".encode(), len(x),
                               len(label_names), where)]
  finally:
    members.close()
  return ImageArrays(*out, label_names, os.path.abspath(members.path))


def _open_maybe_gz(directory: str, stem: str) -> Tuple[bytes, str]:
  for name in (stem + ".gz", stem):
    path = os.path.join(directory, name)
    if os.path.isfile(path):
      with open(path, "rb") as f:
        raw = f.read()
      if raw[:2] == b"\x1f\x8b":
        try:
          raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
          raise ArchiveError(f"{path}: corrupt gzip ({e})") from e
      return raw, path
  raise FileNotFoundError(f"{stem}.gz (or {stem}) not found in {directory!r}")


def parse_idx(raw: bytes, magic: int, where: str) -> np.ndarray:
  """An IDX uint8 array: images (magic 2051, 3 dims) or labels (2049, 1)."""
  ndim = {IDX_IMAGES_MAGIC: 3, IDX_LABELS_MAGIC: 1}[magic]
  header = 4 + 4 * ndim
  if len(raw) < header:
    raise ArchiveError(f"{where}: truncated IDX header")
  got = struct.unpack(">i", raw[:4])[0]
  if got != magic:
    raise ArchiveError(f"{where}: IDX magic number {got}, expected {magic}")
  dims = struct.unpack(f">{ndim}i", raw[4:header])
  size = int(np.prod(dims))
  if len(raw) - header != size:
    raise ArchiveError(f"{where}: {len(raw) - header} data bytes for IDX "
                       f"dimensions {dims} ({size} expected)")
  return np.frombuffer(raw, np.uint8, offset=header).reshape(dims).copy()


def read_mnist(directory: str) -> ImageArrays:
  """MNIST from the four IDX files (gzipped or not) in `directory`.

  Returns:
    `ImageArrays` with x uint8 [N, 28, 28, 1] and labels 0-9.
  """
  if not os.path.isdir(directory):
    raise FileNotFoundError(f"MNIST directory {directory!r} does not exist")
  arrays = {}
  for key, stem in MNIST_FILES.items():
    raw, where = _open_maybe_gz(directory, stem)
    magic = IDX_IMAGES_MAGIC if key.endswith("images") else IDX_LABELS_MAGIC
    arrays[key] = parse_idx(raw, magic, where)
  for split in ("train", "test"):
    x, y = arrays[f"{split}_images"], arrays[f"{split}_labels"]
    if len(x) != len(y):
      raise ArchiveError(f"{directory}: {len(x)} {split} images but {len(y)} "
                         "labels")
    if y.size and y.max() > 9:
      raise ArchiveError(f"{directory}: {split} labels outside 0-9")
  return ImageArrays(arrays["train_images"][..., None],
                     arrays["train_labels"].astype(np.int64),
                     arrays["test_images"][..., None],
                     arrays["test_labels"].astype(np.int64),
                     [str(d) for d in range(10)], os.path.abspath(directory))


def synthetic_image_arrays(image_shape: Tuple[int, ...], class_names: List[str],
                           num_train: int, num_test: int,
                           seed: int) -> ImageArrays:
  """Random uint8 images with balanced training labels (the loaders' twins)."""
  num_classes = len(class_names)
  if num_train < num_classes or num_test < 1:
    raise ValueError(f"num_train must be >= num_classes ({num_classes}) and "
                     f"num_test >= 1, got {num_train}, {num_test}")
  rng = np.random.default_rng(seed)
  x = rng.integers(0, 256, (num_train + num_test,) + tuple(image_shape),
                   dtype=np.uint8)
  y = np.concatenate([np.arange(num_train) % num_classes,
                      rng.integers(0, num_classes, num_test)]).astype(np.int64)
  return ImageArrays(x[:num_train], y[:num_train], x[num_train:],
                     y[num_train:], list(class_names), "synthetic")


def describe(arrays: ImageArrays) -> dict:
  """Sizes and source for `FederatedDataset.info`."""
  return {"source": arrays.source, "train_examples": int(len(arrays.train_y)),
          "test_examples": int(len(arrays.test_y)),
          "image_shape": list(arrays.train_x.shape[1:])}


def check_arrays(arrays: ImageArrays, num_classes: int,
                 image_shape: Optional[Tuple[int, ...]] = None) -> None:
  """Shape / dtype / label-range checks shared by the loaders."""
  for split in ("train", "test"):
    x, y = getattr(arrays, f"{split}_x"), getattr(arrays, f"{split}_y")
    if x.dtype != np.uint8 or x.ndim != 4 or len(x) != len(y):
      raise ValueError(f"{arrays.source}: {split} images must be uint8 "
                       f"[N, H, W, C] with N labels, got {x.dtype} {x.shape} "
                       f"and {len(y)} labels")
    if image_shape is not None and tuple(x.shape[1:]) != tuple(image_shape):
      raise ValueError(f"{arrays.source}: {split} images have shape "
                       f"{x.shape[1:]}, expected {image_shape}")
    if y.size and (y.min() < 0 or y.max() >= num_classes):
      raise ValueError(f"{arrays.source}: {split} labels outside "
                       f"[0, {num_classes})")


def load_prepared_tfds(name: str, data_dir: Optional[str], instead: str):
  """`tfds.load(name, split=['train', 'test'], with_info=True)`, no download.

  Args:
    name: the tensorflow-datasets name ('cifar10', 'cifar100', 'mnist').
    data_dir: where it was prepared (None: tfds' default).
    instead: what the user can give instead, for the message.

  Returns:
    ((train, test), info).

  Raises:
    FileNotFoundError: `name` is not prepared under `data_dir` (named).
  """
  # Local: tensorflow_datasets is a heavy optional dependency.
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  try:
    return tfds.load(name, split=["train", "test"], data_dir=data_dir,
                     download=False, try_gcs=False, with_info=True)
  except (AssertionError, FileNotFoundError,
          tfds.core.registered.DatasetNotFoundError) as e:
    raise FileNotFoundError(
        f"tensorflow-datasets {name!r} is not prepared under data_dir="
        f"{data_dir!r} (download=False; prepare it there with tfds, or use "
        f"{instead} instead): {e}") from e


def dataset_to_numpy(dataset, keys: Sequence[str],
                     batch_size: int = 4096) -> dict:
  """Concatenates the `keys` of a dict `tf.data.Dataset` into numpy arrays.

  Used instead of tfds' `batch_size=-1`, which batches by the split size
  recorded in the metadata (absent under `tfds.testing.mock_data`).
  """
  parts = {k: [] for k in keys}
  for batch in dataset.batch(batch_size).as_numpy_iterator():
    for k in keys:
      parts[k].append(batch[k])
  return {k: np.concatenate(v) if v else np.zeros([0]) for k, v in parts.items()}
