"""Loading the real-world splits (Hsu, Qi & Brown 2020, ECCV) as ClientData.

`load_image_split` opens a split CSV in any published layout (`split_io`) over
JPEG files or GLD-v2 tar shards; `load_inaturalist` and `load_landmarks` are
its iNaturalist-User-120k / -Geo-k and Landmarks-User-160k forms. The result
is a `client_data.FederatedDataset` whose `ClientData` never holds images or
even all paths in its graph (`image_index`): elements are
{'path': string, 'range': int64[3], 'y': int64}, decoded by
`train_map_fn(element, seed)` / `eval_map_fn(element)` (`image_transforms`)
into {'x': float32 [S, S, 3] in [0, 1], 'y': int64}.

Opening a split reads no image. Optionally (`check_images`) it checks that the
images exist ('exists', cheap stat calls) or decode ('decode'); bad images are
listed in a JSON report and either fail the load (`on_bad_image='fail'`) or are
dropped with a warning giving the per-split count (`'skip'`). Never silent
(`image_files`).

This module is the loaders' facade: `LoaderConfig` (`image_config`) and
`BadImagesError`, `CHECK_MODES`, `BAD_IMAGE_POLICIES` (`image_check`) are
re-exported so a caller of `load_*` needs one import.
"""

import os
from typing import Optional, Sequence

import numpy as np

from federated_vision.data import client_data as cd
from federated_vision.data import split_io
from federated_vision.data import split_rows
from federated_vision.realworld import gld_layout
from federated_vision.realworld import image_check
from federated_vision.realworld import image_config
from federated_vision.realworld import image_files
from federated_vision.realworld import image_index
from federated_vision.realworld import image_transforms
from federated_vision.realworld import inaturalist_metadata

# The loaders' facade (see the module docstring).
LoaderConfig = image_config.LoaderConfig
CHECK_MODES = image_check.CHECK_MODES
BAD_IMAGE_POLICIES = image_check.BAD_IMAGE_POLICIES
BadImagesError = image_check.BadImagesError


def _class_names(rows: split_rows.SplitRows, num_classes: int):
  """A class's name: its source id (`label`) where the file has one."""
  names = [str(c) for c in range(num_classes)]
  if rows.labels is not None:
    for c, label in zip(rows.classes.tolist(), rows.labels.tolist()):
      names[c] = str(label)
  return names


def load_image_split(name: str, split_csv_path: str,
                     image_root: Optional[str] = None, *,
                     split: Optional[str] = None,
                     test_csv: Optional[str] = None,
                     image_paths: image_files.PathSpec = None,
                     path_template: str = "{image_id}.jpg",
                     tar_shards: Optional[Sequence[str]] = None,
                     config: LoaderConfig = LoaderConfig()) -> cd.FederatedDataset:
  """A `FederatedDataset` from a published split CSV and images on disk.

  Used by `load_inaturalist` and `load_landmarks` (Hsu, Qi & Brown 2020);
  works on the builders' outputs and on the published CSVs unchanged.

  Args:
    name: data set name (reports, cache).
    split_csv_path: a split CSV in any published layout (see `split_io`):
      y is its `class` column (contiguous from 0); `label` is kept as the
      class name.
    image_root: directory the image paths are relative to.
    split: client column for TFF's multi-split layout (e.g. 'geo_1k').
    test_csv: optional `image_id,class[,label]` test set; its classes must
      occur in the split.
    image_paths: image id -> path (dict or `image_id,path` CSV).
    path_template: used when `image_paths` is None, e.g. '{image_id}.jpg' or
      GLD's '{image_id[0]}/{image_id[1]}/{image_id[2]}/{image_id}.jpg'.
    tar_shards: GLD-v2 tar shards holding the images (members found by id).
    config: `LoaderConfig`.

  Returns:
    `client_data.FederatedDataset` with raw elements
    {'path': string, 'range': int64[3], 'y': int64}.

  Raises:
    FileNotFoundError / split_io.SplitFormatError (file:line) for bad
    inputs, BadImagesError when images are missing or corrupt and
    `config.on_bad_image == 'fail'`.
  """
  if not isinstance(config, LoaderConfig):
    raise TypeError(f"config must be a LoaderConfig, got {type(config)}")
  if image_root is None and tar_shards is None:
    raise ValueError("give image_root or tar_shards")
  if image_root is not None and tar_shards is None and not os.path.isdir(image_root):
    raise FileNotFoundError(f"image_root {image_root}: no such directory")
  # y is the published `class`: contiguous 0..K-1, test classes within.
  rows, test, num_classes = split_rows.read_split_files(split_csv_path, split,
                                                        test_csv)
  class_names = _class_names(rows, num_classes)
  tar_index = image_check.index_tar_shards(tar_shards) if tar_shards else None
  if isinstance(image_paths, str):
    image_paths = split_io.read_image_paths(image_paths)

  def make_index(clients, ids, labels):
    paths, ranges, missing = image_files.resolve_paths(
        ids, image_root, image_paths, path_template, tar_index)
    return (image_index.ExampleIndex(clients, paths, ranges, labels, list(ids)),
            missing)

  cache_dir = config.resolved_cache_dir()
  report_path = config.report_path or os.path.join(
      cache_dir, f"{name}.image_report.json")
  parts = {}
  train_index, missing = make_index(rows.client_ids, rows.image_ids,
                                    rows.classes)
  parts["train"] = (train_index, *image_files.check_index(train_index, missing,
                                                          config.check_images))
  if test is not None:
    test_index, missing = make_index(None, test.image_ids, test.classes)
    parts["test"] = (test_index, *image_files.check_index(test_index, missing,
                                                          config.check_images))
  clean = image_files.apply_bad_image_policy(parts, config, report_path, name)
  client_data = image_index.IndexedImageClientData(clean["train"], cache_dir)
  test_index = clean.get("test") or image_index.ExampleIndex(
      None, [], np.zeros([0, 3], np.int64), np.zeros([0], np.int64), [])
  train_map_fn, eval_map_fn = image_transforms.make_map_fns(config)
  size = int(config.image_size)
  return cd.FederatedDataset(
      name=name,
      client_data=client_data,
      test_data=image_index.index_dataset(test_index),
      train_map_fn=train_map_fn,
      eval_map_fn=eval_map_fn,
      num_classes=num_classes,
      client_sizes=client_data.client_sizes,
      class_counts=client_data.class_counts(num_classes),
      input_shape=(size, size, 3),
      info={"split_csv": os.path.abspath(split_csv_path), "split": split,
            "test_csv": test_csv and os.path.abspath(test_csv),
            "image_root": image_root and os.path.abspath(image_root),
            "tar_shards": list(tar_shards or []),
            "num_test_examples": len(test_index),
            "index_path": client_data.index_path,
            "image_report": report_path if config.check_images != "none" else None,
            "class_names": class_names,
            "reference": "Hsu, Qi & Brown 2020, ECCV"})


