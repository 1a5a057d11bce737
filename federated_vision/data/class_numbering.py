"""Class numbering of a train split and its test file, checked across writers.

Hsu, Qi & Brown 2020 (ECCV) train on the published `class` column, the
paper's contiguous class (iNaturalist 0..1202, Landmarks 0..2027); `label`,
where a file has it, is the source data set's id (the iNaturalist 2017
category id). A train file and a test file written by different tools need
not number classes alike (TFF's `iNaturalist_train.csv`, the published
`test.csv`, our builders' files): read together unchecked, the test labels
would be silently wrong. `split_io` parses each file; this module decides
whether the pair's numbering is known to agree, and checks it where it can.

Forms and writers (decided from the header and the file name only):

  * train, TFF layout: client columns `user_120k,geo_100,...` and no
    `user_id` (TFF's iNaturalist cache writes it as `iNaturalist_train.csv`;
    our iNaturalist builder writes a copy of that layout). No `label`.
  * train, per-split layout: `user_id,image_id,class[,label]` (the published
    files, our builders' `inaturalist_<split>.csv` / `federated_train.csv`).
  * test, TFF: `image_id,class` named `iNaturalist_test.csv` (TFF's cache).
  * test, per-split: any other `image_id,class[,label]`.

Two files come from the *same writer* when their layouts match (TFF with TFF,
per-split with per-split) and both or neither carry `label`, or when they are
our iNaturalist builder's pair: `iNaturalist_train.csv` and
`inaturalist_test.csv` in one directory (one class map writes both).

The rule (`check_class_numbering`):

  1. Both files carry `label`: checked directly, no metadata needed: a label
     is the same class in both files and a class the same label.
  2. Same writer and one of them carries `label`: accepted (the writer
     numbered both from one class map).
  3. Otherwise (different writers, or neither carries `label`, e.g. any
     Landmarks pair, builder-made or published): with the source metadata
     (image -> source id: iNaturalist 2017 JSON, GLD-v2 `train.csv` /
     `train_clean.csv`), every class of the test file that can be seen in
     both files is checked to be the same source id in both; a mismatch is
     `SplitFormatError` (one line naming both files). Without metadata, or
     when the metadata covers no image of some test class in one of the
     files, the result carries one warning line naming both files, unless
     the user accepted unchecked numbering.

Plain Python / numpy; importing it does not import TensorFlow.
"""

import os
from typing import Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

from federated_vision.data import split_io
from federated_vision.data import split_rows

SplitFormatError = split_io.SplitFormatError
TFF_TRAIN_NAME = "iNaturalist_train.csv"
TFF_TEST_NAME = "iNaturalist_test.csv"
BUILDER_INAT_TEST_NAME = "inaturalist_test.csv"
ACCEPT_FLAG = "--accept_unchecked_class_numbering"

# How the numbering of a pair was established (`Result.how`).
LABELS = "labels"            # Rule 1: class <-> label agree across files.
SAME_WRITER = "same_writer"  # Rule 2.
METADATA = "metadata"        # Rule 3, every test class checked.
UNCHECKED = "unchecked"      # Rule 3, not (fully) checked: see `warning`.
NO_TEST_ROWS = "no_test_rows"  # An empty test file: nothing to number.


class Form(NamedTuple):
  """The form of a split file (see the module docstring).

  Attributes:
    path: the file.
    layout: 'tff' or 'per_split'.
    has_label: whether the header has a `label` column.
  """
  path: str
  layout: str
  has_label: bool


class SourceIds(NamedTuple):
  """Image id -> source class id, from a data set's own metadata.

  Attributes:
    of_image: image id (as in the split files) -> source id.
    what: name of the source id in messages, e.g. 'iNaturalist 2017
      category' or 'GLD-v2 landmark'.
    files: the metadata files (for messages).
  """
  of_image: Mapping[str, int]
  what: str
  files: Tuple[str, ...]


class Result(NamedTuple):
  """Outcome of `check_class_numbering`.

  Attributes:
    how: LABELS, SAME_WRITER, METADATA, UNCHECKED or NO_TEST_ROWS.
    warning: for UNCHECKED without acceptance, the one line to log; else
      None.
  """
  how: str
  warning: Optional[str] = None


