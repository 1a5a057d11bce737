"""iNaturalist-User-120k and iNaturalist-Geo-k (Hsu, Qi & Brown 2020, ECCV).

From the iNaturalist 2017 metadata (`train2017.json`, COCO-like, and
`train2017_locations.json`, a list of {id, lat, lon, date, user_id}):

1. Class balancing: among the images that have what the splits need (a user
   id and coordinates; `InatConfig.balance_from`), keep the categories with
   >= 100 such images and draw exactly 100 of each (seeded). Every split then
   holds exactly 100 examples per class (1,203 x 100 = 120,300 on the real
   data, as the published user and geo splits).
2. User split: one client per `user_id`.
3. Geo splits: adaptive S2 partitioning (`s2_cells.adaptive_partition`) of the
   balanced images, one per N_max in {30k, 10k, 3k, 1k, 300, 100}; cells with
   < N_min examples are dropped (none by default).

With `balance_from='all'` (the draw ignores user ids and coordinates) images
without a user id / coordinates are dropped from those splits afterwards and
counted, so classes may fall below 100 there.

Outputs (sorted, byte-identical for a seed), with the published column
meanings (`class` = the paper's contiguous class 0..K-1, `label` = the
iNaturalist 2017 category id): `inaturalist_user_120k.csv` and
`inaturalist_geo_<k>.csv` (`user_id,image_id,class,label`; the geo files'
`user_id` is the S2 token), TFF's `iNaturalist_train.csv` layout
(`...,image_id,class`), `inaturalist_test.csv` (`image_id,class,label`,
val2017 images of the kept classes), `image_paths.csv` (image_id -> path under
the image root), `stats.json` and PNG figures. `image_id` is the file stem, as
in the published CSVs; two images with the same stem are an input error.
"""

import dataclasses
import os
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from federated_vision.realworld import image_check as image_check_lib
from federated_vision.data import split_io
from federated_vision.realworld import inaturalist_metadata
from federated_vision.realworld import image_report as report
from federated_vision.realworld import s2_cells

USER_SPLIT = "user_120k"
MISSING_USER_POLICIES = ("drop", "fail")
BALANCE_FROM = ("complete", "all")


@dataclasses.dataclass(frozen=True)
class InatConfig:
  """Builder parameters (defaults: the paper's).

  Attributes:
    min_examples_per_class: keep categories with at least this many images.
    examples_per_class: draw exactly this many of each kept category.
    geo_max_examples: the N_max values of the geo splits.
    geo_min_examples: N_min: geo cells with fewer examples are dropped.
    balance_from: 'complete' (default): draw the balanced set from images
      with a user id and coordinates, so every split has exactly
      `examples_per_class` per class; 'all': draw from every image and drop
      those without a user id / coordinates from the user / geo splits
      afterwards (the first version's behaviour; classes may fall short).
    missing_user: with balance_from='all', 'drop' (report) or 'fail' for
      balanced images without a user id.
    seed: seed of the class-balancing draw.
    plots: write PNG figures.
  """
  min_examples_per_class: int = 100
  examples_per_class: int = 100
  geo_max_examples: Tuple[int, ...] = split_io.GEO_MAX_EXAMPLES
  geo_min_examples: int = 1
  balance_from: str = "complete"
  missing_user: str = "drop"
  seed: int = 0
  plots: bool = True

  def __post_init__(self):
    if self.examples_per_class < 1:
      raise ValueError(f"examples_per_class must be >= 1, got "
                       f"{self.examples_per_class}")
    if self.min_examples_per_class < self.examples_per_class:
      raise ValueError(
          f"min_examples_per_class ({self.min_examples_per_class}) must be >= "
          f"examples_per_class ({self.examples_per_class})")
    if not self.geo_max_examples or any(int(n) < 1 for n in self.geo_max_examples):
      raise ValueError(f"geo_max_examples must be positive integers, got "
                       f"{self.geo_max_examples}")
    if len(set(self.geo_max_examples)) != len(self.geo_max_examples):
      raise ValueError(f"geo_max_examples has duplicates: {self.geo_max_examples}")
    if not 1 <= self.geo_min_examples <= min(self.geo_max_examples):
      raise ValueError(f"geo_min_examples must be in [1, min(geo_max_examples)]"
                       f", got {self.geo_min_examples}")
    if self.balance_from not in BALANCE_FROM:
      raise ValueError(f"balance_from must be one of {BALANCE_FROM}, got "
                       f"{self.balance_from!r}")
    if self.missing_user not in MISSING_USER_POLICIES:
      raise ValueError(f"missing_user must be one of {MISSING_USER_POLICIES}, "
                       f"got {self.missing_user!r}")


