"""Lazy ClientData over JPEG files (or tar shards) from a split CSV.

The iNaturalist and Landmarks splits of Hsu, Qi & Brown 2020 (ECCV) have
120k-160k images over up to ~10k clients. A `ClientData` here never holds
images or even all paths in its graph: opening a split writes one
tab-separated *index file* (one line per example, grouped by client, cached by
content hash), and the graph holds only the sorted client ids, a hash lookup
and each client's byte range in that file. `serializable_dataset_fn(key)`:

  round key -> base client id -> row (fingerprint + searchsorted, checked)
  -> FixedLengthRecordDataset reading the client's block of the index
  -> elements {'path': string, 'range': int64[3], 'y': int64}.

`range` = (offset, length, file_size) of the image inside `path` (a tar shard
member), or (0, -1, -1) for a whole file. Decoding happens in
`train_map_fn(element, seed)` (random-resized crop with stateless ops,
horizontal flip) and `eval_map_fn(element)` (centre crop), producing
{'x': float32 [S, S, 3] in [0, 1], 'y': int64}.

Opening a split reads no image. Optionally (`check_images`) it checks that the
images exist ('exists', cheap stat calls) or decode ('decode'); bad images are
listed in a JSON report and either fail the load (`on_bad_image='fail'`) or are
dropped with a warning giving the per-split count (`'skip'`). Never silent.
"""

import dataclasses
import hashlib
import os
import tempfile
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import client_data as cd
from federated_vision.data import split_io
from federated_vision.realworld import gld_layout
from federated_vision.realworld import image_check

WHOLE_FILE = image_check.WHOLE_FILE
CHECK_MODES = image_check.CHECK_MODES
BAD_IMAGE_POLICIES = image_check.BAD_IMAGE_POLICIES
BadImagesError = image_check.BadImagesError
index_tar_shards = image_check.index_tar_shards
_HASH_BUCKETS = 2**62


@dataclasses.dataclass(frozen=True)
class LoaderConfig:
  """How a split is opened and turned into model input.

  Attributes:
    image_size: S, side of the square crops (299 iNaturalist, 224 Landmarks).
    crop_scale: (min, max) area fraction of the random-resized crop.
    crop_ratio: (min, max) aspect ratio of the random-resized crop.
    flip: random horizontal flips in training.
    eval_crop_fraction: central fraction kept for evaluation before resizing.
    check_images: 'none' (read nothing), 'exists' (stat each file / tar
      member; the default) or 'decode' (decode each image with PIL; slow).
    on_bad_image: 'fail' raises `BadImagesError` after writing the report;
      'skip' drops the examples and logs a warning with per-split counts.
    report_path: where the bad-image report JSON goes; defaults to
      `<cache_dir>/<name>.image_report.json` (written whenever checking).
    cache_dir: where index files go; defaults to
      `$TMPDIR/federated_vision_index`.
  """
  image_size: int = 299
  crop_scale: Tuple[float, float] = (0.08, 1.0)
  crop_ratio: Tuple[float, float] = (3 / 4, 4 / 3)
  flip: bool = True
  eval_crop_fraction: float = 0.875
  check_images: str = "exists"
  on_bad_image: str = "fail"
  report_path: Optional[str] = None
  cache_dir: Optional[str] = None

  def __post_init__(self):
    if int(self.image_size) < 8:
      raise ValueError(f"image_size must be >= 8, got {self.image_size}")
    lo, hi = self.crop_scale
    if not 0 < lo <= hi <= 1:
      raise ValueError(f"crop_scale must satisfy 0 < min <= max <= 1, got "
                       f"{self.crop_scale}")
    lo, hi = self.crop_ratio
    if not 0 < lo <= hi:
      raise ValueError(f"crop_ratio must satisfy 0 < min <= max, got "
                       f"{self.crop_ratio}")
    if not 0 < self.eval_crop_fraction <= 1:
      raise ValueError(f"eval_crop_fraction must be in (0, 1], got "
                       f"{self.eval_crop_fraction}")
    if self.check_images not in CHECK_MODES:
      raise ValueError(f"check_images must be one of {CHECK_MODES}, got "
                       f"{self.check_images!r}")
    if self.on_bad_image not in BAD_IMAGE_POLICIES:
      raise ValueError(f"on_bad_image must be one of {BAD_IMAGE_POLICIES}, "
                       f"got {self.on_bad_image!r}")

  def resolved_cache_dir(self) -> str:
    return self.cache_dir or os.path.join(tempfile.gettempdir(),
                                          "federated_vision_index")


