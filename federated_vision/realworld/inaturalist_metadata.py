"""Reading the iNaturalist 2017 metadata (Hsu, Qi & Brown 2020, ECCV).

The builder of iNaturalist-User-120k / -Geo-k (`inaturalist`) and the loader
(`image_data.load_inaturalist`) read the iNaturalist 2017 JSON files here:
`train2017.json` / `val2017.json` (COCO-like: images, annotations,
categories) and `train2017_locations.json` (a list of {id, lat, lon, date,
user_id}). `image_id` in the published CSVs is an image's file stem; two
images with the same stem are an input error (`InputError`, naming the file).
"""

import dataclasses
import json
import os
from typing import Dict, List, Optional, Sequence

import numpy as np


class InputError(ValueError):
  """Malformed input metadata; the message names the file (and entry)."""


@dataclasses.dataclass
class InatMetadata:
  """Parsed metadata, one entry per image, sorted by image id."""
  image_ids: np.ndarray          # int64
  stems: List[str]               # file stem = published image_id
  file_names: List[str]          # relative to the image root
  category_ids: np.ndarray       # int64
  user_ids: List[Optional[str]]
  lat: np.ndarray                # float64, NaN = unknown
  lon: np.ndarray
  categories: Dict[int, dict]
  num_without_location_entry: int = 0

  def subset(self, keep: np.ndarray) -> "InatMetadata":
    keep = np.asarray(keep, bool)
    pick = lambda xs: [x for x, k in zip(xs, keep) if k]
    return InatMetadata(self.image_ids[keep], pick(self.stems),
                        pick(self.file_names), self.category_ids[keep],
                        pick(self.user_ids), self.lat[keep], self.lon[keep],
                        self.categories, self.num_without_location_entry)


def load_json(path: str):
  """The parsed JSON file; `InputError` naming it (and the line) if not."""
  if not os.path.isfile(path):
    raise InputError(f"{path}: no such file")
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except json.JSONDecodeError as e:
    raise InputError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
  except UnicodeDecodeError as e:
    raise InputError(f"{path}: not UTF-8 text ({e.reason})") from None


def get_field(entry, key, path, what, i):
  """`entry[key]`; `InputError` naming `path` and `what[i]` if it is absent."""
  if not isinstance(entry, dict) or key not in entry:
    raise InputError(f"{path}: {what}[{i}] lacks '{key}'")
  return entry[key]


def as_int(value, path, what, i, key):
  if isinstance(value, bool) or not isinstance(value, (int, str)):
    raise InputError(f"{path}: {what}[{i}].{key} = {value!r} is not an integer")
  try:
    return int(value)
  except ValueError:
    raise InputError(f"{path}: {what}[{i}].{key} = {value!r} is not an "
                     "integer") from None


