"""Image -> source class id from the real data sets' own metadata.

Used to check that a train split and a test file from different writers
number classes alike (`federated_vision.data.class_numbering`):

  * iNaturalist 2017: `train2017.json` / `val2017.json` (COCO-like; an
    image's `file_name` stem is the published `image_id`, its annotation's
    `category_id` the source id);
  * GLD-v2: `train.csv` (`id,url,landmark_id`) or `train_clean.csv`
    (`landmark_id,images`, space-separated ids); the Landmarks-User-160k
    train and test images both come from GLD-v2-clean (Hsu, Qi & Brown 2020,
    Section 4.2: "the test split is created from the leftover images in
    GLD-v2-clean").
"""

from typing import Dict, Optional, Sequence, Tuple

from federated_vision.data import class_numbering
from federated_vision.data import split_io
from federated_vision.realworld import inaturalist_metadata, landmarks
from federated_vision.realworld.inaturalist_metadata import get_field

INAT_WHAT = "iNaturalist 2017 category"
GLD_WHAT = "GLD-v2 landmark"
GLD_TRAIN_COLUMNS = ("id", "landmark_id")
GLD_CLEAN_COLUMNS = ("landmark_id", "images")


def inaturalist_categories(json_paths: Sequence[str]
                           ) -> class_numbering.SourceIds:
  """Image stem -> category id from iNaturalist 2017 JSON files.

  A file without annotations (e.g. `test2017.json`) contributes no image;
  its images stay unchecked.

  Raises:
    inaturalist_metadata.InputError: naming the file (malformed JSON or entry, an
      image with two categories, two images with one stem).
  """
  pairs = []
  seen: Dict[str, Tuple[str, str]] = {}  # stem -> (file, image id).
  for path in json_paths:
    meta = inaturalist_metadata.load_json(path)
    if not isinstance(meta, dict) or not isinstance(meta.get("images"), list):
      raise inaturalist_metadata.InputError(f"{path}: missing or non-list 'images'")
    annotations = meta.get("annotations") or []
    if not isinstance(annotations, list):
      raise inaturalist_metadata.InputError(f"{path}: non-list 'annotations'")
    stem_of = {}
    for i, im in enumerate(meta["images"]):
      name = get_field(im, "file_name", path, "images", i)
      if not isinstance(name, str) or not name:
        raise inaturalist_metadata.InputError(
            f"{path}: images[{i}].file_name is not "
            "a path")
      stem_of[str(get_field(im, "id", path, "images", i))] = (
          inaturalist_metadata.file_stem(name))
    category_of: Dict[str, int] = {}
    for i, a in enumerate(annotations):
      image = str(get_field(a, "image_id", path, "annotations", i))
      category = get_field(a, "category_id", path, "annotations", i)
      if image not in stem_of:
        raise inaturalist_metadata.InputError(
            f"{path}: annotations[{i}] refers to "
            f"unknown image {image}")
      if isinstance(category, bool) or not isinstance(category, int):
        raise inaturalist_metadata.InputError(
            f"{path}: annotations[{i}].category_id "
            f"= {category!r} is not an integer")
      if category_of.setdefault(image, category) != category:
        raise inaturalist_metadata.InputError(f"{path}: image {image} has two "
                                              "categories")
    for image, category in category_of.items():
      stem = stem_of[image]
      first = seen.setdefault(stem, (path, image))
      if first != (path, image):
        raise inaturalist_metadata.InputError(
            f"{path}: image {image} has file stem {stem}, like image "
            f"{first[1]} of {first[0]}; the stem is the published image_id, "
            "so it must be unique")
      pairs.append((stem, category))
  return class_numbering.source_ids(pairs, INAT_WHAT, json_paths)


def gld_landmarks(csv_paths: Sequence[str]) -> class_numbering.SourceIds:
  """Image id -> landmark id from GLD-v2 `train.csv` / `train_clean.csv`.

  Raises:
    split_io.SplitFormatError: naming the file (and line): a file of
      neither form, a non-integer landmark id, an image given two landmarks.
  """
  of_image: Dict[str, int] = {}
  where: Dict[str, str] = {}
  for path in csv_paths:
    header = split_io.read_header(path)
    if all(c in header for c in GLD_TRAIN_COLUMNS):
      rows = []
      for line, row in split_io.read_rows(path, GLD_TRAIN_COLUMNS):
        try:
          rows.append((row["id"], int(row["landmark_id"]), line))
        except ValueError:
          raise split_io.SplitFormatError(
              f"{path}:{line}: landmark_id {row['landmark_id']!r} is not an "
              "integer") from None
    elif all(c in header for c in GLD_CLEAN_COLUMNS):
      ids, landmark_ids, lines = landmarks.read_clean(path)
      rows = zip(ids, landmark_ids.tolist(), lines.tolist())
    else:
      raise split_io.SplitFormatError(
          f"{path}:1: header {','.join(header)} is neither GLD-v2 train.csv "
          "(id,url,landmark_id) nor train_clean.csv (landmark_id,images)")
    for image, landmark, line in rows:
      previous = of_image.setdefault(image, landmark)
      if previous != landmark:
        raise split_io.SplitFormatError(
            f"{path}:{line}: image {image} has landmark_id {landmark}, but "
            f"{where[image]} gives it landmark_id {previous}")
      where.setdefault(image, f"{path}:{line}")
  return class_numbering.SourceIds(of_image, GLD_WHAT, tuple(csv_paths))


def for_dataset(family: str, files: Sequence[str]
                ) -> Optional[class_numbering.SourceIds]:
  """`inaturalist_categories` or `gld_landmarks` of `files` (None if none).

  Args:
    family: 'inaturalist' or 'landmarks'.
    files: the metadata files (--metadata_json / --gld_metadata_csv).
  """
  if family not in ("inaturalist", "landmarks"):
    raise ValueError(f"no source metadata for {family!r}")
  if not files:
    return None
  if family == "inaturalist":
    return inaturalist_categories(list(files))
  return gld_landmarks(list(files))
