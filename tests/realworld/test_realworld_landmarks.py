"""Landmarks-User-160k builder (Hsu, Qi & Brown 2020) on GLD-v2 fixtures."""

import csv
import json
import os
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest

import realworld_fixtures as fixtures
from federated_vision.data import split_io
from federated_vision.realworld import landmarks

from conftest import REPO
CFG = landmarks.GldConfig(min_landmark_images=8, min_landmark_users=3,
                          min_user_images=6, min_user_landmarks=2, plots=False)


def _rows(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


def _reference_fixed_point(pairs, cfg):
  """Independent set-based implementation of the iterated rules."""
  keep = set(range(len(pairs)))
  while True:
    by_lm = defaultdict(list)
    for i in keep:
      by_lm[pairs[i][0]].append(i)
    ok_lm = {l for l, ii in by_lm.items() if len(ii) >= cfg.min_landmark_images
             and len({pairs[i][1] for i in ii}) >= cfg.min_landmark_users}
    after = {i for i in keep if pairs[i][0] in ok_lm}
    by_u = defaultdict(list)
    for i in after:
      by_u[pairs[i][1]].append(i)
    ok_u = {u for u, ii in by_u.items() if len(ii) >= cfg.min_user_images
            and len({pairs[i][0] for i in ii}) >= cfg.min_user_landmarks}
    after = {i for i in after if pairs[i][1] in ok_u}
    if after == keep:
      return keep
    keep = after


def test_fixed_point_cascade_exact():
  cfg = landmarks.GldConfig(2, 2, 2, 2)
  # u2 has one image -> dropped; then landmark 2 has one user -> dropped.
  lm = np.array([0, 0, 1, 1, 2, 2])
  us = np.array([0, 1, 0, 1, 2, 0])
  keep, iterations = landmarks.fixed_point_filter(lm, us, cfg)
  assert keep.tolist() == [True, True, True, True, False, False]
  assert iterations == 3


@pytest.fixture(scope="module")
def built(tmp_path_factory):
  root = tmp_path_factory.mktemp("gld")
  images = fixtures.small_gld_images()
  fixtures.write_gld_metadata(str(root), images)
  out = root / "out"
  stats = landmarks.build_landmarks(
      str(root / "train_clean.csv"), str(root / "train_attribution.csv"),
      str(out), train_csv=str(root / "train.csv"), config=CFG)
  return root, out, images, stats


def test_rules_hold_and_match_reference(built):
  _, out, images, stats = built
  rows = _rows(out / "federated_train.csv")
  assert list(rows[0]) == list(split_io.COLUMNS)
  author_of = {int(r["user_id"]): r["author"] for r in _rows(out / "authors.csv")}
  lm_of = {int(r["class"]): int(r["landmark_id"])
           for r in _rows(out / "landmark_classes.csv")}
  by_id = {im.image_id: im for im in images}
  got = set()
  per_lm, per_u = defaultdict(set), defaultdict(set)
  for r in rows:
    im = by_id[r["image_id"]]
    assert im.clean and im.author == author_of[int(r["user_id"])]
    assert im.landmark_id == lm_of[int(r["class"])]
    got.add(r["image_id"])
    per_lm[im.landmark_id].add((im.image_id, im.author))
    per_u[im.author].add((im.image_id, im.landmark_id))
  for items in per_lm.values():
    assert len(items) >= CFG.min_landmark_images
    assert len({a for _, a in items}) >= CFG.min_landmark_users
  for items in per_u.values():
    assert len(items) >= CFG.min_user_images
    assert len({l for _, l in items}) >= CFG.min_user_landmarks
  cand = [im for im in images if im.clean and im.author]
  ref = _reference_fixed_point([(im.landmark_id, im.author) for im in cand], CFG)
  assert got == {cand[i].image_id for i in ref}
  assert len(got) > 50 and stats["train"]["num_examples"] == len(got)
  assert stats["fixed_point_iterations"] >= 2
  assert stats["num_clean_images_without_author"] == sum(
      1 for im in images if im.clean and not im.author)
  assert stats["num_train_csv_images"] == len(images)


def test_test_split(built):
  _, out, images, stats = built
  train = _rows(out / "federated_train.csv")
  test = _rows(out / "test.csv")
  by_id = {im.image_id: im for im in images}
  train_ids = {r["image_id"] for r in train}
  train_authors = {by_id[i].author for i in train_ids}
  kept = {by_id[r["image_id"]].landmark_id for r in train}
  expected = {im.image_id for im in images
              if im.clean and im.author and im.image_id not in train_ids
              and im.landmark_id in kept and im.author not in train_authors}
  assert {r["image_id"] for r in test} == expected
  assert not {by_id[r["image_id"]].author for r in test} & train_authors
  lm_of = {int(r["class"]): int(r["landmark_id"])
           for r in _rows(out / "landmark_classes.csv")}
  for r in test:
    assert lm_of[int(r["class"])] == by_id[r["image_id"]].landmark_id
  assert stats["test"]["num_examples"] == len(expected)


def test_deterministic(built, tmp_path):
  root, out, *_ = built
  landmarks.build_landmarks(str(root / "train_clean.csv"),
                            str(root / "train_attribution.csv"),
                            str(tmp_path), config=CFG)
  for f in ("federated_train.csv", "test.csv", "authors.csv"):
    assert (tmp_path / f).read_bytes() == (out / f).read_bytes()


def test_bad_inputs(tmp_path):
  bad = tmp_path / "train_clean.csv"
  bad.write_text("landmark_id,images\n1,a b\nx,c\n")
  with pytest.raises(split_io.SplitFormatError, match=r"train_clean.csv:3"):
    landmarks.read_clean(str(bad))
  bad.write_text("landmark,images\n")
  with pytest.raises(split_io.SplitFormatError, match="landmark_id"):
    landmarks.read_clean(str(bad))
  with pytest.raises(ValueError, match="min_user_images"):
    landmarks.GldConfig(min_user_images=0)


def test_binary_smoke_and_bad_input(built, tmp_path):
  root, out, *_ = built
  cmd = [sys.executable, os.path.join(REPO, "datasets", "build_landmarks.py"),
         f"--train_clean_csv={root / 'train_clean.csv'}",
         f"--attribution_csv={root / 'train_attribution.csv'}",
         f"--output_dir={tmp_path / 'bin'}", "--min_landmark_images=8",
         "--min_landmark_users=3", "--min_user_images=6",
         "--min_user_landmarks=2", "--noplots"]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
  assert res.returncode == 0, res.stderr
  for f in ("federated_train.csv", "test.csv"):
    assert (tmp_path / "bin" / f).read_bytes() == (out / f).read_bytes()
  bad = tmp_path / "bad_clean.csv"
  bad.write_text("landmark_id,images\n1,a b,extra\n")
  for extra, needle in [([f"--train_clean_csv={bad}"], "bad_clean.csv:2"),
                        (["--min_user_images=0"], "--min_user_images"),
                        ([f"--attribution_csv={tmp_path / 'none.csv'}"],
                         "none.csv")]:
    res = subprocess.run(cmd + extra, capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("policy", ["fail", "skip"])
def test_builder_checks_tar_shard_images(built, tmp_path, policy):
  from federated_vision.realworld import image_check
  root, out, images, _ = built
  clean = [im.image_id for im in images if im.clean]
  fixtures.write_images(str(tmp_path / "img"),
                        [fixtures.gld_relative_path(i) for i in clean])
  absent = _rows(out / "federated_train.csv")[0]["image_id"]
  fixtures.write_gld_tar(str(tmp_path / "images_000.tar"), str(tmp_path / "img"),
                         [i for i in clean if i != absent])
  check = image_check.ImageCheckConfig(
      tar_shards=(str(tmp_path / "images_000.tar"),), on_bad_image=policy,
      report_path=str(tmp_path / "report.json"))
  args = (str(root / "train_clean.csv"), str(root / "train_attribution.csv"),
          str(tmp_path / "out"))
  if policy == "fail":
    with pytest.raises(image_check.BadImagesError, match="1 missing"):
      landmarks.build_landmarks(*args, config=CFG, image_check=check)
  else:
    stats = landmarks.build_landmarks(*args, config=CFG, image_check=check)
    assert stats["num_clean_images_dropped_bad"] == 1
    ids = {r["image_id"] for r in _rows(tmp_path / "out" / "federated_train.csv")}
    assert absent not in ids and ids
  rep = json.load(open(tmp_path / "report.json"))["splits"]["clean"]
  assert [m["image_id"] for m in rep["missing"]] == [absent]