def read_metadata(json_path: str, locations_path: Optional[str] = None
                  ) -> InatMetadata:
  """Parses `<split>2017.json` (+ optional `<split>2017_locations.json`).

  Raises:
    InputError: naming the file and the offending entry.
  """
  meta = load_json(json_path)
  if not isinstance(meta, dict):
    raise InputError(f"{json_path}: expected a JSON object with images, "
                     "annotations, categories")
  for key in ("images", "annotations", "categories"):
    if not isinstance(meta.get(key), list):
      raise InputError(f"{json_path}: missing or non-list '{key}'")
  categories = {}
  for i, c in enumerate(meta["categories"]):
    cid = as_int(get_field(c, "id", json_path, "categories", i), json_path,
                  "categories", i, "id")
    categories[cid] = {"id": cid, "name": str(c.get("name", cid)),
                       "supercategory": str(c.get("supercategory", ""))}
  file_name = {}
  for i, im in enumerate(meta["images"]):
    iid = as_int(get_field(im, "id", json_path, "images", i), json_path, "images",
                  i, "id")
    fn = get_field(im, "file_name", json_path, "images", i)
    if not isinstance(fn, str) or not fn:
      raise InputError(f"{json_path}: images[{i}].file_name is not a path")
    if iid in file_name:
      raise InputError(f"{json_path}: images[{i}] repeats image id {iid}")
    file_name[iid] = fn
  category = {}
  for i, a in enumerate(meta["annotations"]):
    iid = as_int(get_field(a, "image_id", json_path, "annotations", i), json_path,
                  "annotations", i, "image_id")
    cid = as_int(get_field(a, "category_id", json_path, "annotations", i),
                  json_path, "annotations", i, "category_id")
    if iid not in file_name:
      raise InputError(f"{json_path}: annotations[{i}] refers to unknown image "
                       f"{iid}")
    if cid not in categories:
      raise InputError(f"{json_path}: annotations[{i}] refers to unknown "
                       f"category {cid}")
    if category.setdefault(iid, cid) != cid:
      raise InputError(f"{json_path}: image {iid} has two categories")
  unlabelled = sorted(set(file_name) - set(category))
  if unlabelled:
    raise InputError(f"{json_path}: {len(unlabelled)} images have no "
                     f"annotation (e.g. {unlabelled[0]})")
  ids = np.array(sorted(file_name), dtype=np.int64)
  n = ids.size
  users: List[Optional[str]] = [None] * n
  lat = np.full(n, np.nan)
  lon = np.full(n, np.nan)
  without = n
  if locations_path is not None:
    locs = load_json(locations_path)
    if not isinstance(locs, list):
      raise InputError(f"{locations_path}: expected a JSON list of "
                       "{id, lat, lon, date, user_id}")
    pos = {int(iid): k for k, iid in enumerate(ids.tolist())}
    seen = set()
    for i, loc in enumerate(locs):
      iid = as_int(get_field(loc, "id", locations_path, "locations", i),
                    locations_path, "locations", i, "id")
      k = pos.get(iid)
      if k is None:
        raise InputError(f"{locations_path}: entry [{i}] refers to image "
                         f"{iid}, absent from {os.path.basename(json_path)}")
      if iid in seen:
        raise InputError(f"{locations_path}: entry [{i}] repeats image {iid}")
      seen.add(iid)
      u = loc.get("user_id")
      if u is not None:
        users[k] = str(as_int(u, locations_path, "locations", i, "user_id"))
      la, lo = loc.get("lat"), loc.get("lon")
      if la is not None and lo is not None:
        try:
          la, lo = float(la), float(lo)
        except (TypeError, ValueError):
          raise InputError(f"{locations_path}: entry [{i}] has non-numeric "
                           "lat/lon") from None
        if np.isfinite(la) and np.isfinite(lo) and abs(la) <= 90 and abs(lo) <= 180:
          lat[k], lon[k] = la, lo
    without = n - len(seen)
  names = [file_name[i] for i in ids.tolist()]
  stems = [file_stem(f) for f in names]
  check_unique_stems(json_path, ids.tolist(), stems)
  return InatMetadata(
      image_ids=ids,
      stems=stems,
      file_names=names,
      category_ids=np.array([category[i] for i in ids.tolist()], np.int64),
      user_ids=users, lat=lat, lon=lon, categories=categories,
      num_without_location_entry=without)


def file_stem(file_name: str) -> str:
  """The published image_id of an image: its file name without extension."""
  return os.path.splitext(os.path.basename(file_name))[0]


def check_unique_stems(path: str, image_ids: Sequence, stems: Sequence[str],
                       seen: Optional[Dict[str, str]] = None) -> None:
  """Raises InputError if two images share a file stem (the published id)."""
  seen = {} if seen is None else seen
  for iid, stem in zip(image_ids, stems):
    where = f"{os.path.basename(path)} image {iid}"
    first = seen.setdefault(stem, where)
    if first != where:
      raise InputError(f"{path}: image {iid} has file stem {stem}, like "
                       f"{first}; the stem is the published image_id, so it "
                       "must be unique")


def image_paths_from_metadata(json_paths: Sequence[str]) -> Dict[str, str]:
  """image_id (file stem) -> file_name from iNaturalist 2017 JSON files.

  Raises:
    InputError: naming the file, if two images share a stem.
  """
  out, seen = {}, {}
  for path in json_paths:
    meta = load_json(path)
    if not isinstance(meta, dict) or not isinstance(meta.get("images"), list):
      raise InputError(f"{path}: missing or non-list 'images'")
    ids, names = [], []
    for i, im in enumerate(meta["images"]):
      names.append(get_field(im, "file_name", path, "images", i))
      ids.append(get_field(im, "id", path, "images", i))
    stems = [file_stem(f) for f in names]
    check_unique_stems(path, ids, stems, seen)
    out.update(zip(stems, names))
  return out