# ----------------------------------------------------------------------------
# Image bytes, decoding, augmentation (all in-graph).


def read_image_bytes(path: tf.Tensor, byte_range: tf.Tensor) -> tf.Tensor:
  """Bytes of an image: the whole file, or a byte range (tar member)."""
  byte_range = tf.cast(byte_range, tf.int64)
  offset, length, size = byte_range[0], byte_range[1], byte_range[2]

  def whole():
    return tf.io.read_file(path)

  def member():
    return tf.data.FixedLengthRecordDataset(
        path, record_bytes=tf.maximum(length, 1), header_bytes=offset,
        footer_bytes=tf.maximum(size - offset - length, 0)
    ).take(1).get_single_element()
  return tf.cond(length < 0, whole, member)


def decode_rgb(image_bytes: tf.Tensor) -> tf.Tensor:
  """JPEG (or PNG/GIF/BMP) bytes -> uint8 [H, W, 3]."""
  image = tf.io.decode_image(image_bytes, channels=3, expand_animations=False)
  image.set_shape([None, None, 3])
  return image


def random_resized_crop(image: tf.Tensor, size: int, seed: tf.Tensor,
                        scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)) -> tf.Tensor:
  """Inception-style crop (area and aspect-ratio jitter) resized to size x size.

  Stateless: the same `seed` ([2] int64) gives the same crop.
  """
  begin, crop_size, _ = tf.image.stateless_sample_distorted_bounding_box(
      tf.shape(image), bounding_boxes=tf.zeros([1, 0, 4], tf.float32),
      seed=seed, min_object_covered=0.0, aspect_ratio_range=ratio,
      area_range=scale, max_attempts=10, use_image_if_no_bounding_boxes=True)
  crop = tf.slice(image, begin, crop_size)
  out = tf.image.resize(tf.cast(crop, tf.float32) / 255.0, [size, size],
                        method="bilinear", antialias=True)
  return tf.clip_by_value(out, 0.0, 1.0)


def center_crop(image: tf.Tensor, size: int, fraction: float = 0.875) -> tf.Tensor:
  """Central square-ish crop of `fraction` of each side, resized; [0, 1]."""
  image = tf.cast(image, tf.float32) / 255.0
  if fraction < 1:
    image = tf.image.central_crop(image, fraction)
  out = tf.image.resize(image, [size, size], method="bilinear", antialias=True)
  return tf.clip_by_value(out, 0.0, 1.0)


def _element_bytes(element):
  if "image" in element:  # TFRecord shards hold the bytes themselves.
    return element["image"]
  return read_image_bytes(element["path"], element["range"])


def make_map_fns(config: LoaderConfig):
  """(train_map_fn(element, seed), eval_map_fn(element)) for `config`."""
  size = int(config.image_size)

  def train_map_fn(element, seed):
    # Independent streams for the crop and the flip, both keyed by `seed`.
    crop_seed, flip_seed = tf.unstack(
        tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 2))
    image = decode_rgb(_element_bytes(element))
    x = random_resized_crop(image, size, crop_seed, config.crop_scale,
                            config.crop_ratio)
    if config.flip:
      x = tf.image.stateless_random_flip_left_right(x, seed=flip_seed)
    x = tf.ensure_shape(x, [size, size, 3])
    return {"x": x, "y": tf.cast(element["y"], tf.int64)}

  def eval_map_fn(element):
    image = decode_rgb(_element_bytes(element))
    x = tf.ensure_shape(center_crop(image, size, config.eval_crop_fraction),
                        [size, size, 3])
    return {"x": x, "y": tf.cast(element["y"], tf.int64)}
  return train_map_fn, eval_map_fn


