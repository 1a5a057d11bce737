"""Test inputs in exactly the real on-disk formats (a helper, not a test file).

iNaturalist 2017 (`train2017.json`, `val2017.json`, `*_locations.json`,
`train_val_images/<supercategory>/<category>/<stem>.jpg`), GLD-v2
(`train.csv`, `train_clean.csv`, `train_attribution.csv`, images at
`a/b/c/<id>.jpg` or inside `images_NNN.tar`) and the published split CSVs of
google-research `federated_vision_datasets` (iNaturalist, Landmarks, CIFAR).
"""

import hashlib
import json
import os
import tarfile
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from federated_vision.data import split_io
from federated_vision.realworld.synthetic import write_images, write_jpeg  # pylint: disable=unused-import


def write_corrupt(path: str) -> None:
  """A file that is not an image."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "wb") as f:
    f.write(b"\x00garbage, not a jpeg\xff" * 4)


def image_stem(image_id: int) -> str:
  """iNaturalist-like file stem (32 hex chars) of an integer image id."""
  return hashlib.md5(str(int(image_id)).encode()).hexdigest()


class InatRecord(NamedTuple):
  """One iNaturalist image: JSON `images` + `annotations` + locations entry."""
  image_id: int
  category_id: int
  user_id: Optional[int] = None
  lat: Optional[float] = None
  lon: Optional[float] = None
  stem: Optional[str] = None  # Default: image_stem(image_id).


def inat_categories(num_categories: int, supercategories=("Plantae", "Aves",
                                                            "Insecta")):
  return [{"id": c, "name": f"Species {c:04d}",
           "supercategory": supercategories[c % len(supercategories)]}
          for c in range(num_categories)]


def write_inaturalist_metadata(root: str, prefix: str,
                               records: Sequence[InatRecord],
                               categories: Sequence[dict]) -> Dict[str, str]:
  """Writes `<prefix>2017.json` and `<prefix>2017_locations.json`.

  Returns:
    image stem -> file_name (relative to `root`).
  """
  os.makedirs(root, exist_ok=True)
  cat = {c["id"]: c for c in categories}
  images, annotations, locations, names = [], [], [], {}
  for r in records:
    c = cat[r.category_id]
    stem = r.stem or image_stem(r.image_id)
    file_name = f"train_val_images/{c['supercategory']}/{c['name']}/{stem}.jpg"
    names[stem] = file_name
    images.append({"id": int(r.image_id), "file_name": file_name,
                   "width": 16, "height": 12, "license": 1,
                   "rights_holder": "fixture"})
    annotations.append({"id": int(r.image_id), "image_id": int(r.image_id),
                        "category_id": int(r.category_id)})
    locations.append({"id": int(r.image_id),
                      "lat": None if r.lat is None else float(r.lat),
                      "lon": None if r.lon is None else float(r.lon),
                      "date": "2016-05-01 10:00:00+00:00",
                      "loc_uncert": None,
                      "user_id": None if r.user_id is None else int(r.user_id)})
  meta = {"info": {"year": 2017, "version": "1.0",
                   "description": "iNaturalist 2017 fixture"},
          "licenses": [{"id": 1, "name": "fixture", "url": ""}],
          "images": images, "annotations": annotations,
          "categories": list(categories)}
  with open(os.path.join(root, f"{prefix}2017.json"), "w") as f:
    json.dump(meta, f)
  with open(os.path.join(root, f"{prefix}2017_locations.json"), "w") as f:
    json.dump(locations, f)
  return names


# Cities the small fixtures cluster observations around (lat, lon).
CITIES = ((37.77, -122.42), (48.86, 2.35), (-33.87, 151.21), (35.68, 139.69),
          (-23.55, -46.63))


def _near_city(rng, k):
  city = CITIES[k % len(CITIES)]
  return (round(city[0] + float(rng.normal(0, 0.1)), 6),
          round(city[1] + float(rng.normal(0, 0.1)), 6))


def small_inaturalist_records(class_sizes=(12, 10, 9, 4, 10, 1), seed: int = 0,
                              num_users: int = 5, first_id: int = 1000):
  """Deterministic records: class c has class_sizes[c] images.

  Every 7th image has no user id, every 5th has no coordinates; the others
  lie within ~0.1 degree of one of `CITIES`. Images with a user id and
  coordinates per class (the default balancing's pool): 8, 7, 7, 2, 7, 0.
  """
  rng = np.random.default_rng(seed)
  records, k = [], 0
  for c, n in enumerate(class_sizes):
    for _ in range(n):
      user = None if k % 7 == 3 else (k * 3) % num_users
      lat, lon = _near_city(rng, k)
      if k % 5 == 4:
        lat = lon = None
      records.append(InatRecord(first_id + k, c, user, lat, lon))
      k += 1
  return records


def gappy_inaturalist_records(class_sizes: Sequence[int], seed: int = 0,
                              num_users: int = 40):
  """Records where exactly 10% lack a user id and another 10% coordinates.

  Image k of the whole list lacks a user id when k % 10 == 3 and coordinates
  when k % 10 == 7, so a class of n images has about 0.8 n complete ones.
  """
  rng = np.random.default_rng(seed)
  records, k = [], 0
  for c, n in enumerate(class_sizes):
    for _ in range(n):
      lat, lon = _near_city(rng, int(rng.integers(len(CITIES))))
      records.append(InatRecord(
          5000 + k, c, None if k % 10 == 3 else int(rng.integers(num_users)),
          None if k % 10 == 7 else lat, None if k % 10 == 7 else lon))
      k += 1
  return records


def write_small_inaturalist(root: str, class_sizes=(12, 10, 9, 4, 10, 1),
                            val_per_class: int = 2, with_images: bool = True,
                            seed: int = 0, records=None):
  """iNaturalist 2017 layout under root: JSONs + `train_val_images/`.

  Returns:
    (train_records, val_records, categories, stem -> file_name).
  """
  train = records or small_inaturalist_records(class_sizes, seed)
  num_categories = max(len(class_sizes), 1 + max(r.category_id for r in train))
  categories = inat_categories(num_categories)
  val = [InatRecord(90000 + k, c) for c in range(num_categories)
         for k in range(c * val_per_class, (c + 1) * val_per_class)]
  names = write_inaturalist_metadata(root, "train", train, categories)
  names.update(write_inaturalist_metadata(root, "val", val, categories))
  if with_images:
    write_images(root, sorted(names.values()), seed)
  return train, val, categories, names


# ----------------------------------------------------------------------------
# GLD-v2.


def gld_image_id(k: int) -> str:
  """16 hex chars, like GLD-v2 ids."""
  return hashlib.sha1(f"gld{k}".encode()).hexdigest()[:16]


def gld_relative_path(image_id: str) -> str:
  return f"{image_id[0]}/{image_id[1]}/{image_id[2]}/{image_id}.jpg"


class GldImage(NamedTuple):
  image_id: str
  landmark_id: int
  author: str
  clean: bool = True


def write_gld_metadata(root: str, images: Sequence[GldImage]) -> None:
  """Writes `train.csv`, `train_clean.csv`, `train_attribution.csv`."""
  os.makedirs(root, exist_ok=True)
  split_io.write_csv(
      os.path.join(root, "train.csv"), ("id", "url", "landmark_id"),
      [(im.image_id, f"https://upload.wikimedia.org/{im.image_id}.jpg",
        im.landmark_id) for im in images])
  by_landmark: Dict[int, List[str]] = {}
  for im in images:
    if im.clean:
      by_landmark.setdefault(im.landmark_id, []).append(im.image_id)
  split_io.write_csv(
      os.path.join(root, "train_clean.csv"), ("landmark_id", "images"),
      [(lm, " ".join(ids)) for lm, ids in sorted(by_landmark.items())])
  split_io.write_csv(
      os.path.join(root, "train_attribution.csv"),
      ("id", "url", "author", "license", "title"),
      [(im.image_id, f"http://commons.wikimedia.org/wiki/File:{im.image_id}.jpg",
        im.author, "CC-BY-SA-3.0", f"Photo, {im.image_id}")
       for im in images])


def write_gld_tar(path: str, image_root: str, image_ids: Sequence[str]) -> None:
  """A GLD-style `images_NNN.tar` shard with `a/b/c/<id>.jpg` members."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with tarfile.open(path, "w") as tar:
    for image_id in image_ids:
      rel = gld_relative_path(image_id)
      tar.add(os.path.join(image_root, rel), arcname=rel)


def small_gld_images(num_landmarks: int = 8, num_authors: int = 10,
                     num_images: int = 400, seed: int = 0) -> List[GldImage]:
  """Random GLD-v2 images with skewed landmarks/authors; some authorless
  (empty author field) and some not in the clean set."""
  rng = np.random.default_rng(seed)
  lm_p = rng.dirichlet(np.ones(num_landmarks))
  au_p = rng.dirichlet(np.ones(num_authors) * 0.7)
  out = []
  for k in range(num_images):
    author = "" if k % 23 == 5 else f"Author {int(rng.choice(num_authors, p=au_p))}, Jr"
    out.append(GldImage(gld_image_id(k), 1000 + 7 * int(rng.choice(
        num_landmarks, p=lm_p)), author, clean=(k % 17 != 3)))
  return out


# ----------------------------------------------------------------------------
# Published split files (google-research federated_vision_datasets).


def write_published_splits(root: str) -> Dict[str, dict]:
  """Small files in each published layout, written byte for byte as published.

  Returns:
    name -> {'path': file, 'rows': the rows written (as text tuples)}.
  """
  files = {
      # iNaturalist: class = the paper's class, label = iNaturalist 2017 id.
      "inat_train": ("user_id,image_id,class,label", [
          ("2051", "7ad3f0b2a8c9f0e1d2c3b4a59687f8e9", "0", "17"),
          ("2051", "0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e", "2", "5088"),
          ("77", "ffeeddccbbaa99887766554433221100", "1", "2033"),
          ("77", "1234567890abcdef1234567890abcdef", "0", "17")]),
      "inat_test": ("image_id,class,label", [
          ("aaaabbbbccccddddeeeeffff00001111", "2", "5088"),
          ("22223333444455556666777788889999", "1", "2033")]),
      # Landmarks: user_id numeric, as in TFF's published gld160k CSV.
      "landmarks_train": ("user_id,image_id,class", [
          ("0", "8f5e5b1bdbcbd4a2", "1"),
          ("1", "00a1b2c3d4e5f6a7", "0"),
          ("1", "c0ffee0123456789", "1")]),
      "landmarks_test": ("image_id,class", [
          ("fedcba9876543210", "0"), ("0011223344556677", "1")]),
      # CIFAR: image_id indexes the source train / test set.
      "cifar_train": ("user_id,image_id,class", [
          ("0", "3", "6"), ("0", "10", "4"), ("1", "7", "7")]),
      "cifar_test": ("image_id,class", [("0", "3"), ("5", "6")]),
  }
  out = {}
  for name, (header, rows) in files.items():
    path = os.path.join(root, name, "federated_train.csv"
                        if name.endswith("train") else "test.csv")
    if name == "cifar_train":
      path = os.path.join(root, name, "federated_train_alpha_0.00.csv")
    if name == "inat_train":  # the published file's name
      path = os.path.join(root, name, "federated_train_user_120k.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
      f.write(header + "\n")
      for r in rows:
        f.write(",".join(f'"{v}"' if "," in v else v for v in r) + "\n")
    out[name] = {"path": path, "rows": rows}
  return out


# ----------------------------------------------------------------------------
# Split files of different writers (class-numbering checks).


TFF_INAT_TRAIN = "iNaturalist_train.csv"
TFF_INAT_TEST = "iNaturalist_test.csv"


def _write_text_csv(path: str, header: Sequence[str], rows) -> str:
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, "w", newline="") as f:
    f.write(",".join(header) + "\n")
    for r in rows:
      f.write(",".join(str(v) for v in r) + "\n")
  return path


def write_tff_inaturalist(directory: str, train_rows, test_rows=None):
  """TFF's iNaturalist cache files, in its on-disk forms.

  `iNaturalist_train.csv`: `user_120k,geo_100,geo_300,geo_1k,geo_3k,geo_10k,
  geo_30k,image_id,class` (one row per image, `NA` where an image is not in a
  split; here every geo column is NA); `iNaturalist_test.csv`:
  `image_id,class` (no `label`).

  Args:
    directory: created.
    train_rows: (user_120k client, image_id, class).
    test_rows: optional (image_id, class).

  Returns:
    (train path, test path or None).
  """
  geo = len(split_io.TFF_INAT_SPLITS) - 1
  train = _write_text_csv(
      os.path.join(directory, TFF_INAT_TRAIN), split_io.TFF_INAT_COLUMNS,
      ((u, *[split_io.NA] * geo, i, c) for u, i, c in train_rows))
  test = None
  if test_rows is not None:
    test = _write_text_csv(os.path.join(directory, TFF_INAT_TEST),
                           split_io.TEST_COLUMNS, test_rows)
  return train, test


def write_published_test(directory: str, rows, with_label: bool = True) -> str:
  """The published `test.csv`: `image_id,class,label` (iNaturalist) or
  `image_id,class` (Landmarks); rows are (image_id, class[, label])."""
  return _write_text_csv(os.path.join(directory, "test.csv"),
                         split_io.INAT_TEST_COLUMNS if with_label
                         else split_io.TEST_COLUMNS, rows)


def write_published_train(directory: str, rows, with_label: bool = True) -> str:
  """The published `federated_train.csv`: `user_id,image_id,class[,label]`;
  rows are (user_id, image_id, class[, label])."""
  return _write_text_csv(os.path.join(directory, "federated_train.csv"),
                         split_io.INAT_COLUMNS if with_label
                         else split_io.COLUMNS, rows)
