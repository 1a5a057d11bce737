"""Tiny inputs in exactly the real on-disk formats, and synthetic twins.

Writers for iNaturalist 2017 (`train2017.json`, `val2017.json`,
`*_locations.json`, `train_val_images/<supercategory>/<category>/<id>.jpg`),
GLD-v2 (`train.csv`, `train_clean.csv`, `train_attribution.csv`, images at
`a/b/c/<id>.jpg` or inside `images_NNN.tar`) and published split CSVs. Used
by the tests, the benchmark and the synthetic twins (`synthetic_inaturalist`,
`synthetic_landmarks`), which return `FederatedDataset`s with the same element
structure as the real loaders.
"""

import csv
import hashlib
import json
import os
import tarfile
from typing import Dict, List, NamedTuple, Optional, Sequence

import numpy as np

from federated_vision.realworld import split_csv


def write_jpeg(path: str, seed: int, size=(12, 16)) -> None:
  """A small random RGB JPEG (decodable by PIL and tf.io.decode_jpeg)."""
  from PIL import Image  # pylint: disable=g-import-not-at-top
  os.makedirs(os.path.dirname(path), exist_ok=True)
  rng = np.random.default_rng(seed)
  pixels = rng.integers(0, 256, size=(size[0], size[1], 3), dtype=np.uint8)
  Image.fromarray(pixels).save(path, "JPEG")


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


def inat_categories(num_categories: int, supercategories=("Plantae", "Aves",
                                                            "Insecta")):
  return [{"id": c, "name": f"Species {c:04d}",
           "supercategory": supercategories[c % len(supercategories)]}
          for c in range(num_categories)]


def inat_file_name(record: InatRecord, categories: Sequence[dict]) -> str:
  cat = {c["id"]: c for c in categories}[record.category_id]
  return (f"train_val_images/{cat['supercategory']}/{cat['name']}/"
          f"{image_stem(record.image_id)}.jpg")


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
    file_name = (f"train_val_images/{c['supercategory']}/{c['name']}/"
                 f"{image_stem(r.image_id)}.jpg")
    names[image_stem(r.image_id)] = file_name
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


