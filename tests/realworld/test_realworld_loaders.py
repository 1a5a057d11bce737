"""Split CSV -> ClientData loaders, bad images, tar shards, TFRecord shards."""

import csv
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from federated_vision.data import client_data as cd
from federated_vision.data import round_keys
from federated_vision.runtime import contexts
import realworld_fixtures as fixtures
from federated_vision.data import split_io
from federated_vision.realworld import (image_data, inaturalist, landmarks,
                                        synthetic, tfrecords)

from conftest import REPO
INAT_CFG = inaturalist.InatConfig(min_examples_per_class=7,
                                  examples_per_class=6,
                                  geo_max_examples=(100, 10, 4),
                                  geo_min_examples=2,
                                  plots=False)


def _rows(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(scope="module", autouse=True)
def tff_context():
  """One managed TFF worker for the module's `dataset_computation` calls."""
  with contexts.managed_execution_context() as worker:
    yield worker


def _cfg(tmp, **kw):
  kw.setdefault("image_size", 32)
  return image_data.LoaderConfig(cache_dir=str(tmp / "cache"), **kw)


@pytest.fixture(scope="module")
def inat(tmp_path_factory):
  root = tmp_path_factory.mktemp("inat_load")
  fixtures.write_small_inaturalist(str(root))
  out = root / "out"
  inaturalist.build_inaturalist(
      str(root / "train2017.json"), str(root / "train2017_locations.json"),
      str(out), val_json=str(root / "val2017.json"), config=INAT_CFG)
  return root, out


def _elements(client_data, key):
  return list(client_data.dataset_computation(key))


def test_builder_csv_loads_into_matching_client_data(inat, tmp_path):
  root, out = inat
  fds = image_data.load_inaturalist(
      str(out / "inaturalist_user_120k.csv"), str(root),
      test_csv=str(out / "inaturalist_test.csv"),
      image_paths=str(out / "image_paths.csv"), config=_cfg(tmp_path))
  rows = _rows(out / "inaturalist_user_120k.csv")
  expected = {}
  for r in rows:
    expected.setdefault(r["user_id"], []).append(int(r["class"]))
  assert fds.client_data.client_ids == sorted(expected)
  assert dict(fds.client_sizes) == {k: len(v) for k, v in expected.items()}
  assert fds.num_classes == 4
  assert fds.class_counts.sum() == len(rows)
  paths = {r["image_id"]: r["path"] for r in _rows(out / "image_paths.csv")}
  for k, cid in enumerate(fds.client_data.client_ids):
    # Through the TFF computation, with a round key.
    els = _elements(fds.client_data, round_keys.round_key(cid, 7, 1))
    assert [int(e["y"]) for e in els] == expected[cid]
    assert np.bincount([int(e["y"]) for e in els], minlength=4).tolist() == \
        fds.class_counts[k].tolist()
    want = [os.path.join(str(root), paths[r["image_id"]]) for r in rows
            if r["user_id"] == cid]
    assert [e["path"].numpy().decode() for e in els] == want
  test = list(fds.test_data.as_numpy_iterator())
  assert len(test) == 8 and sorted(int(e["y"]) for e in test) == [0, 0, 1, 1, 2, 2, 3, 3]
  cid = fds.client_data.client_ids[0]
  ds = fds.client_data.create_tf_dataset_for_client(cid)
  x = next(iter(ds.map(lambda e: fds.train_map_fn(e, tf.constant([3, 4], tf.int64)))))
  assert x["x"].shape == (32, 32, 3) and x["x"].dtype == tf.float32
  x2 = next(iter(ds.map(lambda e: fds.train_map_fn(e, tf.constant([3, 4], tf.int64)))))
  np.testing.assert_array_equal(x["x"].numpy(), x2["x"].numpy())  # Stateless.
  e = next(iter(cd.build_eval_dataset(fds.test_data, fds.eval_map_fn, 4)))
  assert e["x"].shape == (4, 32, 32, 3)
  assert float(tf.reduce_min(e["x"])) >= 0 and float(tf.reduce_max(e["x"])) <= 1
  with pytest.raises(Exception, match="unknown client id"):
    _elements(fds.client_data, "no-such-user")


def test_default_sizes_and_training_pipeline(inat, tmp_path):
  root, out = inat
  fds = image_data.load_inaturalist(
      str(out / "inaturalist_geo_4.csv"), str(root),
      image_paths=str(out / "image_paths.csv"),
      config=image_data.LoaderConfig(cache_dir=str(tmp_path)))
  assert fds.input_shape == (299, 299, 3)
  cid = max(fds.client_sizes, key=fds.client_sizes.get)
  fn = cd.build_training_dataset_fn(fds.client_data.serializable_dataset_fn,
                                    cd.TrainingSpec(batch_size=2, seed=1),
                                    fds.train_map_fn)
  batches = list(fn(tf.constant(round_keys.round_key(cid, 2))))
  assert sum(int(b["y"].shape[0]) for b in batches) == fds.client_sizes[cid]
  assert batches[0]["x"].shape[1:] == (299, 299, 3)


def test_published_tff_layout_and_metadata_paths(inat, tmp_path):
  root, out = inat
  fds = image_data.load_inaturalist(
      str(out / "iNaturalist_train.csv"), str(root), split="user_120k",
      metadata_json=[str(root / "train2017.json")], config=_cfg(tmp_path))
  user = _rows(out / "inaturalist_user_120k.csv")
  sizes = {}
  for r in user:
    sizes[r["user_id"]] = sizes.get(r["user_id"], 0) + 1
  assert dict(fds.client_sizes) == sizes
  # y is the TFF layout's class column, the per-split files' class.
  got = sorted((e["path"].decode().rsplit("/", 1)[1][:-4], int(e["y"]))
               for cid in fds.client_data.client_ids
               for e in fds.client_data.create_tf_dataset_for_client(cid).as_numpy_iterator())
  assert got == sorted((r["image_id"], int(r["class"])) for r in user)
  # A geo column of the TFF layout equals the per-split file.
  geo = image_data.load_inaturalist(
      str(out / "iNaturalist_train.csv"), str(root), split="geo_100",
      image_paths=str(out / "image_paths.csv"), config=_cfg(tmp_path))
  per_split = image_data.load_inaturalist(
      str(out / "inaturalist_geo_100.csv"), str(root),
      image_paths=str(out / "image_paths.csv"), config=_cfg(tmp_path))
  assert dict(geo.client_sizes) == dict(per_split.client_sizes)
  assert geo.client_data.client_ids == per_split.client_data.client_ids
  np.testing.assert_array_equal(geo.class_counts, per_split.class_counts)
  assert geo.client_data.index_path == per_split.client_data.index_path
  with pytest.raises(ValueError, match="geo_1k"):
    image_data.load_inaturalist(str(out / "iNaturalist_train.csv"), str(root),
                                split="geo_1k", config=_cfg(tmp_path))
  with pytest.raises(ValueError, match="split"):
    image_data.load_inaturalist(str(out / "iNaturalist_train.csv"), str(root),
                                split="nope", config=_cfg(tmp_path))


def test_opening_120k_split_reads_no_image(tmp_path):
  rng = np.random.default_rng(0)
  users = np.minimum(rng.zipf(1.6, 120_300), 9000)
  path = tmp_path / "big.csv"
  split_io.write_csv(str(path), split_io.INAT_COLUMNS,
                     ((f"{u}", f"{k:032x}", k % 1203, 7 * (k % 1203))
                      for k, u in enumerate(users.tolist())))
  empty_root = tmp_path / "no_images"
  empty_root.mkdir()
  # No image exists under empty_root: reading one would raise.
  fds = image_data.load_inaturalist(
      str(path), str(empty_root),
      config=image_data.LoaderConfig(check_images="none",
                                     cache_dir=str(tmp_path / "cache")))
  assert sum(fds.client_sizes.values()) == 120_300
  assert len(fds.client_data.client_ids) == len(set(users.tolist()))
  assert fds.num_classes == 1203
  cid = fds.client_data.client_ids[-1]
  assert len(_elements(fds.client_data, cid)) == fds.client_sizes[cid]


@pytest.mark.parametrize("policy", ["fail", "skip"])
def test_missing_and_corrupt_images(tmp_path, policy, caplog):
  split_path, test_path = synthetic.write_synthetic_split(str(tmp_path), 3, 4, 3)
  os.remove(tmp_path / "img0001_002.jpg")            # missing
  fixtures.write_corrupt(str(tmp_path / "img0002_000.jpg"))  # corrupt
  os.remove(tmp_path / "test0003.jpg")               # missing test image
  report = tmp_path / "report.json"
  cfg = _cfg(tmp_path, check_images="decode", on_bad_image=policy,
             report_path=str(report))
  if policy == "fail":
    with pytest.raises(image_data.BadImagesError, match="report.json"):
      image_data.load_image_split("synthetic", split_path, str(tmp_path),
                                  test_csv=test_path, config=cfg)
  else:
    with caplog.at_level(logging.WARNING):
      fds = image_data.load_image_split("synthetic", split_path, str(tmp_path),
                                        test_csv=test_path, config=cfg)
    assert dict(fds.client_sizes) == {"u0000": 4, "u0001": 3, "u0002": 3}
    assert fds.info["num_test_examples"] == 7
    msgs = " ".join(r.getMessage() for r in caplog.records)
    assert "synthetic/train: dropped 2 of 12" in msgs
    assert "synthetic/test: dropped 1 of 8" in msgs
  rep = json.load(open(report))
  tr = rep["splits"]["train"]
  assert [m["image_id"] for m in tr["missing"]] == ["img0001_002"]
  assert [m["image_id"] for m in tr["corrupt"]] == ["img0002_000"]
  assert [m["image_id"] for m in rep["splits"]["test"]["missing"]] == ["test0003"]
  assert tr["num_dropped"] == (2 if policy == "skip" else 0)
  # Existence-only checks see the missing file but not the corrupt one.
  with pytest.raises(image_data.BadImagesError, match="1 missing, 0 corrupt"):
    image_data.load_image_split(
        "synthetic", split_path, str(tmp_path),
        config=_cfg(tmp_path, check_images="exists", report_path=str(report)))
  # No check at all: opens without touching images.
  fds = image_data.load_image_split("synthetic", split_path, str(tmp_path),
                                    config=_cfg(tmp_path, check_images="none"))
  assert sum(fds.client_sizes.values()) == 12


def test_client_emptied_by_skip_is_reported(tmp_path):
  split_path, _ = synthetic.write_synthetic_split(str(tmp_path), 2, 1, 2)
  os.remove(tmp_path / "img0000_000.jpg")
  report = tmp_path / "r.json"
  fds = image_data.load_image_split(
      "s", split_path, str(tmp_path),
      config=_cfg(tmp_path, on_bad_image="skip", report_path=str(report)))
  assert fds.client_data.client_ids == ["u0001"]
  assert json.load(open(report))["splits"]["train"]["clients_emptied"] == ["u0000"]


@pytest.fixture(scope="module")
def gld(tmp_path_factory):
  root = tmp_path_factory.mktemp("gld_load")
  images = fixtures.small_gld_images()
  fixtures.write_gld_metadata(str(root), images)
  cfg = landmarks.GldConfig(8, 3, 6, 2, plots=False)
  out = root / "out"
  landmarks.build_landmarks(str(root / "train_clean.csv"),
                            str(root / "train_attribution.csv"), str(out),
                            config=cfg)
  used = [r["image_id"] for r in _rows(out / "federated_train.csv")]
  used += [r["image_id"] for r in _rows(out / "test.csv")]
  img_root = root / "images"
  fixtures.write_images(str(img_root),
                        [fixtures.gld_relative_path(i) for i in used])
  half = len(used) // 2
  fixtures.write_gld_tar(str(root / "images_000.tar"), str(img_root), used[:half])
  fixtures.write_gld_tar(str(root / "images_001.tar"), str(img_root), used[half:])
  return root, out, img_root


def test_landmarks_loose_files_and_tar_shards_agree(gld, tmp_path):
  root, out, img_root = gld
  kw = dict(test_csv=str(out / "test.csv"),
            config=_cfg(tmp_path, check_images="decode",
                        report_path=str(tmp_path / "r.json")))
  loose = image_data.load_landmarks(str(out / "federated_train.csv"),
                                    image_root=str(img_root), **kw)
  tar = image_data.load_landmarks(
      str(out / "federated_train.csv"),
      tar_shards=[str(root / "images_000.tar"), str(root / "images_001.tar")],
      **kw)
  rows = _rows(out / "federated_train.csv")
  sizes = {}
  for r in rows:
    sizes[r["user_id"]] = sizes.get(r["user_id"], 0) + 1
  assert dict(loose.client_sizes) == sizes == dict(tar.client_sizes)
  assert loose.input_shape == (32, 32, 3)
  assert loose.num_classes == len(_rows(out / "landmark_classes.csv"))
  cid = loose.client_data.client_ids[0]
  a = list(loose.client_data.create_tf_dataset_for_client(cid).map(
      loose.eval_map_fn).as_numpy_iterator())
  b = list(tar.client_data.dataset_computation(round_keys.round_key(cid, 1)))
  assert all(e["range"][1] > 0 for e in b)  # Really read from the tar.
  b = [tar.eval_map_fn(e) for e in b]
  assert len(a) == len(b) == sizes[cid]
  for x, y in zip(a, b):
    np.testing.assert_array_equal(x["x"], y["x"].numpy())
    assert x["y"] == int(y["y"])
  assert [int(e["y"]) for e in a] == [int(r["class"]) for r in rows
                                      if r["user_id"] == cid]


def test_synthetic_twins_match_structure(tmp_path):
  a = synthetic.synthetic_inaturalist(str(tmp_path / "a"), image_size=16)
  b = synthetic.synthetic_landmarks(str(tmp_path / "b"), image_size=16)
  for fds in (a, b):
    assert fds.client_data.element_type_structure == {
        "path": tf.TensorSpec([], tf.string), "range": tf.TensorSpec([3], tf.int64),
        "y": tf.TensorSpec([], tf.int64)}
    assert len(fds.client_data.client_ids) == 4 and fds.num_classes == 3
    e = next(iter(fds.test_data.map(fds.eval_map_fn)))
    assert e["x"].shape == (16, 16, 3)


def test_tfrecord_conversion_roundtrip(inat, tmp_path):
  root, out = inat
  fds = image_data.load_inaturalist(
      str(out / "inaturalist_user_120k.csv"), str(root),
      test_csv=str(out / "inaturalist_test.csv"),
      image_paths=str(out / "image_paths.csv"),
      config=_cfg(tmp_path, check_images="decode"))
  meta = tfrecords.convert_to_tfrecords(fds, str(tmp_path / "tfr"))
  assert meta["num_examples"] == sum(fds.client_sizes.values())
  conv = tfrecords.load_tfrecords(str(tmp_path / "tfr"))
  assert conv.client_data.client_ids == fds.client_data.client_ids
  assert dict(conv.client_sizes) == dict(fds.client_sizes)
  np.testing.assert_array_equal(conv.class_counts, fds.class_counts)
  seed = tf.constant([5, 6], tf.int64)
  for cid in fds.client_data.client_ids[:3]:
    a = [fds.train_map_fn(e, seed) for e in
         fds.client_data.create_tf_dataset_for_client(cid)]
    b = [conv.train_map_fn(e, seed) for e in
         conv.client_data.dataset_computation(round_keys.round_key(cid, 3))]
    assert len(a) == len(b)
    for x, y in zip(a, b):
      np.testing.assert_array_equal(x["x"].numpy(), y["x"].numpy())
      assert int(x["y"]) == int(y["y"])
  assert len(list(conv.test_data)) == 8


def test_convert_binary(inat, tmp_path):
  root, out = inat
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  base = [sys.executable, os.path.join(REPO, "datasets", "convert_to_tfrecords.py"),
          "--dataset=inaturalist", f"--split_csv={out / 'inaturalist_geo_10.csv'}",
          f"--image_paths={out / 'image_paths.csv'}", "--image_size=32"]
  n = len(_rows(out / "inaturalist_geo_10.csv"))
  # A copy of the image tree with one corrupt image.
  bad_root = tmp_path / "bad_root"
  rel = _rows(out / "image_paths.csv")
  first = _rows(out / "inaturalist_geo_10.csv")[0]["image_id"]
  for r in rel:
    src = root / r["path"]
    dst = bad_root / r["path"]
    dst.parent.mkdir(parents=True, exist_ok=True)
    if r["image_id"] == first:
      fixtures.write_corrupt(str(dst))
    else:
      dst.write_bytes(src.read_bytes())
  res = subprocess.run(base + [f"--image_root={bad_root}",
                               f"--output_dir={tmp_path / 'bad'}"],
                       capture_output=True, text=True, env=env, timeout=300)
  assert res.returncode == 3 and "Traceback" not in res.stderr
  assert "1 corrupt" in res.stderr and "image_report.json" in res.stderr
  res = subprocess.run(base + [f"--image_root={bad_root}", "--on_bad_image=skip",
                               f"--output_dir={tmp_path / 'skip'}"],
                       capture_output=True, text=True, env=env, timeout=300)
  assert res.returncode == 0, res.stderr
  assert "dropped 1 of" in res.stderr
  assert json.load(open(tmp_path / "skip" / "meta.json"))["num_examples"] == n - 1
  res = subprocess.run(base + [f"--image_root={root}", "--image_size=2",
                               f"--output_dir={tmp_path / 'x'}"],
                       capture_output=True, text=True, env=env, timeout=300)
  assert res.returncode == 2 and "--image_size" in res.stderr
  assert "Traceback" not in res.stderr


def _loaded(fds):
  """{client: sorted [(image file stem, y)]} and test [(stem, y)] of fds."""
  stem = lambda e: os.path.splitext(os.path.basename(e["path"].decode()))[0]
  train = {cid: sorted((stem(e), int(e["y"])) for e in
                       fds.client_data.create_tf_dataset_for_client(cid)
                       .as_numpy_iterator())
           for cid in fds.client_data.client_ids}
  return train, sorted((stem(e), int(e["y"]))
                       for e in fds.test_data.as_numpy_iterator())


def test_published_inaturalist_formats_train_on_class(tmp_path):
  """y = `class` (0..K-1); the source ids in `label` never reach the model."""
  images = {f"{k:032x}": f"train_val_images/Aves/S{k}/{k:032x}.jpg"
            for k in range(9)}
  fixtures.write_images(str(tmp_path), sorted(images.values()))
  label = {0: 17, 1: 2033, 2: 5088}  # iNaturalist 2017 category ids.
  train = [("41", f"{k:032x}", k % 3, label[k % 3]) for k in range(3)] + [
      ("7", f"{k:032x}", (k + 1) % 3, label[(k + 1) % 3]) for k in range(3, 7)]
  split_io.write_csv(str(tmp_path / "federated_train.csv"),
                     split_io.INAT_COLUMNS, train)           # 4 columns.
  test = [(f"{k:032x}", k % 3, label[k % 3]) for k in (7, 8)]
  split_io.write_csv(str(tmp_path / "test.csv"),
                     split_io.INAT_TEST_COLUMNS, test)        # 3 columns.
  # TFF's layout (plus the label column): the user_120k client column.
  split_io.write_csv(
      str(tmp_path / "iNaturalist_train.csv"),
      split_io.TFF_INAT_COLUMNS + ("label",),
      [(u,) + ("NA",) * 6 + (i, c, l) for u, i, c, l in train] +
      [("NA",) * 7 + ("ffff", 0, 17)])
  cfg = _cfg(tmp_path, check_images="exists")
  want_train = {}
  for u, i, c, _ in train:
    want_train.setdefault(u, []).append((i, c))
  want_train = {u: sorted(v) for u, v in want_train.items()}
  want_test = sorted((i, c) for i, c, _ in test)
  for path, split in [("federated_train.csv", None),
                      ("iNaturalist_train.csv", "user_120k")]:
    fds = image_data.load_inaturalist(
        str(tmp_path / path), str(tmp_path), split=split,
        test_csv=str(tmp_path / "test.csv"), image_paths=images, config=cfg)
    assert fds.num_classes == 3
    assert fds.class_counts.shape == (2, 3)
    assert fds.info["class_names"] == ["17", "2033", "5088"]
    assert _loaded(fds) == (want_train, want_test)
  # Original ids in `class` (the old builder's output): a clear error.
  split_io.write_csv(str(tmp_path / "bad.csv"), split_io.INAT_COLUMNS,
                     [(u, i, l, c) for u, i, c, l in train])
  with pytest.raises(split_io.SplitFormatError,
                     match="bad.csv: the class column is not contiguous"):
    image_data.load_inaturalist(str(tmp_path / "bad.csv"), str(tmp_path),
                                image_paths=images, config=cfg)


@pytest.mark.parametrize("split", ["USER_120K", "GEO_100"])
def test_builder_outputs_round_trip_through_tffs_inaturalist(inat, tmp_path,
                                                            split):
  """TFF's own iNaturalist CSV parsing reads our files as we do."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  tff_inat = tff.simulation.datasets.inaturalist
  root, out = inat
  image_map = tff_inat._generate_image_map(str(root))  # pylint: disable=protected-access
  which = tff_inat.INaturalistSplit[split]
  cache = tmp_path / "tff"
  tff_inat._create_train_data_files(  # pylint: disable=protected-access
      image_map, str(cache), which, str(out / "iNaturalist_train.csv"))
  tff_inat._create_test_data_file(  # pylint: disable=protected-access
      image_map, str(cache), which, str(out / "inaturalist_test.csv"))
  features = {"image/encoded_jpeg": tf.io.FixedLenFeature([], tf.string),
              "class": tf.io.FixedLenFeature([], tf.int64)}
  stem_of = {open(p, "rb").read(): s for s, p in image_map.items()}

  def records(path):
    return sorted((stem_of[e["image/encoded_jpeg"]], int(e["class"]))
                  for e in tf.data.TFRecordDataset(str(path)).map(
                      lambda r: tf.io.parse_single_example(r, features))
                  .as_numpy_iterator())
  directory = cache / which.name.lower()
  theirs = {c: records(directory / "train" / c)
            for c in os.listdir(directory / "train")}
  fds = image_data.load_inaturalist(
      str(out / "iNaturalist_train.csv"), str(root), split=which.name.lower(),
      test_csv=str(out / "inaturalist_test.csv"),
      image_paths=str(out / "image_paths.csv"), config=_cfg(tmp_path))
  ours, ours_test = _loaded(fds)
  assert theirs == ours
  assert records(directory / "test.tfRecord") == ours_test
  classes = {y for rows in ours.values() for _, y in rows}
  assert classes == set(range(fds.num_classes)) == {0, 1, 2, 3}