GLD_PATH_TEMPLATE = gld_layout.NESTED_TEMPLATE


def load_inaturalist(split_csv_path: str, image_root: str, *,
                     split: Optional[str] = None,
                     test_csv: Optional[str] = None,
                     image_paths: image_files.PathSpec = None,
                     metadata_json: Sequence[str] = (),
                     config: LoaderConfig = LoaderConfig(image_size=299)
                     ) -> cd.FederatedDataset:
  """iNaturalist-User-120k / -Geo-k of Hsu, Qi & Brown 2020 as ClientData.

  Args:
    split_csv_path: a published or builder's `user_id,image_id,class,label`
      file or TFF's `iNaturalist_train.csv` (then `split` names the column,
      e.g. 'geo_1k'). y = `class` (0..1202), never the source `label`.
    image_root: directory containing `train_val_images/`.
    split: see `load_image_split`.
    test_csv: `image_id,class[,label]` test CSV (the published test file, or
      the builder's `inaturalist_test.csv`).
    image_paths: an `image_id,path` CSV (the builder's `image_paths.csv`) or
      dict; if None, built from `metadata_json` (train2017.json,
      val2017.json), else images are `<image_root>/<image_id>.jpg`.
    metadata_json: iNaturalist 2017 COCO-style JSON files.
    config: `LoaderConfig` (299 x 299 crops by default).

  Returns:
    `client_data.FederatedDataset`.
  """
  if image_paths is None and metadata_json:
    image_paths = inaturalist_metadata.image_paths_from_metadata(
        metadata_json)
  name = "inaturalist_" + (split or os.path.splitext(
      os.path.basename(split_csv_path))[0].replace("inaturalist_", ""))
  return load_image_split(name, split_csv_path, image_root, split=split,
                          test_csv=test_csv, image_paths=image_paths,
                          config=config)


def load_landmarks(train_csv: str, *, image_root: Optional[str] = None,
                   tar_shards: Optional[Sequence[str]] = None,
                   test_csv: Optional[str] = None,
                   config: LoaderConfig = LoaderConfig(image_size=224)
                   ) -> cd.FederatedDataset:
  """Landmarks-User-160k of Hsu, Qi & Brown 2020 as ClientData.

  Args:
    train_csv: `user_id,image_id,class` (TFF's `federated_train.csv` or the
      builder's output).
    image_root: GLD-v2 images, `a/b/c/<id>.jpg` or TFF's flat cache (see
      `gld_layout`), or tar_shards: the `images_NNN.tar` shards.
    test_csv: `image_id,class`.
    config: `LoaderConfig` (224 x 224 crops by default).

  Returns:
    `client_data.FederatedDataset`.
  """
  return load_image_split("landmarks_user_160k", train_csv, image_root,
                          test_csv=test_csv, path_template=GLD_PATH_TEMPLATE
                          if image_root is None else gld_layout.image_template(image_root),
                          tar_shards=tar_shards, config=config)