def write_images(root: str, relative_paths: Sequence[str], seed: int = 0,
                 corrupt: Sequence[str] = (), missing: Sequence[str] = ()):
  """JPEGs at root/path, garbage for `corrupt`, nothing for `missing`."""
  corrupt, missing = set(corrupt), set(missing)
  for i, rel in enumerate(relative_paths):
    if rel in missing:
      continue
    path = os.path.join(root, rel)
    if rel in corrupt:
      write_corrupt(path)
    else:
      write_jpeg(path, seed * 1_000_003 + i)


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
  split_csv.write_csv(
      os.path.join(root, "train.csv"), ("id", "url", "landmark_id"),
      [(im.image_id, f"https://upload.wikimedia.org/{im.image_id}.jpg",
        im.landmark_id) for im in images])
  by_landmark: Dict[int, List[str]] = {}
  for im in images:
    if im.clean:
      by_landmark.setdefault(im.landmark_id, []).append(im.image_id)
  split_csv.write_csv(
      os.path.join(root, "train_clean.csv"), ("landmark_id", "images"),
      [(lm, " ".join(ids)) for lm, ids in sorted(by_landmark.items())])
  split_csv.write_csv(
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


# ----------------------------------------------------------------------------
# Synthetic twins.


def write_synthetic_split(root: str, num_clients: int, examples_per_client: int,
                          num_classes: int, seed: int = 0,
                          num_test: int = 8, with_label: bool = True):
  """A `user_id,image_id,class[,label]` split + `test.csv` + JPEGs under root.

  Client k gets examples of classes (k + j) % num_classes.

  Returns:
    (split_csv_path, test_csv_path).
  """
  rows, rel = [], []
  for k in range(num_clients):
    for j in range(examples_per_client):
      image_id = f"img{k:04d}_{j:03d}"
      c = (k + j) % num_classes
      rows.append((f"u{k:04d}", image_id, c + 100, c) if with_label
                  else (f"u{k:04d}", image_id, c + 100))
      rel.append(f"{image_id}.jpg")
  test = []
  for j in range(num_test):
    image_id = f"test{j:04d}"
    test.append((image_id, j % num_classes + 100))
    rel.append(f"{image_id}.jpg")
  write_images(root, rel, seed)
  header = split_csv.USER_LAYOUT if with_label else split_csv.LANDMARKS_LAYOUT
  split_path = os.path.join(root, "split.csv")
  test_path = os.path.join(root, "test.csv")
  split_csv.write_csv(split_path, header, rows)
  split_csv.write_csv(test_path, split_csv.TEST_LAYOUT, test)
  return split_path, test_path


def synthetic_inaturalist(root: str, num_clients: int = 4,
                          examples_per_client: int = 5, num_classes: int = 3,
                          seed: int = 0, image_size: int = 299, **config_kw):
  """Synthetic twin of `image_data.load_inaturalist`: same element structure.

  Writes tiny JPEGs and a user-layout split under `root`.
  """
  from federated_vision.realworld import image_data  # pylint: disable=g-import-not-at-top
  split_path, test_path = write_synthetic_split(
      root, num_clients, examples_per_client, num_classes, seed)
  config_kw.setdefault("cache_dir", os.path.join(root, "cache"))
  return image_data.load_inaturalist(
      split_path, root, test_csv=test_path,
      config=image_data.LoaderConfig(image_size=image_size, **config_kw))


def synthetic_landmarks(root: str, num_clients: int = 4,
                        examples_per_client: int = 5, num_classes: int = 3,
                        seed: int = 0, image_size: int = 224, **config_kw):
  """Synthetic twin of `image_data.load_landmarks` (user_id,image_id,class)."""
  from federated_vision.realworld import image_data  # pylint: disable=g-import-not-at-top
  split_path, test_path = write_synthetic_split(
      root, num_clients, examples_per_client, num_classes, seed,
      with_label=False)
  config_kw.setdefault("cache_dir", os.path.join(root, "cache"))
  return image_data.load_image_split(
      "landmarks_synthetic", split_path, root, test_csv=test_path,
      config=image_data.LoaderConfig(image_size=image_size, **config_kw))


# Cities the small fixtures cluster observations around (lat, lon).
CITIES = ((37.77, -122.42), (48.86, 2.35), (-33.87, 151.21), (35.68, 139.69),
          (-23.55, -46.63))


def small_inaturalist_records(class_sizes=(12, 10, 9, 4, 10, 1), seed: int = 0,
                              num_users: int = 5, first_id: int = 1000):
  """Deterministic records: class c has class_sizes[c] images.

  Every 7th image has no user id, every 5th has no coordinates; the others
  lie within ~0.1 degree of one of `CITIES`.
  """
  rng = np.random.default_rng(seed)
  records, k = [], 0
  for c, n in enumerate(class_sizes):
    for _ in range(n):
      city = CITIES[k % len(CITIES)]
      user = None if k % 7 == 3 else (k * 3) % num_users
      if k % 5 == 4:
        lat = lon = None
      else:
        lat = round(city[0] + float(rng.normal(0, 0.1)), 6)
        lon = round(city[1] + float(rng.normal(0, 0.1)), 6)
      records.append(InatRecord(first_id + k, c, user, lat, lon))
      k += 1
  return records


def write_small_inaturalist(root: str, class_sizes=(12, 10, 9, 4, 10, 1),
                            val_per_class: int = 2, with_images: bool = True,
                            seed: int = 0):
  """iNaturalist 2017 layout under root: JSONs + `train_val_images/`.

  Returns:
    (train_records, val_records, categories, stem -> file_name).
  """
  categories = inat_categories(len(class_sizes))
  train = small_inaturalist_records(class_sizes, seed)
  val = [InatRecord(90000 + k, c) for c in range(len(class_sizes))
         for k in range(c * val_per_class, (c + 1) * val_per_class)]
  names = write_inaturalist_metadata(root, "train", train, categories)
  names.update(write_inaturalist_metadata(root, "val", val, categories))
  if with_images:
    write_images(root, sorted(names.values()), seed)
  return train, val, categories, names


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
# Real-scale synthetic metadata (benchmarks): no images, real formats.


def write_inaturalist_at_scale(root: str, num_train: int = 579_184,
                               num_val: int = 95_986, num_categories: int = 5_089,
                               num_big_categories: int = 1_203,
                               num_users: int = 30_000, num_cities: int = 400,
                               seed: int = 0) -> dict:
  """iNaturalist-2017-sized `train2017.json`, `train2017_locations.json`,
  `val2017.json` with clustered observations.

  Exactly `num_big_categories` categories have >= 100 training images (so
  balancing keeps num_big_categories x 100). Users have power-law activity
  and a home city (cities have power-law populations); observations scatter
  ~0.3 degrees around the home city, 10% around a random other city. 1% of
  locations have no user id, 4% no coordinates.

  Returns:
    Summary counts.
  """
  rng = np.random.default_rng(seed)
  small = rng.integers(2, 100, num_categories - num_big_categories)
  big_total = num_train - int(small.sum())
  if big_total < 100 * num_big_categories:
    raise ValueError("num_train too small for the requested big categories")
  w = rng.lognormal(0, 1, num_big_categories)
  big = 100 + rng.multinomial(big_total - 100 * num_big_categories, w / w.sum())
  sizes = np.concatenate([big, small])
  cat_of = rng.permutation(np.repeat(np.arange(num_categories), sizes))
  categories = inat_categories(num_categories, ("Plantae", "Aves", "Insecta",
                                                "Reptilia", "Mammalia"))
  city = np.stack([rng.uniform(-45, 65, num_cities),
                   rng.uniform(-160, 170, num_cities)], 1)
  city_p = 1 / np.arange(1, num_cities + 1)
  city_p /= city_p.sum()
  user_p = 1 / np.arange(1, num_users + 1) ** 1.1
  user_p /= user_p.sum()
  home = rng.choice(num_cities, num_users, p=city_p)
  user = rng.choice(num_users, num_train, p=user_p)
  where = np.where(rng.random(num_train) < 0.1,
                   rng.choice(num_cities, num_train, p=city_p), home[user])
  lat = np.clip(city[where, 0] + rng.normal(0, 0.3, num_train), -89.9, 89.9)
  lon = np.clip(city[where, 1] + rng.normal(0, 0.3, num_train), -179.9, 179.9)
  no_user = rng.random(num_train) < 0.01
  no_xy = rng.random(num_train) < 0.04
  os.makedirs(root, exist_ok=True)

  def dump(prefix, ids, cats, with_locations):
    names = [f"train_val_images/{categories[c]['supercategory']}/"
             f"{categories[c]['name']}/{image_stem(i)}.jpg"
             for i, c in zip(ids.tolist(), cats.tolist())]
    meta = {"info": {"year": 2017, "description": "synthetic at scale"},
            "licenses": [],
            "images": [{"id": i, "file_name": n, "width": 800, "height": 600}
                       for i, n in zip(ids.tolist(), names)],
            "annotations": [{"id": i, "image_id": i, "category_id": c}
                            for i, c in zip(ids.tolist(), cats.tolist())],
            "categories": categories}
    with open(os.path.join(root, f"{prefix}2017.json"), "w") as f:
      json.dump(meta, f)
    if with_locations:
      locs = [{"id": i,
               "lat": None if no_xy[k] else round(float(lat[k]), 5),
               "lon": None if no_xy[k] else round(float(lon[k]), 5),
               "date": "2016-06-01 12:00:00+00:00",
               "user_id": None if no_user[k] else int(user[k])}
              for k, i in enumerate(ids.tolist())]
      with open(os.path.join(root, f"{prefix}2017_locations.json"), "w") as f:
        json.dump(locs, f)

  dump("train", np.arange(num_train), cat_of, True)
  val_cats = rng.integers(0, num_categories, num_val)
  dump("val", np.arange(num_train, num_train + num_val), val_cats, False)
  return {"num_train": num_train, "num_val": num_val,
          "num_categories": num_categories,
          "num_categories_ge_100": int((sizes >= 100).sum()),
          "num_no_user": int(no_user.sum()), "num_no_coordinates": int(no_xy.sum())}


def write_gld_at_scale(root: str, num_images: int = 1_580_470,
                       num_landmarks: int = 81_313, num_authors: int = 150_000,
                       seed: int = 0) -> dict:
  """GLD-v2-clean-sized `train_clean.csv` and `train_attribution.csv`.

  Landmark sizes are log-normal (heavy tail); author activity is power-law;
  1% of images have no author.
  """
  rng = np.random.default_rng(seed)
  w = rng.lognormal(0, 1.5, num_landmarks)
  landmark = rng.choice(num_landmarks, num_images, p=w / w.sum())
  # Make sure every landmark id has an image (GLD ids are all used).
  landmark[:num_landmarks] = np.arange(num_landmarks)
  p = 1 / np.arange(1, num_authors + 1) ** 1.05
  author = rng.choice(num_authors, num_images, p=p / p.sum())
  no_author = rng.random(num_images) < 0.01
  ids = [f"{x:016x}" for x in rng.integers(0, 2**63, num_images, dtype=np.int64).tolist()]
  os.makedirs(root, exist_ok=True)
  order = np.argsort(landmark, kind="stable")
  bounds = np.flatnonzero(np.diff(landmark[order])) + 1
  with open(os.path.join(root, "train_clean.csv"), "w") as f:
    f.write("landmark_id,images\n")
    for group in np.split(order, bounds):
      f.write(f"{int(landmark[group[0]]) * 2 + 1},"
              f"{' '.join(ids[i] for i in group.tolist())}\n")
  with open(os.path.join(root, "train_attribution.csv"), "w") as f:
    f.write("id,url,author,license,title\n")
    for i in range(num_images):
      a = "" if no_author[i] else f"Author_{int(author[i])}"
      f.write(f"{ids[i]},http://commons.wikimedia.org/wiki/File:{ids[i]}.jpg,"
              f"{a},CC-BY-SA-3.0,\"Photo {i}, synthetic\"\n")
  return {"num_images": num_images, "num_landmarks": num_landmarks,
          "num_authors": num_authors, "num_no_author": int(no_author.sum())}