def train_form(path: str) -> Form:
  """The form of a train split file, from its header."""
  header = split_io.read_header(path)
  layout = "per_split" if "user_id" in header else "tff"
  return Form(path, layout, "label" in header)


def test_form(path: str) -> Form:
  """The form of a test file, from its header and name."""
  header = split_io.read_header(path)
  tff = os.path.basename(path) == TFF_TEST_NAME and "label" not in header
  return Form(path, "tff" if tff else "per_split", "label" in header)


def same_writer(train: Form, test: Form) -> bool:
  """Whether two files come from one writer (module docstring's rule)."""
  if train.layout == test.layout and train.has_label == test.has_label:
    return True
  return (os.path.basename(train.path) == TFF_TRAIN_NAME and
          os.path.basename(test.path) == BUILDER_INAT_TEST_NAME and
          os.path.dirname(os.path.abspath(train.path)) ==
          os.path.dirname(os.path.abspath(test.path)))


def _differ(train: split_rows.SplitRows, test: split_rows.SplitRows,
            detail: str) -> SplitFormatError:
  return SplitFormatError(f"{train.path} and {test.path} number classes "
                          f"differently: {detail}")


def check_labels(train: split_rows.SplitRows, test: split_rows.SplitRows) -> None:
  """Rule 1: a label is the same class in both files, a class the same label.

  Args:
    train, test: rows of files that both carry `label` (each file's own
      class <-> label map is one-to-one, as `split_io` checks).

  Raises:
    SplitFormatError: one line naming both files, a class, a label and
      the line of each file.
  """
  if train.labels is None or test.labels is None:
    raise ValueError("check_labels needs two files with a label column")
  class_of: Dict[int, Tuple[int, int]] = {}
  label_of: Dict[int, Tuple[int, int]] = {}
  for c, label, line in zip(train.classes.tolist(), train.labels.tolist(),
                            train.lines.tolist()):
    class_of.setdefault(label, (c, line))
    label_of.setdefault(c, (label, line))
  for c, label, line in zip(test.classes.tolist(), test.labels.tolist(),
                            test.lines.tolist()):
    if label in class_of and class_of[label][0] != c:
      other, other_line = class_of[label]
      raise _differ(train, test, f"label {label} is class {other} in "
                    f"{train.path}:{other_line} but class {c} in "
                    f"{test.path}:{line}")
    if c in label_of and label_of[c][0] != label:
      other, other_line = label_of[c]
      raise _differ(train, test, f"class {c} is label {other} in "
                    f"{train.path}:{other_line} but label {label} in "
                    f"{test.path}:{line}")


def _source_map(rows: split_rows.SplitRows, source: SourceIds
                ) -> Dict[int, Tuple[int, int, str]]:
  """class -> (source id, line, image) of one file, one-to-one within it.

  Raises:
    SplitFormatError: `path:line:` when a class of the file is two source
      ids, or a source id two classes (a class is one source category).
  """
  out: Dict[int, Tuple[int, int, str]] = {}
  class_of: Dict[int, Tuple[int, int, str]] = {}
  via = f"per {','.join(source.files)}"
  for c, image, line in zip(rows.classes.tolist(), rows.image_ids,
                            rows.lines.tolist()):
    s = source.of_image.get(str(image))
    if s is None:
      continue
    where = (rows.path, line, image, via)
    _claim(out, "class", c, source.what, s, where)
    _claim(class_of, source.what, s, "class", c, where)
  return out


def _claim(seen: Dict[int, Tuple[int, int, str]], key_name: str, key: int,
           value_name: str, value: int, where: Tuple[str, int, str, str]
           ) -> None:
  """Records `key -> value` in `seen`; SplitFormatError if `key` had another.

  `where` is (path, line, image, source files); the message names both lines.
  """
  path, line, image, via = where
  first = seen.setdefault(key, (value, line, image))
  if first[0] != value:
    raise SplitFormatError(
        f"{path}:{line}: {key_name} {key} is {value_name} {value} (image "
        f"{image}) but {value_name} {first[0]} on line {first[1]} (image "
        f"{first[2]}), {via}")


