"""Bad inputs stop the `datasets/` binaries: one line naming file:line, exit 2.

Each case was accepted silently before (issue "Fidelity", item 6); each now
ends the binary with status 2, a single `error:` line naming the file (and
line where there is one), no traceback, and no output written.
"""

import json
import os
import subprocess
import sys

import pytest

import realworld_fixtures as fixtures
from federated_vision.data import split_io
from federated_vision.data import split_rows

from conftest import REPO


def _run(binary, *args):
  return subprocess.run(
      [sys.executable, os.path.join(REPO, "datasets", binary), *args],
      capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def _assert_one_line_error(res, *needles):
  assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
  assert "Traceback" not in res.stderr
  lines = res.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
  for needle in needles:
    assert needle in lines[0], (needle, lines[0])


@pytest.fixture(scope="module")
def images(tmp_path_factory):
  """JPEGs a1..a4, t1, t2 under one root, GLD-style (`a/1/_/a1_.jpg`)."""
  root = tmp_path_factory.mktemp("img")
  fixtures.write_images(str(root), [fixtures.gld_relative_path(f"{i}_") for i in
                                    ("a1", "a2", "a3", "a4", "t1", "t2")])
  return root


def _convert(images, tmp_path, train: bytes, test: bytes):
  (tmp_path / "train.csv").write_bytes(train)
  (tmp_path / "test.csv").write_bytes(test)
  out = tmp_path / "out"
  res = _run("convert_to_tfrecords.py", "--dataset=landmarks",
             f"--split_csv={tmp_path / 'train.csv'}",
             f"--test_csv={tmp_path / 'test.csv'}", f"--image_root={images}",
             "--image_size=16", f"--output_dir={out}")
  return res, out


GOOD_TEST = b"image_id,class\nt1_,0\nt2_,1\n"


@pytest.mark.parametrize("train,test,needles", [
    # The same image_id twice, with conflicting classes.
    (b"user_id,image_id,class\nu,a1_,0\nu,a2_,1\nv,a1_,1\n", GOOD_TEST,
     ["train.csv:4:", "image_id a1_ already assigned on line 2"]),
    # A non-numeric class.
    (b"user_id,image_id,class\nu,a1_,0\nu,a2_,abc\nv,a3_,1\n", GOOD_TEST,
     ["train.csv:3:", "class must be a non-negative integer, got 'abc'"]),
    # A test class that never occurs in train.
    (b"user_id,image_id,class\nu,a1_,0\nu,a2_,1\n",
     b"image_id,class\nt1_,0\nt2_,2\n",
     ["test.csv:3:", "class 2 never occurs in", "train.csv"]),
    # A file that is not UTF-8.
    (b"user_id,image_id,class\nu,a1_,0\nJos\xe9,a2_,1\n", GOOD_TEST,
     ["train.csv:3:", "not UTF-8 text (byte 0xe9 at column 4)"]),
])
def test_convert_rejects_bad_split_files(images, tmp_path, train, test,
                                         needles):
  res, out = _convert(images, tmp_path, train, test)
  _assert_one_line_error(res, *needles)
  assert not out.exists()


def test_convert_accepts_the_same_files_when_valid(images, tmp_path):
  res, out = _convert(images, tmp_path,
                      b"user_id,image_id,class\nu,a1_,0\nu,a2_,1\nv,a3_,1\n",
                      GOOD_TEST)
  assert res.returncode == 0, res.stderr[-2000:]
  meta = json.load(open(out / "meta.json"))
  assert (meta["num_examples"], meta["num_classes"]) == (3, 2)


@pytest.fixture()
def gld(tmp_path):
  images = fixtures.small_gld_images()
  fixtures.write_gld_metadata(str(tmp_path), images)
  return tmp_path, images


def _build_landmarks(root):
  out = root / "out"
  return _run("build_landmarks.py",
              f"--train_clean_csv={root / 'train_clean.csv'}",
              f"--attribution_csv={root / 'train_attribution.csv'}",
              f"--output_dir={out}", "--min_landmark_images=8",
              "--min_landmark_users=3", "--min_user_images=6",
              "--min_user_landmarks=2", "--noplots"), out


def test_attribution_with_two_authors_for_one_image(gld):
  root, images = gld
  path = root / "train_attribution.csv"
  lines = path.read_text().splitlines()
  first = images[1]
  lines.append(f"{first.image_id},http://x,Someone Else,CC0,dup")
  path.write_text("\n".join(lines) + "\n")
  res, out = _build_landmarks(root)
  _assert_one_line_error(
      res, f"train_attribution.csv:{len(lines)}:",
      f"image {first.image_id} has author 'Someone Else', but line 3 gives "
      f"it author {first.author!r}")
  assert not out.exists()


def test_truncated_train_clean_is_not_an_authorless_image(gld):
  root, _ = gld
  path = root / "train_clean.csv"
  text = path.read_text()
  cut = text.rstrip("\n")[:-7]  # The last image id loses 7 of 16 digits.
  path.write_text(cut)
  last_line = cut.count("\n") + 1
  cut_id = cut.rsplit(" ", 1)[-1]
  res, out = _build_landmarks(root)
  _assert_one_line_error(
      res, f"train_clean.csv:{last_line}:",
      f"image {cut_id} has no row in", "train_attribution.csv", "truncated")
  assert not out.exists()


def test_two_inaturalist_images_with_the_same_file_stem(tmp_path):
  records = fixtures.small_inaturalist_records()
  records[5] = records[5]._replace(stem=fixtures.image_stem(
      records[2].image_id))
  fixtures.write_small_inaturalist(str(tmp_path), records=records,
                                   with_images=False)
  out = tmp_path / "out"
  res = _run("build_inaturalist.py",
             f"--train_json={tmp_path / 'train2017.json'}",
             f"--train_locations={tmp_path / 'train2017_locations.json'}",
             f"--val_json={tmp_path / 'val2017.json'}",
             f"--output_dir={out}", "--min_examples_per_class=7",
             "--examples_per_class=6", "--geo_max_examples=10", "--noplots")
  _assert_one_line_error(
      res, "train2017.json:", f"image {records[5].image_id} has file stem "
      f"{fixtures.image_stem(records[2].image_id)}, like train2017.json image "
      f"{records[2].image_id}")
  assert not out.exists()


def test_split_io_is_the_error_type_of_every_case(tmp_path):
  """The library raises the one error class (the binaries print it)."""
  path = tmp_path / "s.csv"
  path.write_text("user_id,image_id,class\nu,a,0\nu,a,0\n")
  with pytest.raises(split_io.SplitFormatError, match="s.csv:3:"):
    split_rows.read_split_rows(str(path))
  from federated_vision.realworld import landmarks  # pylint: disable=g-import-not-at-top
  assert landmarks.SplitFormatError is split_io.SplitFormatError
