"""Shakespeare data: parsers on fixtures in the real formats, McMahan's split,
the IID version, next-character examples and the three sources."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import shakespeare
from federated_vision.data import shakespeare_sources as sources
from federated_vision.data import shakespeare_text as text_lib

from shakespeare_fixture import (COMPLETE_WORKS, COMPLETE_WORKS_LINES,
                                 MODERN_LINES, MODERN_PLAY, write_tff_sqlite)


def test_modern_play_parse_is_exact():
  play = text_lib.parse_modern_play("testing", MODERN_PLAY)
  assert play.lines == MODERN_LINES


def test_modern_play_without_header_is_one_line():
  with pytest.raises(ValueError, match="no ACT") as e:
    text_lib.parse_modern_play("x", "Ham.\nWho's there?\n")
  assert "\n" not in str(e.value)


def test_complete_works_parse_is_exact(tmp_path):
  path = tmp_path / "pg100.txt"
  path.write_bytes(b"\xef\xbb\xbf" + COMPLETE_WORKS.replace("\n", "\r\n")
                   .encode())  # A BOM and CRLF line ends, as downloads have.
  plays = sources.read_complete_works(str(path))
  assert {p.name: p.lines for p in plays} == COMPLETE_WORKS_LINES


def test_complete_works_errors_are_one_line(tmp_path):
  bad = tmp_path / "other.txt"
  bad.write_text("Just a novel.\n")
  with pytest.raises(ValueError, match="by William Shakespeare") as e:
    sources.read_complete_works(str(bad))
  assert str(bad) in str(e.value) and "\n" not in str(e.value)
  with pytest.raises(ValueError, match="cannot read"):
    sources.read_complete_works(str(tmp_path / "missing.txt"))


def test_test_lines_are_the_last_fifth_rounded_up():
  assert [text_lib.num_test_lines(n) for n in (2, 3, 5, 6, 10, 11, 15, 16)] \
      == [1, 1, 1, 2, 2, 3, 3, 4]
  lines = tuple(("A", f"a{i}") for i in range(6)) + (("B", "b0"),) + tuple(
      ("C", f"c{i}") for i in range(2))
  split = text_lib.split_by_role([text_lib.Play("p", lines)])
  assert split.client_ids == ("p:A", "p:C")  # B has one line: no client.
  assert split.train["p:A"] == ("a0", "a1", "a2", "a3")
  assert split.test["p:A"] == ("a4", "a5")
  assert split.train["p:C"] == ("c0",) and split.test["p:C"] == ("c1",)
  assert split.summary() == {"clients": 2, "train_lines": 5, "test_lines": 3,
                             "train_characters": 10, "test_characters": 6}


def test_iid_version_keeps_clients_lines_and_characters():
  split = shakespeare.synthetic_split(num_clients=5, lines_per_client=9)
  iid = text_lib.iid_version(split, seed=3)
  assert iid.client_ids == split.client_ids
  assert iid.summary() == split.summary()
  for which in ("train", "test"):
    pooled = lambda s: sorted(l for c in s.client_ids
                              for l in getattr(s, which)[c])
    assert pooled(iid) == pooled(split)
    sizes = [len(getattr(iid, which)[c]) for c in iid.client_ids]
    assert max(sizes) - min(sizes) <= 1  # Balanced.
  assert iid.train != split.train  # Shuffled.
  assert text_lib.iid_version(split, seed=3) == iid  # Seeded.


def test_line_examples_targets_and_padding_are_exact():
  long = "x" * 100 + "yz"
  x, y = shakespeare.line_examples(["Hi!", long])
  assert x.shape == y.shape == (3, 80) and x.dtype == np.uint8
  assert bytes(x[0][:3]) == b"Hi!" and not x[0][3:].any()
  assert bytes(y[0][:3]) == b"i!\n" and not y[0][3:].any()
  # A line longer than 80: pieces of 80; every character but the first is
  # a target once, and the line end after the last one.
  assert bytes(x[1]) == long[:80].encode()
  assert bytes(y[1]) == long[1:81].encode()
  assert bytes(x[2][:22]) == long[80:].encode()
  assert bytes(y[2][:22]) == (long[81:] + "\n").encode()
  targets = int((y != shakespeare.PAD).sum())
  assert targets == len("Hi!") + len(long)  # L targets per line.
  with pytest.raises(ValueError, match="padding"):
    shakespeare.line_examples(["a\0b"])


def test_federated_dataset_holds_each_clients_lines_in_order():
  split = shakespeare.synthetic_split(num_clients=3, lines_per_client=6)
  fed = shakespeare.build(split, "syn")
  assert fed.client_data.client_ids == list(split.client_ids)
  for k, cid in enumerate(split.client_ids):
    got = list(fed.client_data.create_tf_dataset_for_client(cid)
               .as_numpy_iterator())
    x, y = shakespeare.line_examples(split.train[cid])
    assert np.array_equal(np.stack([e["x"] for e in got]), x)
    assert np.array_equal(np.stack([e["y"] for e in got]), y)
    assert fed.client_sizes[cid] == len(x)
    assert fed.class_counts[k].sum() == sum(len(l) for l in split.train[cid])
  test = list(fed.test_data.as_numpy_iterator())
  assert sum(int((e["y"] != 0).sum()) for e in test) == split.characters(
      "test")
  element = fed.train_map_fn(test[0], tf.constant([0, 0], tf.int64))
  assert element["x"].dtype == tf.int32 and element["y"].dtype == tf.int64


def test_tff_sqlite_source_reads_tffs_split(tmp_path):
  train = {"PLAY_A_HAM": ["To be, or not to be.", "Ay, there's the rub;\n"
                          "For in that sleep of death"],
           "PLAY_B_LEAR": ["Nothing will come of nothing."]}
  test = {"PLAY_A_HAM": ["The rest is silence."],
          "PLAY_B_LEAR": ["Never, never, never."]}
  write_tff_sqlite(str(tmp_path), train, test)
  split = sources.read_tff_sqlite(str(tmp_path))
  assert split.client_ids == ("PLAY_A_HAM", "PLAY_B_LEAR")
  assert split.train["PLAY_A_HAM"] == (
      "To be, or not to be.", "Ay, there's the rub;",
      "For in that sleep of death")  # A snippet is cut at its newlines.
  assert split.test["PLAY_B_LEAR"] == ("Never, never, never.",)
  # TFF's own loader reads the same file (the schema is TFF's).
  tff_train, _ = tff.simulation.datasets.shakespeare.load_data(
      cache_dir=str(tmp_path))
  assert sorted(tff_train.client_ids) == sorted(train)
  got = [e["snippets"].numpy().decode() for e in
         tff_train.create_tf_dataset_for_client("PLAY_B_LEAR")]
  assert got == train["PLAY_B_LEAR"]


def test_tff_sqlite_published_lzma_is_decompressed_once(tmp_path):
  """TFF publishes shakespeare.sqlite.lzma (LZMA-alone): read in place of
  the SQLite file, decompressed beside it."""
  import lzma  # pylint: disable=g-import-not-at-top
  path = write_tff_sqlite(str(tmp_path), {"A": ["x y", "z"]}, {"A": ["w"]})
  with open(path, "rb") as f:
    packed = lzma.compress(f.read(), format=lzma.FORMAT_ALONE)
  os.remove(path)
  (tmp_path / "shakespeare.sqlite.lzma").write_bytes(packed)
  split = sources.read_tff_sqlite(str(tmp_path))
  assert split.train == {"A": ("x y", "z")} and split.test == {"A": ("w",)}
  assert os.path.isfile(path)


def test_tff_sqlite_missing_and_malformed_are_one_line(tmp_path):
  with pytest.raises(FileNotFoundError) as e:
    sources.read_tff_sqlite(str(tmp_path))
  assert "shakespeare.sqlite" in str(e.value) and "\n" not in str(e.value)
  (tmp_path / "shakespeare.sqlite").write_bytes(b"not a database" * 100)
  with pytest.raises(ValueError, match="not TFF's Shakespeare"):
    sources.read_tff_sqlite(str(tmp_path))
  lonely = tmp_path / "lonely"
  lonely.mkdir()
  write_tff_sqlite(str(lonely), {"A": ["x y"], "B": ["z"]}, {"A": ["w"]})
  with pytest.raises(ValueError, match="'B' has lines in only one"):
    sources.read_tff_sqlite(str(lonely))


def test_archive_errors_are_one_line(tmp_path):
  with pytest.raises(FileNotFoundError) as e:
    sources.require_archive(str(tmp_path))
  assert sources.FETCH_COMMAND in str(e.value)
  assert "\n" not in str(e.value)
  (tmp_path / sources.ARCHIVE_NAME).write_bytes(b"not the archive")
  with pytest.raises(ValueError, match="sha256") as e:
    sources.require_archive(str(tmp_path))
  assert "\n" not in str(e.value)


def test_unknown_play_names_the_known_ones():
  plays = [text_lib.Play("hamlet", ()), text_lib.Play("lear", ())]
  with pytest.raises(ValueError, match="unknown play 'macbeth'; plays: "
                     "hamlet, lear"):
    text_lib.select_plays(plays, ["macbeth"])