def balance_classes(category_ids: np.ndarray, min_count: int, per_class: int,
                    seed: int, eligible: Optional[np.ndarray] = None
                    ) -> np.ndarray:
  """Hsu et al. 2020 balancing: classes with >= min_count, `per_class` each.

  Args:
    category_ids: category of each image (images in a fixed order).
    min_count: keep categories with at least this many eligible images.
    per_class: images drawn (without replacement) from each kept category.
    seed: numpy seed; same seed and input, same selection.
    eligible: optional boolean mask; only these images are counted and drawn.

  Returns:
    Sorted indices of the selected images.
  """
  category_ids = np.asarray(category_ids, np.int64)
  if min_count < per_class:
    raise ValueError(f"min_count ({min_count}) must be >= per_class ({per_class})")
  if eligible is not None:
    eligible = np.asarray(eligible, bool)
    if eligible.shape != category_ids.shape:
      raise ValueError(f"eligible has shape {eligible.shape}, expected "
                       f"{category_ids.shape}")
    pool = np.flatnonzero(eligible)
    return pool[balance_classes(category_ids[pool], min_count, per_class,
                                seed)]
  keys = np.random.default_rng(seed).random(category_ids.size)
  order = np.lexsort((keys, category_ids))
  cats = category_ids[order]
  uniq, first, counts = np.unique(cats, return_index=True, return_counts=True)
  rank = np.arange(cats.size) - np.repeat(first, counts)
  kept = np.repeat(counts >= min_count, counts)
  return np.sort(order[kept & (rank < per_class)])


class Split:
  """Rows of one built split: client, image stem, class, label (sorted)."""

  def __init__(self, clients: Sequence[str], idx: np.ndarray):
    self.clients = list(clients)
    self.idx = np.asarray(idx, np.int64)


def _sorted_split(clients: Sequence[str], idx: np.ndarray, stems: Sequence[str]
                  ) -> Split:
  order = sorted(range(len(idx)), key=lambda k: (
      split_io.class_sort_key(clients[k]), stems[idx[k]]))
  return Split([clients[k] for k in order], np.asarray(idx)[order])


