"""GLD-v2 images in TFF's flat cache layout read like GLD's `a/b/c/<id>.jpg`.

TFF's `simulation.datasets.gldv2` keeps every image as `<cache>/images/<id>.jpg`;
GLD-v2's shards hold `a/b/c/<id>.jpg`. `load_landmarks(image_root=...)` and
the Landmarks builder's image check accept both.
"""

import csv
import os
import shutil

import numpy as np
import pytest

from federated_vision.runtime import contexts
from federated_vision.realworld import gld_layout, image_check, image_data, landmarks
import realworld_fixtures as fixtures


def _rows(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def gld(tmp_path_factory):
  """(root, split dir, nested image root, TFF cache dir, flat image dir)."""
  root = tmp_path_factory.mktemp("gld_layout")
  images = fixtures.small_gld_images(num_authors=25)
  fixtures.write_gld_metadata(str(root), images)
  out = root / "out"
  landmarks.build_landmarks(str(root / "train_clean.csv"),
                            str(root / "train_attribution.csv"), str(out),
                            config=landmarks.GldConfig(8, 3, 6, 2, plots=False))
  used = [im.image_id for im in images]  # every image, as in TFF's cache
  nested = root / "nested"
  fixtures.write_images(str(nested), [fixtures.gld_relative_path(i) for i in used])
  cache = root / "tff_cache"
  os.makedirs(cache / "images")
  for i in used:
    shutil.copy(nested / fixtures.gld_relative_path(i), cache / "images" / f"{i}.jpg")
  return root, out, nested, cache, cache / "images"


def test_image_template_per_layout(gld, tmp_path):
  _, _, nested, cache, flat = gld
  assert gld_layout.image_template(str(nested)) == gld_layout.NESTED_TEMPLATE
  assert gld_layout.image_template(str(flat)) == "{image_id}.jpg"
  assert gld_layout.image_template(str(cache)) == "images/{image_id}.jpg"
  assert gld_layout.image_template(str(tmp_path)) == gld_layout.NESTED_TEMPLATE
  assert gld_layout.NESTED_TEMPLATE.format(image_id="8f5e5b1b") == (
      "8/f/5/8f5e5b1b.jpg")


def test_load_landmarks_reads_tff_flat_layout(gld, tmp_path):
  _, out, nested, cache, flat = gld
  loaded = {}
  with contexts.managed_execution_context():
    for name, image_root in (("nested", nested), ("flat", flat),
                             ("cache", cache)):
      fed = image_data.load_landmarks(
          str(out / "federated_train.csv"), image_root=str(image_root),
          test_csv=str(out / "test.csv"),
          config=image_data.LoaderConfig(
              image_size=32, cache_dir=str(tmp_path / name),
              check_images="decode", report_path=str(tmp_path / f"{name}.json")))
      cid = fed.client_data.client_ids[0]
      pixels = [e["x"] for e in fed.client_data.create_tf_dataset_for_client(
          cid).map(fed.eval_map_fn).as_numpy_iterator()]
      test = [b["x"].numpy() for b in fed.test_batches(1000)]
      loaded[name] = (dict(fed.client_sizes), np.stack(pixels),
                      np.concatenate(test or [np.zeros([0])]))
  sizes = {}
  for r in _rows(out / "federated_train.csv"):
    sizes[r["user_id"]] = sizes.get(r["user_id"], 0) + 1
  for name in ("flat", "cache"):
    assert loaded[name][0] == loaded["nested"][0] == sizes
    np.testing.assert_array_equal(loaded[name][1], loaded["nested"][1])
    np.testing.assert_array_equal(loaded[name][2], loaded["nested"][2])
  assert len(loaded["flat"][2]) == len(_rows(out / "test.csv")) > 0


def test_builder_checks_images_in_flat_layout(gld, tmp_path):
  root, out, _, _, flat = gld
  # One clean image used by the split removed from the flat folder: the
  # builder's check finds it there (so it looked in the flat layout).
  victim = _rows(out / "federated_train.csv")[0]["image_id"]
  flat_copy = tmp_path / "flat"
  shutil.copytree(flat, flat_copy)
  os.remove(flat_copy / f"{victim}.jpg")
  with pytest.raises(image_check.BadImagesError) as err:
    landmarks.build_landmarks(
        str(root / "train_clean.csv"), str(root / "train_attribution.csv"),
        str(tmp_path / "built"),
        config=landmarks.GldConfig(8, 3, 6, 2, plots=False),
        image_check=image_check.ImageCheckConfig(
            image_root=str(flat_copy), report_path=str(tmp_path / "r.json")))
  report = open(tmp_path / "r.json").read()
  assert f"{victim}.jpg" in report and str(err.value)
  assert report.count(".jpg") == 1, report[:2000]  # only that one
  # The whole flat folder: the same split as without an image check.
  landmarks.build_landmarks(
      str(root / "train_clean.csv"), str(root / "train_attribution.csv"),
      str(tmp_path / "built_ok"),
      config=landmarks.GldConfig(8, 3, 6, 2, plots=False),
      image_check=image_check.ImageCheckConfig(
          image_root=str(flat), report_path=str(tmp_path / "ok.json"),
          on_bad_image="skip"))
  assert _rows(tmp_path / "built_ok" / "federated_train.csv") == _rows(
      out / "federated_train.csv")