# ----------------------------------------------------------------------------
# In-graph client lookup.


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
    base = cd.base_client_id(key)
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


class IndexedImageClientData(cd.InGraphClientData):
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
    cd._check_client_ids(client_ids)
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
    if not (os.path.exists(self._index_path) and
            os.path.getsize(self._index_path) == len(content)):
      fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
      with os.fdopen(fd, "wb") as f:
        f.write(content)
      os.replace(tmp, self._index_path)
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


# ----------------------------------------------------------------------------
# Resolving image ids to files, tar shards.


PathSpec = Union[None, str, Mapping[str, str]]


def resolve_paths(image_ids: Sequence[str], image_root: Optional[str],
                  image_paths: PathSpec = None,
                  path_template: str = "{image_id}.jpg",
                  tar_index: Optional[Mapping[str, Tuple]] = None):
  """(paths, ranges, missing_mask) for image ids.

  Priority: `tar_index` (GLD shards), then the `image_paths` mapping (a dict
  or an `image_id,path` CSV; relative paths are under `image_root`), then
  `path_template` under `image_root`. Ids absent from a tar index or path
  mapping are reported as missing (path '').
  """
  n = len(image_ids)
  ranges = np.tile(np.array(WHOLE_FILE, np.int64), (n, 1))
  missing = np.zeros(n, bool)
  paths = []
  if isinstance(image_paths, str):
    image_paths = split_io.read_image_paths(image_paths)
  root = os.path.abspath(image_root) if image_root else ""
  for i, image_id in enumerate(image_ids):
    if tar_index is not None:
      hit = tar_index.get(image_id)
      if hit is None:
        paths.append(os.path.join(root, "<not in tar shards>", image_id))
        missing[i] = True
      else:
        paths.append(hit[0])
        ranges[i] = hit[1], hit[2], hit[3]
      continue
    if image_paths is not None:
      rel = image_paths.get(image_id)
      if rel is None:
        paths.append(os.path.join(root, "<not in image index>", image_id))
        missing[i] = True
        continue
    else:
      try:
        rel = path_template.format(image_id=image_id)
      except (IndexError, KeyError, ValueError):
        raise ValueError(f"image_id {image_id!r} does not fit the image path "
                         f"template {path_template!r}") from None
    paths.append(rel if os.path.isabs(rel) else os.path.join(root, rel))
  return paths, ranges, missing


def check_index(index: ExampleIndex, missing: np.ndarray, mode: str):
  """(missing_mask, corrupt_mask) after the requested check."""
  return image_check.check_files(index.paths, index.ranges, missing, mode)


def apply_bad_image_policy(splits: Mapping[str, Tuple[ExampleIndex, np.ndarray, np.ndarray]],
                           config: LoaderConfig, report_path: str,
                           name: str) -> Dict[str, ExampleIndex]:
  """Writes the report; fails or drops bad examples as configured.

  Args:
    splits: split name -> (index, missing_mask, corrupt_mask).
    config: `check_images` and `on_bad_image`.
    report_path: JSON report (always written when a check ran).
    name: data set name for messages.

  Returns:
    split name -> index without the bad examples.
  """
  keep = image_check.report_and_apply(
      name, {split: image_check.SplitCheck(index.image_ids, index.paths,
                                           missing, corrupt, index.client_ids)
             for split, (index, missing, corrupt) in splits.items()},
      config.check_images, config.on_bad_image, report_path)
  return {split: (index if keep[split].all() else index.subset(keep[split]))
          for split, (index, _, _) in splits.items()}


# ----------------------------------------------------------------------------
# Loading a split.


