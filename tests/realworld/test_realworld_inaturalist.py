"""iNaturalist-User-120k / -Geo builders (Hsu, Qi & Brown 2020) on fixtures."""

import collections
import csv
import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import s2sphere

import realworld_fixtures as fixtures
from federated_vision.data import split_io
from federated_vision.realworld import inaturalist
from federated_vision.realworld import inaturalist_metadata
from run_checks import emd_of_counts

from conftest import REPO
PY = sys.executable
# Small fixture: classes with >= 7 images having a user id and coordinates
# (8, 7, 7, 2, 7, 0 per category) are kept, 6 drawn from each.
CFG = inaturalist.InatConfig(min_examples_per_class=7, examples_per_class=6,
                             geo_max_examples=(10, 4, 2), geo_min_examples=2,
                             plots=False)
# Kept categories 0, 1, 2, 4 -> the paper's contiguous classes 0..3.
CLASS_OF = {0: 0, 1: 1, 2: 2, 4: 3}


def _rows(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
  root = tmp_path_factory.mktemp("inat")
  train, val, cats, names = fixtures.write_small_inaturalist(
      str(root), with_images=False)
  out = root / "out"
  stats = inaturalist.build_inaturalist(
      str(root / "train2017.json"), str(root / "train2017_locations.json"),
      str(out), val_json=str(root / "val2017.json"), config=CFG)
  return root, out, train, val, stats


def test_class_balancing(built):
  _, out, train, _, stats = built
  by_stem = {fixtures.image_stem(r.image_id): r for r in train}
  rows = _rows(out / "iNaturalist_train.csv")
  # `class` is the paper's contiguous class, as TFF's loader reads it.
  classes = [int(r["class"]) for r in rows]
  assert np.bincount(classes).tolist() == [6, 6, 6, 6]
  assert len({r["image_id"] for r in rows}) == 24
  for r in rows:
    rec = by_stem[r["image_id"]]
    assert CLASS_OF[rec.category_id] == int(r["class"])
    # Drawn only from images every split can use.
    assert rec.user_id is not None and rec.lat is not None
  assert stats["num_balanced_examples"] == 24 and stats["num_classes"] == 4


def test_user_split(built):
  _, out, train, _, stats = built
  by_stem = {fixtures.image_stem(r.image_id): r for r in train}
  rows = _rows(out / "inaturalist_user_120k.csv")
  assert list(rows[0].keys()) == list(split_io.INAT_COLUMNS)
  balanced = {r["image_id"] for r in _rows(out / "iNaturalist_train.csv")}
  assert {r["image_id"] for r in rows} == balanced  # Nothing dropped.
  for r in rows:
    rec = by_stem[r["image_id"]]
    assert r["user_id"] == str(rec.user_id)
    # Published meaning: class = contiguous class, label = source category.
    assert int(r["class"]) == CLASS_OF[rec.category_id]
    assert int(r["label"]) == rec.category_id
  assert np.bincount([int(r["class"]) for r in rows]).tolist() == [6] * 4
  s = stats["splits"]["user_120k"]
  assert s["num_balanced_without_user"] == 0
  assert s["num_examples"] == len(rows)
  assert s["num_clients"] == len({r["user_id"] for r in rows})
  assert "emd_reference" not in s  # Pooled = balanced distribution.


def test_balance_from_all_keeps_first_versions_draw(built, tmp_path):
  """--balance_from=all: draw from every image, drop the gaps afterwards."""
  root, *_ = built
  cfg = dataclasses.replace(CFG, balance_from="all", min_examples_per_class=9,
                            examples_per_class=8)
  stats = inaturalist.build_inaturalist(
      str(root / "train2017.json"), str(root / "train2017_locations.json"),
      str(tmp_path), config=cfg)
  train = fixtures.small_inaturalist_records()
  by_stem = {fixtures.image_stem(r.image_id): r for r in train}
  balanced = {r["image_id"] for r in _rows(tmp_path / "iNaturalist_train.csv")}
  assert len(balanced) == 32
  no_user = {s for s in balanced if by_stem[s].user_id is None}
  no_xy = {s for s in balanced if by_stem[s].lat is None}
  assert no_user and no_xy
  rows = _rows(tmp_path / "inaturalist_user_120k.csv")
  assert {r["image_id"] for r in rows} == balanced - no_user
  assert min(np.bincount([int(r["class"]) for r in rows])) < 8
  s = stats["splits"]["user_120k"]
  assert s["num_balanced_without_user"] == len(no_user)
  # The split's population distribution is no longer the balanced one.
  assert s["emd_reference"] != s["emd"]
  geo = stats["splits"]["geo_10"]
  assert geo["num_balanced_without_coordinates"] == len(no_xy)


def test_every_split_has_exactly_100_per_class_despite_gaps(tmp_path):
  """Acceptance: 10% lack a user id, 10% coordinates; 100 per class."""
  records = fixtures.gappy_inaturalist_records((130, 126, 140, 115))
  fixtures.write_small_inaturalist(str(tmp_path), records=records,
                                   with_images=False)
  args = (str(tmp_path / "train2017.json"),
          str(tmp_path / "train2017_locations.json"))
  n_user = sum(r.user_id is None for r in records)
  n_xy = sum(r.lat is None for r in records)
  assert n_user == n_xy == len(records) // 10
  stats = inaturalist.build_inaturalist(
      *args, str(tmp_path / "out"), config=inaturalist.InatConfig(plots=False))
  # Classes with >= 100 complete images: 104, 101, 112 of them; not 92.
  assert stats["num_classes"] == 3 and stats["num_balanced_examples"] == 300
  names = ["user_120k"] + [split_io.geo_split_name(n)
                           for n in split_io.GEO_MAX_EXAMPLES]
  assert set(stats["splits"]) == set(names)
  for name in names:
    rows = _rows(tmp_path / "out" / f"inaturalist_{name}.csv")
    counts = np.bincount([int(r["class"]) for r in rows], minlength=3)
    assert counts.tolist() == [100, 100, 100], name
  assert max(len({r["user_id"] for r in _rows(
      tmp_path / "out" / "inaturalist_geo_100.csv")}), 0) > 3  # Really split.
  # The first version's draw falls short of 100 in the user split.
  stats = inaturalist.build_inaturalist(
      *args, str(tmp_path / "all"), config=inaturalist.InatConfig(
          plots=False, balance_from="all"))
  assert stats["num_classes"] == 4
  rows = _rows(tmp_path / "all" / "inaturalist_user_120k.csv")
  assert min(np.bincount([int(r["class"]) for r in rows])) < 100


@pytest.mark.parametrize("n_max", [10, 4, 2])
def test_geo_splits(built, n_max):
  _, out, train, _, stats = built
  by_stem = {fixtures.image_stem(r.image_id): r for r in train}
  name = split_io.geo_split_name(n_max)
  rows = _rows(out / f"inaturalist_{name}.csv")
  balanced = {r["image_id"] for r in _rows(out / "iNaturalist_train.csv")}
  with_xy = {s for s in balanced if by_stem[s].lat is not None}
  assert with_xy == balanced
  ids = [r["image_id"] for r in rows]
  assert len(ids) == len(set(ids))  # Each example in at most one cell.
  sizes = {}
  for r in rows:
    sizes[r["user_id"]] = sizes.get(r["user_id"], 0) + 1
    rec = by_stem[r["image_id"]]
    cell = s2sphere.CellId.from_token(r["user_id"])
    assert cell.is_valid() and cell.to_token() == r["user_id"]
    assert cell.contains(s2sphere.CellId.from_lat_lng(
        s2sphere.LatLng.from_degrees(rec.lat, rec.lon)))
  assert max(sizes.values()) <= n_max and min(sizes.values()) >= 2
  s = stats["splits"][name]
  assert s["num_balanced_without_coordinates"] == len(balanced - with_xy)
  # Kept + in dropped cells == all balanced examples with coordinates.
  assert len(rows) + s["num_examples_in_dropped_cells"] == len(with_xy)
  assert s["num_clients"] == len(sizes)


def test_tff_layout_matches_split_files(built):
  _, out, *_ = built
  rows = _rows(out / "iNaturalist_train.csv")
  assert list(rows[0].keys()) == list(split_io.TFF_INAT_COLUMNS)
  for col, fname in [("user_120k", "inaturalist_user_120k.csv"),
                     ("geo_100", None), ("geo_30k", None)]:
    got = {(r[col], r["image_id"]) for r in rows if r[col] != "NA"}
    if fname is None:
      assert got == set()  # Not built with this config: all NA.
    else:
      assert got == {(r["user_id"], r["image_id"]) for r in _rows(out / fname)}


def test_test_split_and_paths(built):
  root, out, _, val, _ = built
  rows = _rows(out / "inaturalist_test.csv")
  assert list(rows[0]) == list(split_io.INAT_TEST_COLUMNS)
  assert sorted(int(r["class"]) for r in rows) == [0, 0, 1, 1, 2, 2, 3, 3]
  category = {fixtures.image_stem(r.image_id): r.category_id for r in val}
  for r in rows:
    assert int(r["label"]) == category[r["image_id"]]
    assert int(r["class"]) == CLASS_OF[int(r["label"])]
  paths = {r["image_id"]: r["path"] for r in _rows(out / "image_paths.csv")}
  meta = json.load(open(root / "val2017.json"))
  by_stem = {os.path.basename(i["file_name"])[:-4]: i["file_name"]
             for i in meta["images"]}
  for r in rows:
    assert paths[r["image_id"]] == by_stem[r["image_id"]]


def test_deterministic_and_seeded(built, tmp_path):
  root, out, *_ = built
  args = (str(root / "train2017.json"), str(root / "train2017_locations.json"))
  inaturalist.build_inaturalist(*args, str(tmp_path / "same"), config=CFG)
  for f in ("iNaturalist_train.csv", "inaturalist_user_120k.csv",
            "inaturalist_geo_4.csv"):
    assert (tmp_path / "same" / f).read_bytes() == (out / f).read_bytes()
  other = dataclasses.replace(CFG, seed=1)
  inaturalist.build_inaturalist(*args, str(tmp_path / "other"), config=other)
  assert ((tmp_path / "other" / "iNaturalist_train.csv").read_bytes() !=
          (out / "iNaturalist_train.csv").read_bytes())


def test_stats_json(built):
  _, out, *_ = built
  stats = json.load(open(out / "stats.json"))
  assert set(stats["splits"]) == {"user_120k", "geo_10", "geo_4", "geo_2"}
  for name, s in stats["splits"].items():
    assert 0 <= s["emd"] <= 2
    assert s["num_classes"] == 4
    # The EMD of the split file's per-user class counts.
    counts = collections.defaultdict(lambda: np.zeros(4))
    for r in _rows(out / f"inaturalist_{name}.csv"):
      counts[r["user_id"]][int(r["class"])] += 1
    assert s["emd"] == pytest.approx(emd_of_counts(list(counts.values())),
                                     abs=1e-9), name


def test_balance_classes_exact():
  cats = np.array([0] * 5 + [1] * 3 + [2] * 4)
  sel = inaturalist.balance_classes(cats, 4, 2, seed=0)
  assert np.bincount(cats[sel]).tolist() == [2, 0, 2]
  assert sel.tolist() == sorted(sel.tolist())
  assert inaturalist.balance_classes(cats, 4, 2, 0).tolist() == sel.tolist()
  # Only eligible images count and are drawn: class 2 keeps 3 < 4.
  eligible = np.ones(cats.size, bool)
  eligible[[1, 9]] = False
  sel = inaturalist.balance_classes(cats, 4, 2, 0, eligible=eligible)
  assert np.bincount(cats[sel], minlength=3).tolist() == [2, 0, 0]
  assert 1 not in sel.tolist()


def test_config_validation():
  with pytest.raises(ValueError, match="min_examples_per_class"):
    inaturalist.InatConfig(min_examples_per_class=5, examples_per_class=10)
  with pytest.raises(ValueError, match="missing_user"):
    inaturalist.InatConfig(missing_user="keep")
  with pytest.raises(ValueError, match="balance_from"):
    inaturalist.InatConfig(balance_from="users")
  with pytest.raises(ValueError, match="geo_min_examples"):
    inaturalist.InatConfig(geo_max_examples=(10,), geo_min_examples=11)


def test_missing_user_fail(built, tmp_path):
  root, *_ = built
  with pytest.raises(ValueError, match="no user_id"):
    inaturalist.build_inaturalist(
        str(root / "train2017.json"), str(root / "train2017_locations.json"),
        str(tmp_path / "out"), config=dataclasses.replace(
            CFG, missing_user="fail", balance_from="all"))
  assert not (tmp_path / "out").exists()  # Nothing written.


def test_malformed_json_names_file_and_line(tmp_path):
  bad = tmp_path / "train2017.json"
  bad.write_text('{"images": [\n{"id": 1,}\n]}')
  with pytest.raises(inaturalist_metadata.InputError, match=r"train2017.json:2"):
    inaturalist_metadata.read_metadata(str(bad))
  bad.write_text('{"images": [{"id": 1}], "annotations": [], "categories": []}')
  with pytest.raises(inaturalist_metadata.InputError, match=r"images\[0\] lacks 'file_name'"):
    inaturalist_metadata.read_metadata(str(bad))


def test_binary_smoke_and_bad_input(built, tmp_path):
  root, out, *_ = built
  cmd = [PY, os.path.join(REPO, "datasets", "build_inaturalist.py"),
         f"--train_json={root / 'train2017.json'}",
         f"--train_locations={root / 'train2017_locations.json'}",
         f"--val_json={root / 'val2017.json'}",
         f"--output_dir={tmp_path / 'bin'}", "--min_examples_per_class=7",
         "--examples_per_class=6", "--geo_max_examples=10,4,2",
         "--geo_min_examples=2", "--noplots"]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
  assert res.returncode == 0, res.stderr
  for f in ("iNaturalist_train.csv", "inaturalist_geo_2.csv",
            "inaturalist_test.csv"):
    assert (tmp_path / "bin" / f).read_bytes() == (out / f).read_bytes()
  bad = tmp_path / "bad.json"
  bad.write_text("{not json")
  for extra, needle in [([f"--train_json={bad}"], "bad.json:1"),
                        (["--geo_max_examples=10,x"], "--geo_max_examples"),
                        ([f"--train_json={tmp_path / 'nope.json'}"], "nope.json")]:
    res = subprocess.run(cmd + extra, capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    assert needle in res.stderr


@pytest.mark.parametrize("policy", ["fail", "skip"])
def test_builder_image_check(tmp_path, policy):
  from federated_vision.realworld import image_check
  train, _, cats, names = fixtures.write_small_inaturalist(str(tmp_path))
  # Category 2 has exactly 7 complete images; losing one drops it.
  c2 = [r for r in train if r.category_id == 2]
  corrupt = names[fixtures.image_stem(c2[0].image_id)]
  missing = names[fixtures.image_stem(c2[1].image_id)]
  fixtures.write_corrupt(str(tmp_path / corrupt))
  os.remove(tmp_path / missing)
  check = image_check.ImageCheckConfig(
      image_root=str(tmp_path), check_images="decode", on_bad_image=policy,
      report_path=str(tmp_path / "report.json"))
  args = (str(tmp_path / "train2017.json"),
          str(tmp_path / "train2017_locations.json"), str(tmp_path / "out"))
  if policy == "fail":
    with pytest.raises(image_check.BadImagesError,
                       match="1 missing, 1 corrupt.*report.json"):
      inaturalist.build_inaturalist(*args, config=CFG, image_check=check)
  else:
    stats = inaturalist.build_inaturalist(*args, config=CFG, image_check=check)
    rows = _rows(tmp_path / "out" / "inaturalist_user_120k.csv")
    assert {int(r["label"]) for r in rows} == {0, 1, 4}  # Categories kept.
    assert {int(r["class"]) for r in rows} == {0, 1, 2}  # Contiguous.
    assert stats["num_images_dropped_bad"] == {"train": 2}
  rep = json.load(open(tmp_path / "report.json"))["splits"]["train"]
  assert [m["path"] for m in rep["missing"]] == [str(tmp_path / missing)]
  assert [m["path"] for m in rep["corrupt"]] == [str(tmp_path / corrupt)]


def test_binary_bad_images_exit_3(tmp_path):
  _, _, _, names = fixtures.write_small_inaturalist(str(tmp_path))
  os.remove(tmp_path / sorted(names.values())[0])
  res = subprocess.run(
      [PY, os.path.join(REPO, "datasets", "build_inaturalist.py"),
       f"--train_json={tmp_path / 'train2017.json'}",
       f"--train_locations={tmp_path / 'train2017_locations.json'}",
       f"--output_dir={tmp_path / 'out'}", f"--image_root={tmp_path}",
       "--min_examples_per_class=7", "--examples_per_class=6",
       "--geo_max_examples=10", "--noplots"],
      capture_output=True, text=True, timeout=120,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert res.returncode == 3 and "Traceback" not in res.stderr
  assert "1 missing" in res.stderr and "image_report.json" in res.stderr
  assert (tmp_path / "out" / "image_report.json").exists()


def test_figures_written(built, tmp_path):
  root, *_ = built
  stats = inaturalist.build_inaturalist(
      str(root / "train2017.json"), str(root / "train2017_locations.json"),
      str(tmp_path), config=dataclasses.replace(CFG, geo_max_examples=(4,),
                                                plots=True))
  for name in ("user_120k", "geo_4"):
    figs = stats["splits"][name]["figures"]
    assert set(figs) == {"examples_per_client", "classes_per_client"}
    for f in figs.values():
      assert (tmp_path / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
