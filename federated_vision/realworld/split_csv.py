"""Reading and writing the published split CSV layouts of Hsu, Qi & Brown 2020.

Layouts (header line, comma separated, '\\n' line ends):

* iNaturalist per-split:  `user_id,image_id,class,label` (for the geo splits
  the `user_id` column holds the S2 cell token).
* TFF's `iNaturalist_train.csv`: `user_120k,geo_100,geo_300,geo_1k,geo_3k,
  geo_10k,geo_30k,image_id,class`; `NA` = the image is not in that split.
* Landmarks: `user_id,image_id,class`; test files `image_id,class`.

Errors name the file and line (`CsvFormatError`).
"""

import csv
import os
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence

NA = "NA"
USER_LAYOUT = ("user_id", "image_id", "class", "label")
LANDMARKS_LAYOUT = ("user_id", "image_id", "class")
TEST_LAYOUT = ("image_id", "class")
IMAGE_PATHS_LAYOUT = ("image_id", "path")
GEO_MAX_EXAMPLES = (100, 300, 1000, 3000, 10000, 30000)
TFF_INAT_SPLITS = ("user_120k", "geo_100", "geo_300", "geo_1k", "geo_3k",
                   "geo_10k", "geo_30k")
TFF_INAT_LAYOUT = TFF_INAT_SPLITS + ("image_id", "class")


class CsvFormatError(ValueError):
  """A malformed split CSV; the message names file and line."""


def geo_split_name(max_examples: int) -> str:
  """100 -> 'geo_100', 1000 -> 'geo_1k', 30000 -> 'geo_30k' (TFF's names)."""
  n = int(max_examples)
  if n >= 1000 and n % 1000 == 0:
    return f"geo_{n // 1000}k"
  return f"geo_{n}"


def write_csv(path: str, header: Sequence[str], rows: Iterable[Sequence]) -> int:
  """Writes a CSV with '\\n' line ends (byte-identical across runs)."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  n = 0
  with open(path, "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    for row in rows:
      w.writerow(row)
      n += 1
  return n


def _open_rows(path: str):
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{path}: no such file")
  f = open(path, newline="", encoding="utf-8")
  return f, csv.reader(f)


def read_header_and_rows(path: str, required: Sequence[str]):
  """Yields (line_number, dict) for each row; checks the header and widths."""
  f, reader = _open_rows(path)
  with f:
    try:
      header = next(reader)
    except StopIteration:
      raise CsvFormatError(f"{path}:1: empty file, expected header "
                           f"{','.join(required)}") from None
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
      raise CsvFormatError(f"{path}:1: header {','.join(header)} lacks "
                           f"column(s) {','.join(missing)}")
    width = len(header)
    for row in reader:
      if not row:
        continue
      if len(row) != width:
        raise CsvFormatError(f"{path}:{reader.line_num}: expected {width} "
                             f"fields, got {len(row)}")
      yield reader.line_num, dict(zip(header, row))


def read_header(path: str) -> List[str]:
  f, reader = _open_rows(path)
  with f:
    try:
      return [h.strip() for h in next(reader)]
    except StopIteration:
      raise CsvFormatError(f"{path}:1: empty file") from None


class SplitRows(NamedTuple):
  """Rows of one federated split, in file order.

  Attributes:
    client_ids: client of each row (user id or S2 token).
    image_ids: image id of each row.
    classes: the `class` column (as text).
    labels: the `label` column as ints, or None when the file has none.
  """
  client_ids: List[str]
  image_ids: List[str]
  classes: List[str]
  labels: Optional[List[int]]


def read_split_csv(path: str, split: Optional[str] = None) -> SplitRows:
  """Reads a federated split in any published layout.

  Args:
    path: a `user_id,image_id,class[,label]` CSV or TFF's
      `iNaturalist_train.csv` layout.
    split: for the TFF layout, which column is the client id (e.g.
      'user_120k', 'geo_1k'); rows with `NA` there are skipped. Must be None
      or 'user_id' for the per-split layouts.

  Returns:
    `SplitRows`.

  Raises:
    FileNotFoundError, CsvFormatError (file:line), ValueError (bad `split`).
  """
  header = read_header(path)
  if "user_id" in header:
    if split not in (None, "user_id"):
      raise ValueError(f"split={split!r}: {path} has a user_id column; "
                       "pass split=None")
    column = "user_id"
  else:
    if split is None:
      raise ValueError(f"split must name a client column of {path} "
                       f"(one of {','.join(h for h in header if h in TFF_INAT_SPLITS)})")
    if split not in header:
      raise ValueError(f"split={split!r} is not a column of {path} "
                       f"(columns: {','.join(header)})")
    column = split
  has_label = "label" in header
  clients, images, classes, labels = [], [], [], []
  for line, row in read_header_and_rows(path, (column, "image_id", "class")):
    cid = row[column].strip()
    if cid == NA or cid == "":
      if column == "user_id":
        raise CsvFormatError(f"{path}:{line}: empty or NA user_id")
      continue
    if "@" in cid:
      raise CsvFormatError(f"{path}:{line}: client id {cid!r} contains '@'")
    image_id = row["image_id"].strip()
    if not image_id:
      raise CsvFormatError(f"{path}:{line}: empty image_id")
    clients.append(cid)
    images.append(image_id)
    classes.append(row["class"].strip())
    if has_label:
      try:
        labels.append(int(row["label"]))
      except ValueError:
        raise CsvFormatError(f"{path}:{line}: label {row['label']!r} is not "
                             "an integer") from None
  if not clients:
    raise CsvFormatError(f"{path}: no rows for split {column!r}")
  return SplitRows(clients, images, classes, labels if has_label else None)


def read_test_csv(path: str):
  """Reads `image_id,class[,label]`; returns (image_ids, classes, labels|None)."""
  header = read_header(path)
  has_label = "label" in header
  images, classes, labels = [], [], []
  for line, row in read_header_and_rows(path, TEST_LAYOUT):
    images.append(row["image_id"].strip())
    classes.append(row["class"].strip())
    if has_label:
      try:
        labels.append(int(row["label"]))
      except ValueError:
        raise CsvFormatError(f"{path}:{line}: label {row['label']!r} is not "
                             "an integer") from None
  return images, classes, (labels if has_label else None)


def read_image_paths(path: str) -> Dict[str, str]:
  """Reads an `image_id,path` index (paths relative to the image root)."""
  out = {}
  for line, row in read_header_and_rows(path, IMAGE_PATHS_LAYOUT):
    image_id = row["image_id"].strip()
    if image_id in out and out[image_id] != row["path"]:
      raise CsvFormatError(f"{path}:{line}: image_id {image_id} listed twice "
                           "with different paths")
    out[image_id] = row["path"]
  return out


def class_sort_key(c: str):
  """Numeric classes sort numerically, others after them as text."""
  try:
    return (0, int(c), "")
  except ValueError:
    return (1, 0, c)
