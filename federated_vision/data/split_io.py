"""The published split format (Hsu, Qi & Brown 2020): the one reader and writer.

google-research's `federated_vision_datasets` publishes CIFAR-10/100,
iNaturalist-User-120k / -Geo and Landmarks-User-160k as CSV files with a
header row:

  * train files: `user_id,image_id,class[,label]`;
  * test files: `image_id,class[,label]` (no `user_id`).

Columns, as the published README defines them:

  * `user_id`: the client (numbers, S2 cell tokens or author names);
  * `image_id`: the image's id in the source data set (CIFAR: the index in
    the training / test set, an integer; iNaturalist: the image file's stem;
    GLD-v2: the 16-hex-digit image id);
  * `class`: the class label used in the paper, contiguous from 0
    (iNaturalist 0..1202, Landmarks 0..2027, CIFAR 0..9 / 0..99). Models are
    trained on this column;
  * `label`: the original class id in the source data set (iNaturalist 2017
    category id; iNaturalist only).

TFF's `iNaturalist_train.csv` carries every iNaturalist split in one file:
`user_120k,geo_100,geo_300,geo_1k,geo_3k,geo_10k,geo_30k,image_id,class`,
`NA` where an image is not in a split; `tff.simulation.datasets.inaturalist`
reads `int(class)` as the label.

This module is the only parser of that family (`read_split_rows`,
`read_test_rows`; `read_split_csv` / `read_test_csv` for integer-indexed CIFAR
files) and of the other comma-separated inputs (`read_rows`). Every problem
raises `SplitFormatError` naming the file and line: a malformed row, a
repeated `image_id`, a non-integer class, a class with two labels, a file that
is not UTF-8. Plain Python / numpy; importing it does not import TensorFlow.
"""

import csv
import math
import os
import re
from typing import (Dict, Iterable, Iterator, List, Mapping, NamedTuple,
                    Optional, Sequence, Tuple)

import numpy as np

COLUMNS = ("user_id", "image_id", "class")
TEST_COLUMNS = ("image_id", "class")
INAT_COLUMNS = COLUMNS + ("label",)
INAT_TEST_COLUMNS = TEST_COLUMNS + ("label",)
IMAGE_PATHS_COLUMNS = ("image_id", "path")
NA = "NA"
GEO_MAX_EXAMPLES = (100, 300, 1000, 3000, 10000, 30000)
TFF_INAT_SPLITS = ("user_120k", "geo_100", "geo_300", "geo_1k", "geo_3k",
                   "geo_10k", "geo_30k")
TFF_INAT_COLUMNS = TFF_INAT_SPLITS + ("image_id", "class")
_FILENAME_RE = re.compile(r"^federated_train_alpha_(.+)\.csv$")
_NON_NEGATIVE = re.compile(r"\d+")
_INTEGER = re.compile(r"-?\d+")

Partition = Dict[str, np.ndarray]


class SplitFormatError(ValueError):
  """A malformed input file; the message starts with `path:line:`."""


# ----------------------------------------------------------------------------
# Generic CSV reading and writing.


def _first_bad_utf8_line(path: str) -> Tuple[int, int, int]:
  """(line, column, byte) of the first byte sequence that is not UTF-8."""
  with open(path, "rb") as f:
    for number, raw in enumerate(f, start=1):
      try:
        raw.decode("utf-8")
      except UnicodeDecodeError as e:
        return number, e.start + 1, raw[e.start]
  return 1, 1, 0


