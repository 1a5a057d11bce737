"""The published split format (Hsu, Qi & Brown 2020): columns, the CSV reader.

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

This module holds the format's column names, its error
(`SplitFormatError`) and the only CSV reader (`read_rows`) and writer
(`write_csv`) of the package's comma-separated inputs, plus the builders'
companion files (`read_image_paths`) and client-id order. Every problem
raises `SplitFormatError` naming the file and line: a malformed row or
header, a file that is not UTF-8. The split files themselves are read by
`split_rows` (`read_split_rows`, `read_test_rows`; a repeated `image_id`, a
non-integer class, a class with two labels) and, for integer-indexed CIFAR
files, `indexed_splits` (`read_split_csv` / `read_test_csv`). Plain Python;
importing it does not import TensorFlow.
"""

import csv
import os
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

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


# ----------------------------------------------------------------------------
# Client ids and the builders' companion files.


def sort_client_ids(ids: Iterable[str]) -> list:
  """Numeric order when every id is a decimal integer ('2' < '10'), else text."""
  ids = list(ids)
  if ids and all(i.isdigit() for i in ids):
    return sorted(ids, key=lambda i: (int(i), i))
  return sorted(ids)


def class_sort_key(c: str):
  """Numeric ids sort numerically, others after them as text."""
  return (0, int(c), "") if c.isdigit() else (1, 0, c)


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