def _class_names(rows: split_io.SplitRows, num_classes: int):
  """A class's name: its source id (`label`) where the file has one."""
  names = [str(c) for c in range(num_classes)]
  if rows.labels is not None:
    for c, label in zip(rows.classes.tolist(), rows.labels.tolist()):
      names[c] = str(label)
  return names


def load_image_split(name: str, split_csv_path: str,
                     image_root: Optional[str] = None, *,
                     split: Optional[str] = None,
                     test_csv: Optional[str] = None,
                     image_paths: PathSpec = None,
                     path_template: str = "{image_id}.jpg",
                     tar_shards: Optional[Sequence[str]] = None,
                     config: LoaderConfig = LoaderConfig()) -> cd.FederatedDataset:
  """A `FederatedDataset` from a published split CSV and images on disk.

  Used by `load_inaturalist` and `load_landmarks` (Hsu, Qi & Brown 2020);
  works on the builders' outputs and on the published CSVs unchanged.

  Args:
    name: data set name (reports, cache).
    split_csv_path: a split CSV in any published layout (see `split_io`):
      y is its `class` column (contiguous from 0); `label` is kept as the
      class name.
    image_root: directory the image paths are relative to.
    split: client column for TFF's multi-split layout (e.g. 'geo_1k').
    test_csv: optional `image_id,class[,label]` test set; its classes must
      occur in the split.
    image_paths: image id -> path (dict or `image_id,path` CSV).
    path_template: used when `image_paths` is None, e.g. '{image_id}.jpg' or
      GLD's '{image_id[0]}/{image_id[1]}/{image_id[2]}/{image_id}.jpg'.
    tar_shards: GLD-v2 tar shards holding the images (members found by id).
    config: `LoaderConfig`.

  Returns:
    `client_data.FederatedDataset` with raw elements
    {'path': string, 'range': int64[3], 'y': int64}.

  Raises:
    FileNotFoundError / split_io.SplitFormatError (file:line) for bad
    inputs, BadImagesError when images are missing or corrupt and
    `config.on_bad_image == 'fail'`.
  """
  if not isinstance(config, LoaderConfig):
    raise TypeError(f"config must be a LoaderConfig, got {type(config)}")
  if image_root is None and tar_shards is None:
    raise ValueError("give image_root or tar_shards")
  if image_root is not None and tar_shards is None and not os.path.isdir(image_root):
    raise FileNotFoundError(f"image_root {image_root}: no such directory")
  # y is the published `class`: contiguous 0..K-1, test classes within.
  rows, test, num_classes = split_io.read_split_files(split_csv_path, split,
                                                      test_csv)
  class_names = _class_names(rows, num_classes)
  tar_index = index_tar_shards(tar_shards) if tar_shards else None
  if isinstance(image_paths, str):
    image_paths = split_io.read_image_paths(image_paths)

  def make_index(clients, ids, labels):
    paths, ranges, missing = resolve_paths(ids, image_root, image_paths,
                                           path_template, tar_index)
    return ExampleIndex(clients, paths, ranges, labels, list(ids)), missing

  cache_dir = config.resolved_cache_dir()
  report_path = config.report_path or os.path.join(
      cache_dir, f"{name}.image_report.json")
  parts = {}
  train_index, missing = make_index(rows.client_ids, rows.image_ids,
                                    rows.classes)
  parts["train"] = (train_index, *check_index(train_index, missing,
                                              config.check_images))
  if test is not None:
    test_index, missing = make_index(None, test.image_ids, test.classes)
    parts["test"] = (test_index, *check_index(test_index, missing,
                                              config.check_images))
  clean = apply_bad_image_policy(parts, config, report_path, name)
  client_data = IndexedImageClientData(clean["train"], cache_dir)
  test_index = clean.get("test") or ExampleIndex(
      None, [], np.zeros([0, 3], np.int64), np.zeros([0], np.int64), [])
  train_map_fn, eval_map_fn = make_map_fns(config)
  size = int(config.image_size)
  return cd.FederatedDataset(
      name=name,
      client_data=client_data,
      test_data=index_dataset(test_index),
      train_map_fn=train_map_fn,
      eval_map_fn=eval_map_fn,
      num_classes=num_classes,
      client_sizes=client_data.client_sizes,
      class_counts=client_data.class_counts(num_classes),
      input_shape=(size, size, 3),
      info={"split_csv": os.path.abspath(split_csv_path), "split": split,
            "test_csv": test_csv and os.path.abspath(test_csv),
            "image_root": image_root and os.path.abspath(image_root),
            "tar_shards": list(tar_shards or []),
            "num_test_examples": len(test_index),
            "index_path": client_data.index_path,
            "image_report": report_path if config.check_images != "none" else None,
            "class_names": class_names,
            "reference": "Hsu, Qi & Brown 2020, ECCV"})