def check_with_metadata(train: split_rows.SplitRows, test: split_rows.SplitRows,
                        source: SourceIds) -> Tuple[int, ...]:
  """Rule 3 with metadata: each class is one source id in both files.

  Args:
    train, test: the two files' rows.
    source: image -> source id (`SourceIds`).

  Returns:
    The test classes that could not be checked (sorted): no image of the
    class is in the metadata in one of the two files.

  Raises:
    SplitFormatError: one line naming both files when a class is a
      different source id in each (or a source id a different class), or
      naming one file when a class is two source ids inside it.
  """
  train_src = _source_map(train, source)
  test_src = _source_map(test, source)
  class_of = {s: (c, line, image) for c, (s, line, image) in train_src.items()}
  via = f"per {','.join(source.files)}"
  for c, (s, line, image) in sorted(test_src.items()):
    if c in train_src and train_src[c][0] != s:
      s0, line0, image0 = train_src[c]
      raise _differ(train, test, f"class {c} is {source.what} {s0} in "
                    f"{train.path}:{line0} (image {image0}) but {source.what} "
                    f"{s} in {test.path}:{line} (image {image}), {via}")
    if s in class_of and class_of[s][0] != c:
      c0, line0, image0 = class_of[s]
      raise _differ(train, test, f"{source.what} {s} is class {c0} in "
                    f"{train.path}:{line0} (image {image0}) but class {c} in "
                    f"{test.path}:{line} (image {image}), {via}")
  test_classes = set(test.classes.tolist())
  return tuple(sorted(c for c in test_classes
                      if c not in train_src or c not in test_src))


def unchecked_warning(train_path: str, test_path: str,
                      reason: str) -> str:
  """The one warning line of an unchecked pair."""
  return (f"class numbering of {train_path} and {test_path} could not be "
          f"checked ({reason}); if they come from one class map, "
          f"{ACCEPT_FLAG} silences this warning")


def check_class_numbering(train: split_rows.SplitRows,
                          test: split_rows.SplitRows,
                          source: Optional[SourceIds] = None,
                          accept_unchecked: bool = False,
                          metadata_flag: str = "metadata") -> Result:
  """Checks that a train split and its test file number classes alike.

  Args:
    train, test: rows of the two files (`split_rows.read_split_rows`,
      `read_test_rows`).
    source: image -> source id from the data set's metadata, or None.
    accept_unchecked: the user vouches for the numbering: no warning when
      it cannot be checked (a mismatch found is still an error).
    metadata_flag: how the user gives metadata (named in the warning).

  Returns:
    `Result` (how the numbering was established; the warning to log).

  Raises:
    SplitFormatError: one line naming both files on a mismatch.
  """
  if not test.classes.size:
    return Result(NO_TEST_ROWS)
  if train.labels is not None and test.labels is not None:
    check_labels(train, test)
    return Result(LABELS)
  tr, te = train_form(train.path), test_form(test.path)
  if same_writer(tr, te) and (tr.has_label or te.has_label):
    return Result(SAME_WRITER)
  if source is None:
    reason = ("neither file carries a label column"
              if not (tr.has_label or te.has_label)
              else "they come from different writers")
    reason += f" and no {metadata_flag} was given"
  else:
    unchecked = check_with_metadata(train, test, source)
    if not unchecked:
      return Result(METADATA)
    total = len(set(test.classes.tolist()))
    reason = (f"{len(unchecked)} of {total} test classes, e.g. class "
              f"{unchecked[0]}, have no image in "
              f"{','.join(source.files)} in one of the files")
  if accept_unchecked:
    return Result(UNCHECKED)
  return Result(UNCHECKED, unchecked_warning(train.path, test.path, reason))


def check_files(split_csv: str, test_csv: str, split: Optional[str] = None,
                source: Optional[SourceIds] = None,
                accept_unchecked: bool = False,
                metadata_flag: str = "metadata") -> Result:
  """`check_class_numbering` on two files (read with `split_io`)."""
  train = split_rows.read_split_rows(split_csv, split)
  test = split_rows.read_test_rows(test_csv)
  return check_class_numbering(train, test, source, accept_unchecked,
                               metadata_flag)


def source_ids(pairs: Sequence[Tuple[str, int]], what: str,
               files: Sequence[str]) -> SourceIds:
  """`SourceIds` from (image id, source id) pairs (first pair wins)."""
  of_image: Dict[str, int] = {}
  for image, s in pairs:
    of_image.setdefault(str(image), int(s))
  return SourceIds(of_image, what, tuple(files))