def _iter_csv(path: str, required: Sequence[str]):
  """Yields (1, header fields), then (line, {column: text}) for each row."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{path}: no such file")
  line = 1
  try:
    with open(path, newline="", encoding="utf-8-sig") as f:
      reader = csv.reader(f)
      header = next(reader, None)
      if header is None:
        raise SplitFormatError(f"{path}:1: empty file, expected the header "
                               f"{','.join(required)}")
      header = [h.strip() for h in header]
      missing = [c for c in required if c not in header]
      if missing:
        raise SplitFormatError(f"{path}:1: header {','.join(header)} lacks "
                               f"column(s) {','.join(missing)}")
      repeated = sorted({h for h in header if header.count(h) > 1})
      if repeated:
        raise SplitFormatError(f"{path}:1: header repeats column(s) "
                               f"{','.join(repeated)}")
      yield 1, header
      width = len(header)
      for row in reader:
        line = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
          continue  # Blank line.
        if len(row) != width:
          raise SplitFormatError(f"{path}:{line}: expected {width} fields "
                                 f"({','.join(header)}), got {len(row)}")
        yield line, {h: v.strip() for h, v in zip(header, row)}
  except UnicodeDecodeError:
    bad_line, column, byte = _first_bad_utf8_line(path)
    raise SplitFormatError(f"{path}:{bad_line}: not UTF-8 text (byte "
                           f"0x{byte:02x} at column {column})") from None
  except csv.Error as e:
    raise SplitFormatError(f"{path}:{line + 1}: malformed CSV ({e})") from None


def read_rows(path: str, required: Sequence[str]
              ) -> Iterator[Tuple[int, Dict[str, str]]]:
  """Yields (line number, {column: text}) for each non-blank row of a CSV.

  Checks the header (every `required` column, no repeats) and the width of
  each row. Fields are stripped of surrounding white space.

  Raises:
    FileNotFoundError: naming `path`.
    SplitFormatError: `path:line: ...` (header, width, not UTF-8, bad CSV).
  """
  rows = _iter_csv(path, required)
  next(rows)
  yield from rows


def read_header(path: str) -> List[str]:
  """The stripped header fields of a CSV file (errors as `read_rows`)."""
  rows = _iter_csv(path, ())
  try:
    return next(rows)[1]
  finally:
    rows.close()


def write_csv(path: str, header: Sequence[str], rows: Iterable[Sequence]) -> int:
  """Writes a CSV with '\\n' line ends atomically; returns the row count.

  The rows go to a temporary file that is renamed when complete, so a reader
  never sees a half-written file and an exception leaves nothing behind.
  """
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  tmp = f"{path}.tmp{os.getpid()}"
  n = 0
  try:
    with open(tmp, "w", newline="", encoding="utf-8") as f:
      w = csv.writer(f, lineterminator="\n")
      w.writerow(header)
      for row in rows:
        w.writerow(row)
        n += 1
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)
  return n


def _parse(text: str, column: str, where: str, pattern=_NON_NEGATIVE) -> int:
  if not pattern.fullmatch(text):
    kind = "a non-negative integer" if pattern is _NON_NEGATIVE else "an integer"
    raise SplitFormatError(f"{where}: {column} must be {kind}, got {text!r}")
  return int(text)


# ----------------------------------------------------------------------------
# The `user_id,image_id,class[,label]` family.


class SplitRows(NamedTuple):
  """The rows of a split file, in file order.

  Attributes:
    path: the file.
    client_ids: client of each row; None for a test file.
    image_ids: image id of each row (str, or int with `integer_ids`).
    classes: int64 `class` of each row (the paper's contiguous class).
    labels: int64 `label` of each row (the source data set's id), or None
      when the file has no `label` column.
    lines: int64 line number of each row (for messages).
  """
  path: str
  client_ids: Optional[List[str]]
  image_ids: list
  classes: np.ndarray
  labels: Optional[np.ndarray]
  lines: np.ndarray

  @property
  def num_classes(self) -> int:
    """K, after checking that the classes are exactly 0..K-1."""
    return contiguous_num_classes(self)


def _read_table(path: str, client_column: Optional[str], integer_ids: bool,
                with_labels: bool) -> SplitRows:
  """Rows of a train (client_column set) or test (None) split file."""
  required = ((client_column,) if client_column else ()) + TEST_COLUMNS
  clients: Optional[List[str]] = [] if client_column else None
  images, classes, labels, lines = [], [], [], []
  first_line: Dict[object, int] = {}
  label_of: Dict[int, Tuple[int, int]] = {}
  class_of: Dict[int, Tuple[int, int]] = {}
  has_label = None
  tff_layout = client_column not in (None, "user_id")
  for line, row in read_rows(path, required):
    where = f"{path}:{line}"
    if has_label is None:
      has_label = with_labels and "label" in row
    image = row["image_id"]
    if not image:
      raise SplitFormatError(f"{where}: empty image_id")
    if integer_ids:
      image = _parse(image, "image_id", where)
    if image in first_line:
      raise SplitFormatError(f"{where}: image_id {image} already assigned on "
                             f"line {first_line[image]}")
    first_line[image] = line
    c = _parse(row["class"], "class", where)
    label = _parse(row["label"], "label", where, _INTEGER) if has_label else None
    if has_label:
      # class <-> label is one-to-one: a class is one source category.
      for key, value, seen, what in ((c, label, label_of, "class"),
                                     (label, c, class_of, "label")):
        previous = seen.setdefault(key, (value, line))
        if previous[0] != value:
          other = "label" if what == "class" else "class"
          raise SplitFormatError(
              f"{where}: {what} {key} has {other} {value}, but line "
              f"{previous[1]} gives it {other} {previous[0]}")
    if client_column:
      cid = row[client_column]
      if tff_layout and cid in (NA, ""):
        continue  # Not in this split.
      if not cid or cid == NA:
        raise SplitFormatError(f"{where}: {'NA' if cid else 'empty'} user_id")
      if "@" in cid:
        raise SplitFormatError(f"{where}: client id {cid!r} contains '@' "
                               "(reserved for round keys)")
      clients.append(cid)
    images.append(image)
    classes.append(c)
    labels.append(label)
    lines.append(line)
  if not lines and client_column:  # An empty test set is a valid file.
    which = f" for split {client_column!r}" if tff_layout else ""
    raise SplitFormatError(f"{path}:2: no rows after the header{which}")
  return SplitRows(path, clients, images, np.asarray(classes, np.int64),
                   np.asarray(labels, np.int64) if has_label else None,
                   np.asarray(lines, np.int64))


def read_split_rows(path: str, split: Optional[str] = None,
                    integer_ids: bool = False) -> SplitRows:
  """Reads a federated train split in any published layout.

  Args:
    path: a `user_id,image_id,class[,label]` file, or TFF's
      `iNaturalist_train.csv` layout (`split` names the client column; rows
      with `NA` there are not in the split).
    split: None (or 'user_id') for the per-split layout; the client column
      for the TFF layout, e.g. 'user_120k' or 'geo_1k'.
    integer_ids: parse `image_id` as a non-negative integer (CIFAR).

  Returns:
    `SplitRows` with client ids.

  Raises:
    FileNotFoundError, SplitFormatError (file:line), ValueError (bad
    `split`).
  """
  header = read_header(path)
  if "user_id" in header:
    if split not in (None, "user_id"):
      raise ValueError(f"split={split!r}: {path} has a user_id column; "
                       "pass split=None")
    column = "user_id"
  elif split is None:
    raise ValueError(f"split must name a client column of {path} (one of "
                     f"{','.join(h for h in header if h in TFF_INAT_SPLITS)})")
  elif split not in header or split in ("image_id", "class", "label"):
    raise ValueError(f"split={split!r} is not a client column of {path} "
                     f"(columns: {','.join(header)})")
  else:
    column = split
  return _read_table(path, column, integer_ids, with_labels=True)


def read_test_rows(path: str, integer_ids: bool = False) -> SplitRows:
  """Reads a test file `image_id,class[,label]` (`client_ids` is None)."""
  return _read_table(path, None, integer_ids, with_labels=True)


def contiguous_num_classes(rows: SplitRows) -> int:
  """K such that the `class` column holds exactly 0..K-1 (as published).

  Raises:
    SplitFormatError: naming the file and a missing class, when the classes
      are not contiguous from 0 (e.g. original category ids in `class`).
  """
  present = np.unique(rows.classes)
  k = int(present[-1]) + 1
  if present.size != k:
    missing = sorted(set(range(k)) - set(present.tolist()))
    raise SplitFormatError(
        f"{rows.path}: the class column is not contiguous from 0: "
        f"{present.size} distinct classes up to {k - 1}, {len(missing)} "
        f"missing (e.g. {missing[0]}); published splits number classes 0..K-1 "
        "(source ids belong in 'label')")
  return k


def check_test_rows(train: SplitRows, test: SplitRows) -> None:
  """Test rows fit the train split of the same source data set.

  Every test class occurs in train (with the same label where both files
  have one), and no test image is also a training image.

  Raises:
    SplitFormatError: naming the test file and line.
  """
  label_of = {}
  if train.labels is not None:
    label_of = dict(zip(train.classes.tolist(), train.labels.tolist()))
  train_classes = set(train.classes.tolist())
  train_images = set(train.image_ids)
  for k, c in enumerate(test.classes.tolist()):
    where = f"{test.path}:{int(test.lines[k])}"
    if test.image_ids[k] in train_images:
      raise SplitFormatError(f"{where}: image_id {test.image_ids[k]} is also "
                             f"a training image in {train.path}")
    if c not in train_classes:
      raise SplitFormatError(f"{where}: class {c} never occurs in {train.path}")
    if test.labels is not None and label_of and label_of[c] != test.labels[k]:
      raise SplitFormatError(f"{where}: class {c} has label "
                             f"{int(test.labels[k])}, but {train.path} gives "
                             f"it label {label_of[c]}")


def read_split_files(path: str, split: Optional[str] = None,
                     test_path: Optional[str] = None
                     ) -> Tuple[SplitRows, Optional[SplitRows], int]:
  """A train split and its optional test file, checked together.

  Returns:
    (train rows, test rows or None, K) with the classes contiguous 0..K-1
    and every test class present in train (`contiguous_num_classes`,
    `check_test_rows`).
  """
  rows = read_split_rows(path, split)
  test = read_test_rows(test_path) if test_path is not None else None
  num_classes = contiguous_num_classes(rows)
  if test is not None:
    check_test_rows(rows, test)
  return rows, test, num_classes


# ----------------------------------------------------------------------------
# CIFAR: integer image ids indexing the source arrays.


class Split(NamedTuple):
  """A split read from CSV.

  Attributes:
    partition: client id -> sorted int64 image ids (indices into the source
      training set), clients in `sort_client_ids` order.
    classes: client id -> int64 class of each image, aligned with
      `partition[client]`.
  """
  partition: Partition
  classes: Dict[str, np.ndarray]

  def labels(self, num_examples: Optional[int] = None) -> np.ndarray:
    """Label array over the source index (-1 where no client uses an image)."""
    if num_examples is None:
      num_examples = 1 + max((int(v.max()) for v in self.partition.values()
                              if v.size), default=-1)
    out = np.full(num_examples, -1, np.int64)
    for cid, idx in self.partition.items():
      out[idx] = self.classes[cid]
    return out


class TestSplit(NamedTuple):
  """A test file with integer image ids, in file order (int64 arrays)."""
  image_ids: np.ndarray
  classes: np.ndarray


def split_filename(alpha: float) -> str:
  """`federated_train_alpha_<alpha:.2f>.csv`, the published naming.

  Args:
    alpha: the Dirichlet concentration, >= 0 and finite.

  Returns:
    e.g. 'federated_train_alpha_0.05.csv' for 0.05, '..._100.00.csv' for 100.
  """
  if not (isinstance(alpha, (int, float, np.integer, np.floating))
          and alpha >= 0 and math.isfinite(alpha)):
    raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
  return f"federated_train_alpha_{float(alpha):.2f}.csv"


def alpha_from_filename(path: str) -> float:
  """Inverse of `split_filename` (basename only); ValueError otherwise."""
  match = _FILENAME_RE.match(os.path.basename(path))
  if not match:
    raise ValueError(f"{path!r} is not named federated_train_alpha_<alpha>.csv")
  try:
    return float(match.group(1))
  except ValueError:
    raise ValueError(f"{path!r}: alpha {match.group(1)!r} is not a number") from None


def sort_client_ids(ids: Iterable[str]) -> list:
  """Numeric order when every id is a decimal integer ('2' < '10'), else text."""
  ids = list(ids)
  if ids and all(i.isdigit() for i in ids):
    return sorted(ids, key=lambda i: (int(i), i))
  return sorted(ids)


def class_sort_key(c: str):
  """Numeric ids sort numerically, others after them as text."""
  return (0, int(c), "") if c.isdigit() else (1, 0, c)


def write_split_csv(path: str, partition: Mapping[str, Sequence[int]],
                    labels: Sequence[int]) -> str:
  """Writes a partition in the published `user_id,image_id,class` format.

  Rows are grouped by client, in the partition's order, image ids ascending.
  The file is written to a temporary name and renamed, so readers never see a
  partial file.

  Args:
    path: output CSV path (directories are created).
    partition: client id -> indices into the source training set.
    labels: the label of every example of the source training set.

  Returns:
    `path`.

  Raises:
    ValueError: if a client id is empty or contains a comma / quote / newline,
      an index is out of range, or clients overlap.
  """
  labels = np.asarray(labels)
  if labels.ndim != 1:
    raise ValueError(f"labels must be 1-D, got shape {labels.shape}")
  if not partition:
    raise ValueError("partition must have at least one client")
  seen = np.zeros(labels.size, dtype=bool)
  rows = []
  for cid, idx in partition.items():
    if not isinstance(cid, str) or not cid or any(ch in cid for ch in ',"\r\n'):
      raise ValueError(f"partition: client id {cid!r} cannot be written as a "
                       "plain CSV field")
    idx = np.sort(np.asarray(idx, dtype=np.int64))
    if idx.size and (idx[0] < 0 or idx[-1] >= labels.size):
      raise ValueError(f"partition: client {cid!r} has indices outside "
                       f"[0, {labels.size})")
    if seen[idx].any() or np.any(np.diff(idx) == 0):
      raise ValueError(f"partition: client {cid!r} shares images with another "
                       "client (or repeats one)")
    seen[idx] = True
    rows.append((cid, idx))
  write_csv(path, COLUMNS, ((cid, int(i), int(labels[i]))
                            for cid, idx in rows for i in idx))
  return path


def _check_sources(rows: SplitRows, num_examples: Optional[int],
                   labels: Optional[np.ndarray]) -> None:
  """Image ids inside the source set; classes equal to its labels."""
  for k, (image, c) in enumerate(zip(rows.image_ids, rows.classes.tolist())):
    where = f"{rows.path}:{int(rows.lines[k])}"
    if num_examples is not None and image >= num_examples:
      raise SplitFormatError(f"{where}: image_id {image} is outside the "
                             f"source set of {num_examples} examples")
    if labels is not None and c != int(labels[image]):
      raise SplitFormatError(f"{where}: class {c} of image_id {image} differs "
                             f"from the source label {int(labels[image])}")


def _source_args(num_examples, labels):
  if labels is not None:
    labels = np.asarray(labels)
    if num_examples is None:
      num_examples = labels.size
  return num_examples, labels


def read_split_csv(path: str, num_examples: Optional[int] = None,
                   labels: Optional[Sequence[int]] = None) -> Split:
  """Reads a published-format train split with integer ids into a partition.

  Every row is checked (see `read_split_rows`); in addition `image_id` is a
  non-negative integer and, when given, `image_id < num_examples` and
  `class == labels[image_id]`. Extra columns (e.g. `label`) are ignored.

  Args:
    path: the CSV file.
    num_examples: size of the source training set, to range-check image ids
      (defaults to len(labels) when labels are given).
    labels: source labels, to check the `class` column against.

  Returns:
    A `Split` (partition and per-image classes).

  Raises:
    FileNotFoundError: if `path` does not exist.
    SplitFormatError: `path:line: ...` for the first malformed row.
  """
  num_examples, labels = _source_args(num_examples, labels)
  rows = _read_table(path, "user_id", integer_ids=True, with_labels=False)
  _check_sources(rows, num_examples, labels)
  images: Dict[str, list] = {}
  classes: Dict[str, list] = {}
  for cid, image, c in zip(rows.client_ids, rows.image_ids, rows.classes):
    images.setdefault(cid, []).append(image)
    classes.setdefault(cid, []).append(c)
  partition, per_client = {}, {}
  for cid in sort_client_ids(images):
    idx = np.asarray(images[cid], np.int64)
    order = np.argsort(idx, kind="stable")
    partition[cid] = idx[order]
    per_client[cid] = np.asarray(classes[cid], np.int64)[order]
  return Split(partition, per_client)


def read_test_csv(path: str, num_examples: Optional[int] = None,
                  labels: Optional[Sequence[int]] = None) -> TestSplit:
  """Reads a published `test.csv` (`image_id,class`) with integer ids (CIFAR).

  Args:
    path: the CSV file.
    num_examples: size of the source test set (defaults to len(labels)).
    labels: source test labels, to check the `class` column against.

  Returns:
    A `TestSplit` in file order.

  Raises:
    FileNotFoundError, SplitFormatError (file:line).
  """
  num_examples, labels = _source_args(num_examples, labels)
  rows = _read_table(path, None, integer_ids=True, with_labels=False)
  _check_sources(rows, num_examples, labels)
  return TestSplit(np.asarray(rows.image_ids, np.int64), rows.classes)


def write_splits(directory: str, partitions: Mapping[float, Mapping[str, Sequence[int]]],
                 labels: Sequence[int]) -> Dict[float, str]:
  """One published-format CSV per alpha under `directory`; alpha -> path."""
  return {alpha: write_split_csv(os.path.join(directory, split_filename(alpha)),
                                 part, labels)
          for alpha, part in partitions.items()}


def read_splits(directory: str, num_examples: Optional[int] = None,
                labels: Optional[Sequence[int]] = None) -> Dict[float, Split]:
  """Reads every `federated_train_alpha_*.csv` in `directory`, by alpha."""
  if not os.path.isdir(directory):
    raise FileNotFoundError(f"split directory {directory!r} does not exist")
  out = {}
  for name in sorted(os.listdir(directory)):
    if _FILENAME_RE.match(name):
      out[alpha_from_filename(name)] = read_split_csv(
          os.path.join(directory, name), num_examples, labels)
  if not out:
    raise FileNotFoundError(f"no federated_train_alpha_*.csv in {directory!r}")
  return dict(sorted(out.items()))


# ----------------------------------------------------------------------------
# Companion files of the builders.


def geo_split_name(max_examples: int) -> str:
  """100 -> 'geo_100', 1000 -> 'geo_1k', 30000 -> 'geo_30k' (TFF's names)."""
  n = int(max_examples)
  if n >= 1000 and n % 1000 == 0:
    return f"geo_{n // 1000}k"
  return f"geo_{n}"


def read_image_paths(path: str) -> Dict[str, str]:
  """Reads an `image_id,path` index (paths relative to the image root)."""
  out, first_line = {}, {}
  for line, row in read_rows(path, IMAGE_PATHS_COLUMNS):
    image_id = row["image_id"]
    if image_id in out:
      raise SplitFormatError(f"{path}:{line}: image_id {image_id} already "
                             f"listed on line {first_line[image_id]}")
    out[image_id], first_line[image_id] = row["path"], line
  return out
