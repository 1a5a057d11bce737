"""Splits whose image ids index the source arrays (CIFAR Dirichlet splits).

The CIFAR-10 / CIFAR-100 clients of Hsu, Qi & Brown 2020 (Section 6.1 and
Appendix B.1, "Synthetic Clients with Dirichlet Prior", following the
protocol of Hsu et al. 2019's "Synthetic Non-Identical Data"), published by
google-research's `federated_vision_datasets` as
`federated_train_alpha_<alpha>.csv`, name an image by its integer index into
the source training (or test) set.
`write_split_csv` / `write_splits` write a partition in that format,
`read_split_csv` / `read_test_csv` / `read_splits` read it back as index
arrays, checking ids against the source set and classes against its labels
(`split_io.SplitFormatError`, naming the file and line).
"""

import math
import os
import re
from typing import Dict, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from federated_vision.data import split_io
from federated_vision.data import split_rows

_FILENAME_RE = re.compile(r"^federated_train_alpha_(.+)\.csv$")

Partition = Dict[str, np.ndarray]


class Split(NamedTuple):
  """A split read from CSV.

  Attributes:
    partition: client id -> sorted int64 image ids (indices into the source
      training set), clients in `split_io.sort_client_ids` order.
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
  split_io.write_csv(path, split_io.COLUMNS, ((cid, int(i), int(labels[i]))
                                              for cid, idx in rows for i in idx))
  return path


def _check_sources(rows: split_rows.SplitRows, num_examples: Optional[int],
                   labels: Optional[np.ndarray]) -> None:
  """Image ids inside the source set; classes equal to its labels."""
  for k, (image, c) in enumerate(zip(rows.image_ids, rows.classes.tolist())):
    where = f"{rows.path}:{int(rows.lines[k])}"
    if num_examples is not None and image >= num_examples:
      raise split_io.SplitFormatError(
          f"{where}: image_id {image} is outside the "
          f"source set of {num_examples} examples")
    if labels is not None and c != int(labels[image]):
      raise split_io.SplitFormatError(
          f"{where}: class {c} of image_id {image} differs "
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
    split_io.SplitFormatError: `path:line: ...` for the first malformed row.
  """
  num_examples, labels = _source_args(num_examples, labels)
  rows = split_rows.read_table(path, "user_id", integer_ids=True, with_labels=False)
  _check_sources(rows, num_examples, labels)
  images: Dict[str, list] = {}
  classes: Dict[str, list] = {}
  for cid, image, c in zip(rows.client_ids, rows.image_ids, rows.classes):
    images.setdefault(cid, []).append(image)
    classes.setdefault(cid, []).append(c)
  partition, per_client = {}, {}
  for cid in split_io.sort_client_ids(images):
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
    FileNotFoundError, split_io.SplitFormatError (file:line).
  """
  num_examples, labels = _source_args(num_examples, labels)
  rows = split_rows.read_table(path, None, integer_ids=True, with_labels=False)
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
