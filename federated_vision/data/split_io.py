"""The published split format: CSV files `user_id,image_id,class`.

Hsu, Qi & Brown (ECCV 2020) publish their federated splits of CIFAR-10/100
(the Dirichlet partitions of Hsu, Qi & Brown 2019, one file per alpha, named
`federated_train_alpha_<alpha with 2 decimals>.csv`) as CSV files with a
header row and the columns

  * `user_id`: the client,
  * `image_id`: the example's index in the source training set (for CIFAR, the
    position in the concatenated `data_batch_1..5`, i.e. tfds' train order),
  * `class`: its label.

Extra columns (e.g. iNaturalist's `label`) are ignored. This module writes
partitions (`federated_vision.data.partition`) in that format and reads them back
as partitions, checking every row; errors name the file and line.

Plain Python / numpy; importing this module does not import TensorFlow.
"""

import csv
import math
import os
import re
from typing import Dict, Iterable, Mapping, NamedTuple, Optional, Sequence

import numpy as np

COLUMNS = ("user_id", "image_id", "class")
_FILENAME_RE = re.compile(r"^federated_train_alpha_(.+)\.csv$")

Partition = Dict[str, np.ndarray]


class SplitFormatError(ValueError):
  """A malformed split file; the message starts with `path:line:`."""


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
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  tmp = f"{path}.tmp{os.getpid()}"
  with open(tmp, "w", newline="") as f:
    f.write(",".join(COLUMNS) + "\n")
    for cid, idx in rows:
      f.writelines(f"{cid},{i},{int(labels[i])}\n" for i in idx)
  os.replace(tmp, path)
  return path


def _parse_int(text: str, column: str, where: str) -> int:
  text = text.strip()
  if not re.fullmatch(r"\d+", text):
    raise SplitFormatError(f"{where}: {column} must be a non-negative integer, "
                           f"got {text!r}")
  return int(text)


def read_split_csv(path: str, num_examples: Optional[int] = None,
                   labels: Optional[Sequence[int]] = None) -> Split:
  """Reads a published-format split CSV into a partition.

  Every row is checked: the three columns are present and non-empty,
  `image_id` and `class` are non-negative integers, no image appears twice,
  and, when given, `image_id < num_examples` and `class == labels[image_id]`.

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
  if labels is not None:
    labels = np.asarray(labels)
    if num_examples is None:
      num_examples = labels.size
  if not os.path.isfile(path):
    raise FileNotFoundError(f"split file {path!r} does not exist")
  images: Dict[str, list] = {}
  classes: Dict[str, list] = {}
  first_line: Dict[int, int] = {}
  with open(path, newline="") as f:
    reader = csv.reader(f)
    try:
      header = next(reader)
    except StopIteration:
      raise SplitFormatError(f"{path}:1: empty file, expected the header "
                             f"{','.join(COLUMNS)}") from None
    header = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
      raise SplitFormatError(f"{path}:1: header {header} lacks column(s) "
                             f"{missing}; expected {','.join(COLUMNS)}")
    cols = [header.index(c) for c in COLUMNS]
    width = len(header)
    for row in reader:
      line = reader.line_num
      where = f"{path}:{line}"
      if not row or (len(row) == 1 and not row[0].strip()):
        continue  # Blank line.
      if len(row) != width:
        raise SplitFormatError(f"{where}: expected {width} fields "
                               f"({','.join(header)}), got {len(row)}: {row}")
      user = row[cols[0]].strip()
      if not user:
        raise SplitFormatError(f"{where}: empty user_id")
      image = _parse_int(row[cols[1]], "image_id", where)
      label = _parse_int(row[cols[2]], "class", where)
      if image in first_line:
        raise SplitFormatError(f"{where}: image_id {image} already assigned on "
                               f"line {first_line[image]}")
      first_line[image] = line
      if num_examples is not None and image >= num_examples:
        raise SplitFormatError(f"{where}: image_id {image} is outside the "
                               f"source set of {num_examples} examples")
      if labels is not None and label != int(labels[image]):
        raise SplitFormatError(f"{where}: class {label} of image_id {image} "
                               f"differs from the source label "
                               f"{int(labels[image])}")
      images.setdefault(user, []).append(image)
      classes.setdefault(user, []).append(label)
  if not images:
    raise SplitFormatError(f"{path}:2: no rows after the header")
  partition, per_client = {}, {}
  for cid in sort_client_ids(images):
    idx = np.asarray(images[cid], np.int64)
    order = np.argsort(idx, kind="stable")
    partition[cid] = idx[order]
    per_client[cid] = np.asarray(classes[cid], np.int64)[order]
  return Split(partition, per_client)


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