def build_inaturalist(train_json: str, train_locations: str, output_dir: str,
                      val_json: Optional[str] = None,
                      config: InatConfig = InatConfig(),
                      image_check: Optional[image_check_lib.ImageCheckConfig] = None
                      ) -> dict:
  """Builds iNaturalist-User-120k and -Geo-k (Hsu, Qi & Brown 2020).

  Args:
    train_json: `train2017.json`.
    train_locations: `train2017_locations.json`.
    output_dir: where CSVs, `stats.json` and PNGs go (created).
    val_json: optional `val2017.json`: its images of the kept classes form
      `inaturalist_test.csv`.
    config: `InatConfig`.
    image_check: if given, the images are checked before balancing; bad ones
      are listed in its report and either fail the build
      (`image_check.BadImagesError`) or are dropped before balancing.

  Returns:
    The statistics written to `stats.json`.

  Raises:
    inaturalist_metadata.InputError: malformed or missing input (message
      names the file), e.g. two images with the same file stem.
    ValueError: missing users with `missing_user='fail'`, or no class has
      `min_examples_per_class` images.
  """
  meta = inaturalist_metadata.read_metadata(train_json, train_locations)
  val = (inaturalist_metadata.read_metadata(val_json)
         if val_json is not None else None)
  if val is not None:  # image_paths.csv and the test set share the id space.
    seen = {}
    inaturalist_metadata.check_unique_stems(
        train_json, meta.image_ids.tolist(), meta.stems, seen)
    inaturalist_metadata.check_unique_stems(
        val_json, val.image_ids.tolist(), val.stems, seen)
  bad_images = None
  if image_check is not None:
    splits = {"train": (meta.stems, meta.file_names)}
    if val is not None:
      splits["val"] = (val.stems, val.file_names)
    keep = image_check_lib.check_relative_images("inaturalist", image_check,
                                                 splits)
    bad_images = {k: int((~v).sum()) for k, v in keep.items()}
    meta = meta.subset(keep["train"])
    if val is not None:
      val = val.subset(keep["val"])
  has_user = np.array([u is not None for u in meta.user_ids], bool)
  has_xy = np.isfinite(meta.lat)
  complete = config.balance_from == "complete"
  sel = balance_classes(meta.category_ids, config.min_examples_per_class,
                        config.examples_per_class, config.seed,
                        eligible=(has_user & has_xy) if complete else None)
  if sel.size == 0:
    raise ValueError(
        f"no category of {train_json} has {config.min_examples_per_class} "
        f"images{' with a user id and coordinates' if complete else ''}")
  kept = np.unique(meta.category_ids[sel])
  class_of = {int(c): i for i, c in enumerate(kept.tolist())}
  classes = np.full(meta.image_ids.size, -1, np.int64)
  classes[sel] = [class_of[int(c)] for c in meta.category_ids[sel]]
  num_classes = len(kept)
  # The reference class distribution p of every split: the balanced set's.
  reference = np.bincount(classes[sel], minlength=num_classes) / sel.size
  stems = meta.stems

  # User split.
  no_user = sel[~has_user[sel]]
  if no_user.size and config.missing_user == "fail":
    raise ValueError(f"{train_locations}: {no_user.size} balanced images have "
                     f"no user_id (e.g. image {int(meta.image_ids[no_user[0]])}); "
                     "use missing_user='drop'")
  with_user = sel[has_user[sel]]
  splits: Dict[str, Split] = {USER_SPLIT: _sorted_split(
      [meta.user_ids[i] for i in with_user], with_user, stems)}
  extras = {USER_SPLIT: {"num_balanced_without_user": int(no_user.size),
                         "missing_user_policy": config.missing_user}}

  # Geo splits.
  located = sel[has_xy[sel]]
  leaf = s2_cells.leaf_cell_ids(meta.lat[located], meta.lon[located])
  for n_max in sorted(config.geo_max_examples, reverse=True):
    name = split_io.geo_split_name(n_max)
    part = s2_cells.adaptive_partition(leaf, n_max, config.geo_min_examples)
    tokens = part.tokens
    assigned = part.assignment >= 0
    splits[name] = _sorted_split(
        [tokens[a] for a in part.assignment[assigned]], located[assigned], stems)
    extras[name] = {
        "max_examples": int(n_max), "min_examples": config.geo_min_examples,
        "num_balanced_without_coordinates": int(sel.size - located.size),
        "num_dropped_cells": int(part.dropped_cells.size),
        "num_examples_in_dropped_cells": part.num_dropped,
        "num_oversized_leaf_cells": int(part.oversized.size),
        "max_cell_level": max((s2_cells.cell_level(c) for c in
                               part.cells.tolist()), default=0)}

  # Per-split CSVs: class = contiguous class, label = iNaturalist category id.
  os.makedirs(output_dir, exist_ok=True)
  for name, split in splits.items():
    split_io.write_csv(
        os.path.join(output_dir, f"inaturalist_{name}.csv"),
        split_io.INAT_COLUMNS,
        ((c, stems[i], int(classes[i]), int(meta.category_ids[i]))
         for c, i in zip(split.clients, split.idx)))

  # TFF layout: one row per balanced image, NA where not in a split; its
  # `class` is the contiguous class, as tff.simulation.datasets reads it.
  column_of = {}
  for name, split in splits.items():
    column_of[name] = dict(zip(split.idx.tolist(), split.clients))
  sel_sorted = sorted(sel.tolist(), key=lambda i: stems[i])
  split_io.write_csv(
      os.path.join(output_dir, "iNaturalist_train.csv"),
      split_io.TFF_INAT_COLUMNS,
      ([column_of.get(s, {}).get(i, split_io.NA)
        for s in split_io.TFF_INAT_SPLITS] +
       [stems[i], int(classes[i])] for i in sel_sorted))

  # Test set and image paths.
  path_rows = {stems[i]: meta.file_names[i] for i in sel.tolist()}
  test_stats = None
  if val is not None:
    rows = sorted((val.stems[k], class_of[int(c)], int(c))
                  for k, c in enumerate(val.category_ids.tolist())
                  if int(c) in class_of)
    split_io.write_csv(os.path.join(output_dir, "inaturalist_test.csv"),
                       split_io.INAT_TEST_COLUMNS, rows)
    for k, c in enumerate(val.category_ids.tolist()):
      if int(c) in class_of:
        path_rows[val.stems[k]] = val.file_names[k]
    test_stats = {"num_examples": len(rows),
                  "num_classes_present": len({r[1] for r in rows})}
  split_io.write_csv(os.path.join(output_dir, "image_paths.csv"),
                     split_io.IMAGE_PATHS_COLUMNS, sorted(path_rows.items()))

  stats = {
      "reference": "Hsu, Qi & Brown 2020, ECCV (iNaturalist-User-120k, -Geo-k)",
      "inputs": {"train_json": os.path.basename(train_json),
                 "train_locations": os.path.basename(train_locations),
                 "val_json": val_json and os.path.basename(val_json)},
      "config": dataclasses.asdict(config),
      "num_train_images": int(meta.image_ids.size),
      "num_train_categories": len(meta.categories),
      "num_train_images_without_location_entry": meta.num_without_location_entry,
      "num_train_images_without_user": int((~has_user).sum()),
      "num_train_images_without_coordinates": int((~has_xy).sum()),
      "num_images_dropped_bad": bad_images,
      "image_report": image_check and image_check.report_path,
      "num_balanced_examples": int(sel.size),
      "num_classes": num_classes,
      "splits": {}, "test": test_stats}
  for name, split in splits.items():
    stats["splits"][name] = report.report_split(
        f"inaturalist_{name}", split.clients, classes[split.idx], num_classes,
        output_dir, extras[name], plots=config.plots, reference=reference)
  report.write_json(os.path.join(output_dir, "stats.json"), stats)
  return stats