GLD_PATH_TEMPLATE = gld_layout.NESTED_TEMPLATE


def load_inaturalist(split_csv_path: str, image_root: str, *,
                     split: Optional[str] = None,
                     test_csv: Optional[str] = None,
                     image_paths: PathSpec = None,
                     metadata_json: Sequence[str] = (),
                     config: LoaderConfig = LoaderConfig(image_size=299)
                     ) -> cd.FederatedDataset:
  """iNaturalist-User-120k / -Geo-k of Hsu, Qi & Brown 2020 as ClientData.

  Args:
    split_csv_path: a published or builder's `user_id,image_id,class,label`
      file or TFF's `iNaturalist_train.csv` (then `split` names the column,
      e.g. 'geo_1k'). y = `class` (0..1202), never the source `label`.
    image_root: directory containing `train_val_images/`.
    split: see `load_image_split`.
    test_csv: `image_id,class[,label]` test CSV (the published test file, or
      the builder's `inaturalist_test.csv`).
    image_paths: an `image_id,path` CSV (the builder's `image_paths.csv`) or
      dict; if None, built from `metadata_json` (train2017.json,
      val2017.json), else images are `<image_root>/<image_id>.jpg`.
    metadata_json: iNaturalist 2017 COCO-style JSON files.
    config: `LoaderConfig` (299 x 299 crops by default).

  Returns:
    `client_data.FederatedDataset`.
  """
  if image_paths is None and metadata_json:
    from federated_vision.realworld import inaturalist  # pylint: disable=g-import-not-at-top
    image_paths = inaturalist.image_paths_from_metadata(metadata_json)
  name = "inaturalist_" + (split or os.path.splitext(
      os.path.basename(split_csv_path))[0].replace("inaturalist_", ""))
  return load_image_split(name, split_csv_path, image_root, split=split,
                          test_csv=test_csv, image_paths=image_paths,
                          config=config)


def load_landmarks(train_csv: str, *, image_root: Optional[str] = None,
                   tar_shards: Optional[Sequence[str]] = None,
                   test_csv: Optional[str] = None,
                   config: LoaderConfig = LoaderConfig(image_size=224)
                   ) -> cd.FederatedDataset:
  """Landmarks-User-160k of Hsu, Qi & Brown 2020 as ClientData.

  Args:
    train_csv: `user_id,image_id,class` (TFF's `federated_train.csv` or the
      builder's output).
    image_root: GLD-v2 images, `a/b/c/<id>.jpg` or TFF's flat cache (see
      `gld_layout`), or tar_shards: the `images_NNN.tar` shards.
    test_csv: `image_id,class`.
    config: `LoaderConfig` (224 x 224 crops by default).

  Returns:
    `client_data.FederatedDataset`.
  """
  return load_image_split("landmarks_user_160k", train_csv, image_root,
                          test_csv=test_csv, path_template=GLD_PATH_TEMPLATE
                          if image_root is None else gld_layout.image_template(image_root),
                          tar_shards=tar_shards, config=config)
