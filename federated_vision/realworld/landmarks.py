"""Landmarks-User-160k from GLD-v2-clean (Hsu, Qi & Brown 2020, ECCV).

Inputs: `train_clean.csv` (`landmark_id,images`, space-separated image ids),
`train_attribution.csv` (`id,url,author,license,title`; the author is the
user) and optionally `train.csv` (`id,url,landmark_id`, only counted).

Rules (the paper's): keep landmarks with >= 30 images and >= 10 distinct
users, and users with >= 30 images covering >= 5 landmarks. The two rules
interact (dropping a user can push a landmark below its thresholds and vice
versa), so they are applied *to a fixed point*: alternate the landmark filter
and the user filter on the surviving images until neither removes anything.
Hence every rule holds on the output itself. The test split is made of the
remaining clean images whose landmark is kept and whose author does not appear
in the train split (images without an author are excluded and counted).

Inputs are checked, errors naming file and line: an image listed twice in
`train_clean.csv`, an image with two different authors in
`train_attribution.csv`, and a clean image with no attribution row at all
(e.g. an id cut short by a truncated `train_clean.csv`) are errors, never an
image "without an author".

Outputs (sorted, deterministic): `federated_train.csv` (`user_id,image_id,
class`), `test.csv` (`image_id,class`), `authors.csv` (`user_id,author`),
`landmark_classes.csv` (`class,landmark_id`), `stats.json`, PNG figures.
`user_id` is the author's rank among train authors (sorted by name); `class`
is the landmark's rank among kept landmarks (sorted by landmark_id), 0-based.
"""

import dataclasses
import os
from typing import Dict, List, Optional, Tuple

import numpy as np

from federated_vision.data import split_io
from federated_vision.realworld import gld_layout
from federated_vision.realworld import image_check as image_check_lib
from federated_vision.realworld import image_report as report

SplitFormatError = split_io.SplitFormatError


@dataclasses.dataclass(frozen=True)
class GldConfig:
  """Filtering thresholds (defaults: the paper's).

  Attributes:
    min_landmark_images: a kept landmark has at least this many images...
    min_landmark_users: ... from at least this many users.
    min_user_images: a kept user has at least this many images...
    min_user_landmarks: ... of at least this many landmarks.
    max_iterations: safety bound of the fixed-point iteration.
    plots: write PNG figures.
  """
  min_landmark_images: int = 30
  min_landmark_users: int = 10
  min_user_images: int = 30
  min_user_landmarks: int = 5
  max_iterations: int = 1000
  plots: bool = True

  def __post_init__(self):
    for f in ("min_landmark_images", "min_landmark_users", "min_user_images",
              "min_user_landmarks", "max_iterations"):
      if int(getattr(self, f)) < 1:
        raise ValueError(f"{f} must be >= 1, got {getattr(self, f)}")


def read_clean(path: str) -> Tuple[List[str], np.ndarray, np.ndarray]:
  """(image ids, landmark id of each, line of each) from `train_clean.csv`."""
  ids: List[str] = []
  landmarks: List[int] = []
  lines: List[int] = []
  seen: Dict[str, int] = {}
  for line, row in split_io.read_rows(path, ("landmark_id", "images")):
    try:
      lm = int(row["landmark_id"])
    except ValueError:
      raise SplitFormatError(f"{path}:{line}: landmark_id "
                             f"{row['landmark_id']!r} is not an integer"
                             ) from None
    for image_id in row["images"].split():
      if image_id in seen:
        raise SplitFormatError(f"{path}:{line}: image {image_id} already "
                               f"listed for landmark {seen[image_id]}")
      seen[image_id] = lm
      ids.append(image_id)
      landmarks.append(lm)
      lines.append(line)
  return ids, np.array(landmarks, np.int64), np.array(lines, np.int64)


