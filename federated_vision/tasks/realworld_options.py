"""The config sections of the real-world image tasks (Hsu, Qi & Brown 2020).

`tasks.realworld` declares them (`config_fields`): every real-world task and
its synthetic twin reads `LoaderOptions`; inaturalist and landmarks read
`SplitOptions` and their own `InatOptions` / `LandmarksOptions`. The flags
(--test_csv, --image_root, ...) are generated from these declarations
(`experiments.flags_components`). --split_csv and --image_size stay in
`tasks.DataConfig` (other tasks read them too).
"""

import dataclasses
from typing import Optional, Tuple

from federated_vision import config_fields

option = config_fields.option


@dataclasses.dataclass(frozen=True)
class LoaderOptions:
  """How the image loader opens a split (`realworld.image_data.LoaderConfig`;
  ours: engineering settings, no paper setting)."""
  check_images: str = option(
      "exists", "check images when opening the split: none | exists (stat "
      "calls) | decode (slow).")
  on_bad_image: str = option(
      "fail", "missing or corrupt images (listed in --image_report_path) "
      "either fail the run or are skipped (dropped, counted): fail | skip.")
  image_report_path: Optional[str] = option(
      None, "Bad-image report JSON (default: <root_output_dir>/"
      "<experiment_name>/image_report.json).")
  index_cache_dir: Optional[str] = option(
      None, "Where the split's example index is cached (default: "
      "<root_output_dir>/.image_index).")


@dataclasses.dataclass(frozen=True)
class SplitOptions:
  """The test set and images of a published split (inaturalist, landmarks)."""
  test_csv: Optional[str] = option(
      None, "the image_id,class[,label] test set (e.g. the builders' "
      "inaturalist_test.csv / test.csv); required.")
  image_root: Optional[str] = option(
      None, "inaturalist: the directory holding train_val_images/ "
      "(required); landmarks: the GLD-v2 image directory (a/b/c/<id>.jpg, "
      "or TFF's flat images/<id>.jpg cache), or use --tar_shards.")
  accept_unchecked_class_numbering: bool = option(
      False, "when the class numbering of --split_csv and --test_csv cannot "
      "be checked (files from different writers, or neither with a label "
      "column, and no --metadata_json / --gld_metadata_csv), accept it "
      "without the warning; a mismatch found is still an error.")


@dataclasses.dataclass(frozen=True)
class InatOptions:
  """iNaturalist's own split settings."""
  image_paths_csv: Optional[str] = option(
      None, "an image_id,path CSV (the builder's image_paths.csv); paths are "
      "relative to --image_root.")
  metadata_json: Tuple[str, ...] = option(
      (), "train2017.json, val2017.json to resolve image paths (instead of "
      "--image_paths_csv), e.g. for TFF's published CSV.")
  inat_split: Optional[str] = option(
      None, "the client column of TFF's iNaturalist_train.csv layout (e.g. "
      "user_120k, geo_1k); not needed for a builder's per-split CSV.")


@dataclasses.dataclass(frozen=True)
class LandmarksOptions:
  """GLD-v2's own split settings."""
  tar_shards: Tuple[str, ...] = option(
      (), "GLD-v2 images_NNN.tar shards (comma-separated paths or globs) "
      "instead of --image_root.")
  gld_metadata_csv: Tuple[str, ...] = option(
      (), "GLD-v2 train.csv (id,url,landmark_id) and/or train_clean.csv "
      "(landmark_id,images), to check that --split_csv and --test_csv number "
      "classes alike (as --metadata_json does for inaturalist).")
