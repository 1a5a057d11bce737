"""Reading the published `user_id,image_id,class[,label]` split files.

The splits of Hsu, Qi & Brown 2020 (ECCV) as google-research's
`federated_vision_datasets` publishes them (column meanings: `split_io`):
train files `user_id,image_id,class[,label]`, test files
`image_id,class[,label]`, and TFF's `iNaturalist_train.csv` with one client
column per split (`NA` where an image is not in it). `read_split_rows` /
`read_test_rows` read them, `read_split_files` reads a pair and checks it
(`contiguous_num_classes`, `check_test_rows`). Every problem raises
`split_io.SplitFormatError` naming the file and line: a malformed row, a
repeated `image_id`, a non-integer class, a class with two labels. Plain
Python / numpy; importing it does not import TensorFlow.
"""

import re
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from federated_vision.data import split_io

_NON_NEGATIVE = re.compile(r"\d+")
_INTEGER = re.compile(r"-?\d+")


def _parse(text: str, column: str, where: str, pattern=_NON_NEGATIVE) -> int:
  if not pattern.fullmatch(text):
    kind = "a non-negative integer" if pattern is _NON_NEGATIVE else "an integer"
    raise split_io.SplitFormatError(f"{where}: {column} must be {kind}, got {text!r}")
  return int(text)


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


def read_table(path: str, client_column: Optional[str], integer_ids: bool,
               with_labels: bool) -> SplitRows:
  """Rows of a train (client_column set) or test (None) split file."""
  required = ((client_column,) if client_column else ()) + split_io.TEST_COLUMNS
  clients: Optional[List[str]] = [] if client_column else None
  images, classes, labels, lines = [], [], [], []
  first_line: Dict[object, int] = {}
  label_of: Dict[int, Tuple[int, int]] = {}
  class_of: Dict[int, Tuple[int, int]] = {}
  has_label = None
  tff_layout = client_column not in (None, "user_id")
  for line, row in split_io.read_rows(path, required):
    where = f"{path}:{line}"
    if has_label is None:
      has_label = with_labels and "label" in row
    image = row["image_id"]
    if not image:
      raise split_io.SplitFormatError(f"{where}: empty image_id")
    if integer_ids:
      image = _parse(image, "image_id", where)
    if image in first_line:
      raise split_io.SplitFormatError(
          f"{where}: image_id {image} already assigned on "
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
          raise split_io.SplitFormatError(
              f"{where}: {what} {key} has {other} {value}, but line "
              f"{previous[1]} gives it {other} {previous[0]}")
    if client_column:
      cid = row[client_column]
      if tff_layout and cid in (split_io.NA, ""):
        continue  # Not in this split.
      if not cid or cid == split_io.NA:
        raise split_io.SplitFormatError(f"{where}: {'NA' if cid else 'empty'} user_id")
      if "@" in cid:
        raise split_io.SplitFormatError(
            f"{where}: client id {cid!r} contains '@' "
            "(reserved for round keys)")
      clients.append(cid)
    images.append(image)
    classes.append(c)
    labels.append(label)
    lines.append(line)
  if not lines and client_column:  # An empty test set is a valid file.
    which = f" for split {client_column!r}" if tff_layout else ""
    raise split_io.SplitFormatError(f"{path}:2: no rows after the header{which}")
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
    FileNotFoundError, split_io.SplitFormatError (file:line), ValueError (bad
    `split`).
  """
  header = split_io.read_header(path)
  if "user_id" in header:
    if split not in (None, "user_id"):
      raise ValueError(f"split={split!r}: {path} has a user_id column; "
                       "pass split=None")
    column = "user_id"
  elif split is None:
    raise ValueError(f"split must name a client column of {path} (one of "
                     f"{','.join(h for h in header if h in split_io.TFF_INAT_SPLITS)})")
  elif split not in header or split in ("image_id", "class", "label"):
    raise ValueError(f"split={split!r} is not a client column of {path} "
                     f"(columns: {','.join(header)})")
  else:
    column = split
  return read_table(path, column, integer_ids, with_labels=True)


def read_test_rows(path: str, integer_ids: bool = False) -> SplitRows:
  """Reads a test file `image_id,class[,label]` (`client_ids` is None)."""
  return read_table(path, None, integer_ids, with_labels=True)


def contiguous_num_classes(rows: SplitRows) -> int:
  """K such that the `class` column holds exactly 0..K-1 (as published).

  Raises:
    split_io.SplitFormatError: naming the file and a missing class, when the classes
      are not contiguous from 0 (e.g. original category ids in `class`).
  """
  present = np.unique(rows.classes)
  k = int(present[-1]) + 1
  if present.size != k:
    missing = sorted(set(range(k)) - set(present.tolist()))
    raise split_io.SplitFormatError(
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
    split_io.SplitFormatError: naming the test file and line.
  """
  label_of = {}
  if train.labels is not None:
    label_of = dict(zip(train.classes.tolist(), train.labels.tolist()))
  train_classes = set(train.classes.tolist())
  train_images = set(train.image_ids)
  for k, c in enumerate(test.classes.tolist()):
    where = f"{test.path}:{int(test.lines[k])}"
    if test.image_ids[k] in train_images:
      raise split_io.SplitFormatError(
          f"{where}: image_id {test.image_ids[k]} is also "
          f"a training image in {train.path}")
    if c not in train_classes:
      raise split_io.SplitFormatError(f"{where}: class {c} never occurs in {train.path}")
    if test.labels is not None and label_of and label_of[c] != test.labels[k]:
      raise split_io.SplitFormatError(f"{where}: class {c} has label "
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