def read_authors(path: str, wanted: Optional[set] = None) -> Dict[str, str]:
  """image id -> author ('' when the field is empty) from `train_attribution.csv`.

  Raises:
    SplitFormatError: `path:line` when an image is listed twice with
      different authors.
  """
  out: Dict[str, str] = {}
  first: Dict[str, int] = {}
  for line, row in split_io.read_rows(path, ("id", "author")):
    image_id = row["id"]
    if wanted is not None and image_id not in wanted:
      continue
    author = row["author"]
    if out.setdefault(image_id, author) != author:
      raise SplitFormatError(
          f"{path}:{line}: image {image_id} has author {author!r}, but line "
          f"{first[image_id]} gives it author {out[image_id]!r}")
    first.setdefault(image_id, line)
  return out


def count_train_csv(path: str) -> int:
  n = 0
  for _ in split_io.read_rows(path, ("id", "url", "landmark_id")):
    n += 1
  return n


def _distinct_per(group: np.ndarray, other: np.ndarray, n_groups: int,
                  n_other: int) -> np.ndarray:
  pairs = np.unique(group * np.int64(n_other) + other)
  return np.bincount(pairs // n_other, minlength=n_groups)


def fixed_point_filter(landmark: np.ndarray, user: np.ndarray,
                       config: GldConfig = GldConfig()) -> Tuple[np.ndarray, int]:
  """The landmark and user rules iterated to a fixed point.

  Args:
    landmark: int codes in [0, L) per image.
    user: int codes in [0, U) per image.
    config: thresholds.

  Returns:
    (boolean keep mask, number of iterations). On the kept images every
    landmark has >= min_landmark_images images from >= min_landmark_users
    users and every user >= min_user_images images of >= min_user_landmarks
    landmarks.
  """
  landmark = np.asarray(landmark, np.int64)
  user = np.asarray(user, np.int64)
  n_l = int(landmark.max()) + 1 if landmark.size else 1
  n_u = int(user.max()) + 1 if user.size else 1
  active = np.ones(landmark.size, bool)
  for it in range(1, config.max_iterations + 1):
    lm, us = landmark[active], user[active]
    ok_l = ((np.bincount(lm, minlength=n_l) >= config.min_landmark_images) &
            (_distinct_per(lm, us, n_l, n_u) >= config.min_landmark_users))
    after_l = active & ok_l[landmark]
    lm, us = landmark[after_l], user[after_l]
    ok_u = ((np.bincount(us, minlength=n_u) >= config.min_user_images) &
            (_distinct_per(us, lm, n_u, n_l) >= config.min_user_landmarks))
    after_u = after_l & ok_u[user]
    if np.array_equal(after_u, active):
      return active, it
    active = after_u
  raise RuntimeError(f"no fixed point after {config.max_iterations} iterations")


def build_landmarks(train_clean_csv: str, attribution_csv: str, output_dir: str,
                    train_csv: Optional[str] = None,
                    config: GldConfig = GldConfig(),
                    image_check: Optional[image_check_lib.ImageCheckConfig] = None
                    ) -> dict:
  """Builds Landmarks-User-160k (Hsu, Qi & Brown 2020) from GLD-v2-clean.

  Args:
    train_clean_csv: GLD-v2 `train_clean.csv`.
    attribution_csv: GLD-v2 `train_attribution.csv`.
    output_dir: created; receives CSVs, `stats.json`, PNGs.
    train_csv: optional GLD-v2 `train.csv`, only counted in the stats.
    config: `GldConfig`.
    image_check: if given, clean images are checked (files under its
      image_root, or members of its tar shards) before the rules; bad ones
      are listed in its report and fail the build or are dropped first.

  Returns:
    The statistics written to `stats.json`.

  Raises:
    FileNotFoundError, SplitFormatError (file:line), ValueError (empty
    result).
  """
  ids, landmark_ids, lines = read_clean(train_clean_csv)
  bad_images = None
  if image_check is not None:
    template = gld_layout.NESTED_TEMPLATE  # tar members, extracted shards
    if image_check.image_root and not image_check.tar_shards:  # or TFF's cache
      template = gld_layout.image_template(image_check.image_root)
    keep = image_check_lib.check_relative_images(
        "landmarks", image_check,
        {"clean": (ids, [template.format(image_id=i) for i in ids])})["clean"]
    bad_images = int((~keep).sum())
    ids = [i for i, k in zip(ids, keep) if k]
    landmark_ids, lines = landmark_ids[keep], lines[keep]
  listed = read_authors(attribution_csv, set(ids))
  absent = [k for k, i in enumerate(ids) if i not in listed]
  if absent:
    raise SplitFormatError(
        f"{train_clean_csv}:{int(lines[absent[0]])}: image {ids[absent[0]]} "
        f"has no row in {attribution_csv} ({len(absent)} such images; is "
        "either file truncated?)")
  authors = {i: a for i, a in listed.items() if a}
  has_author = np.array([i in authors for i in ids], bool)
  cand = np.flatnonzero(has_author)
  author_names = sorted({authors[ids[i]] for i in cand})
  author_code = {a: k for k, a in enumerate(author_names)}
  lm_values, lm_codes = np.unique(landmark_ids, return_inverse=True)
  users = np.array([author_code[authors[ids[i]]] for i in cand], np.int64)
  keep, iterations = fixed_point_filter(lm_codes[cand], users, config)
  train_idx = cand[keep]
  if train_idx.size == 0:
    raise ValueError(f"{train_clean_csv}: no image survives the Landmarks-User "
                     f"rules {dataclasses.asdict(config)}")
  kept_landmarks = np.unique(landmark_ids[train_idx])
  class_of = {int(l): c for c, l in enumerate(kept_landmarks.tolist())}
  train_authors = sorted({authors[ids[i]] for i in train_idx})
  user_of = {a: u for u, a in enumerate(train_authors)}
  os.makedirs(output_dir, exist_ok=True)
  train_rows = sorted((user_of[authors[ids[i]]], ids[i],
                       class_of[int(landmark_ids[i])]) for i in train_idx)
  split_io.write_csv(os.path.join(output_dir, "federated_train.csv"),
                     split_io.COLUMNS, train_rows)
  in_train = np.zeros(len(ids), bool)
  in_train[train_idx] = True
  test_rows, n_author_in_train, n_no_author = [], 0, 0
  for i in np.flatnonzero(~in_train):
    c = class_of.get(int(landmark_ids[i]))
    if c is None:
      continue
    author = authors.get(ids[i])
    if author is None:
      n_no_author += 1
    elif author in user_of:
      n_author_in_train += 1
    else:
      test_rows.append((ids[i], c))
  test_rows.sort()
  split_io.write_csv(os.path.join(output_dir, "test.csv"),
                     split_io.TEST_COLUMNS, test_rows)
  split_io.write_csv(os.path.join(output_dir, "authors.csv"),
                     ("user_id", "author"), enumerate(train_authors))
  split_io.write_csv(os.path.join(output_dir, "landmark_classes.csv"),
                     ("class", "landmark_id"), enumerate(kept_landmarks.tolist()))
  stats = {
      "reference": "Hsu, Qi & Brown 2020, ECCV (Landmarks-User-160k)",
      "config": dataclasses.asdict(config),
      "rules_applied_to_fixed_point": True,
      "fixed_point_iterations": iterations,
      "num_clean_images": len(ids),
      "num_clean_landmarks": int(lm_values.size),
      "num_clean_images_dropped_bad": bad_images,
      "image_report": image_check and image_check.report_path,
      "num_clean_images_without_author": int((~has_author).sum()),
      "num_train_csv_images": count_train_csv(train_csv) if train_csv else None,
      "train": report.report_split(
          "landmarks_user_160k", [r[0] for r in train_rows],
          [r[2] for r in train_rows], len(kept_landmarks), output_dir,
          plots=config.plots),
      "test": {"num_examples": len(test_rows),
               "num_classes_present": len({r[1] for r in test_rows}),
               "num_excluded_author_in_train": n_author_in_train,
               "num_excluded_without_author": n_no_author},
  }
  report.write_json(os.path.join(output_dir, "stats.json"), stats)
  return stats
