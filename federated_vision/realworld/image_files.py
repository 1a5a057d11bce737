"""Image ids to files (paths, tar shard members), checked before training.

The real-world splits (Hsu, Qi & Brown 2020, ECCV) name images by id; here
they are resolved to paths under an image root, through an `image_id,path`
index, or to members of GLD-v2 tar shards, then checked (`image_check`):
bad images are reported and fail the load or are dropped, never silently.
"""

import os
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from federated_vision.data import split_io
from federated_vision.realworld import image_check
from federated_vision.realworld import image_config
from federated_vision.realworld import image_index


PathSpec = Union[None, str, Mapping[str, str]]


def resolve_paths(image_ids: Sequence[str], image_root: Optional[str],
                  image_paths: PathSpec = None,
                  path_template: str = "{image_id}.jpg",
                  tar_index: Optional[Mapping[str, Tuple]] = None):
  """(paths, ranges, missing_mask) for image ids.

  Priority: `tar_index` (GLD shards), then the `image_paths` mapping (a dict
  or an `image_id,path` CSV; relative paths are under `image_root`), then
  `path_template` under `image_root`. Ids absent from a tar index or path
  mapping are reported as missing (path '').
  """
  n = len(image_ids)
  ranges = np.tile(np.array(image_check.WHOLE_FILE, np.int64), (n, 1))
  missing = np.zeros(n, bool)
  paths = []
  if isinstance(image_paths, str):
    image_paths = split_io.read_image_paths(image_paths)
  root = os.path.abspath(image_root) if image_root else ""
  for i, image_id in enumerate(image_ids):
    if tar_index is not None:
      hit = tar_index.get(image_id)
      if hit is None:
        paths.append(os.path.join(root, "<not in tar shards>", image_id))
        missing[i] = True
      else:
        paths.append(hit[0])
        ranges[i] = hit[1], hit[2], hit[3]
      continue
    if image_paths is not None:
      rel = image_paths.get(image_id)
      if rel is None:
        paths.append(os.path.join(root, "<not in image index>", image_id))
        missing[i] = True
        continue
    else:
      try:
        rel = path_template.format(image_id=image_id)
      except (IndexError, KeyError, ValueError):
        raise ValueError(f"image_id {image_id!r} does not fit the image path "
                         f"template {path_template!r}") from None
    paths.append(rel if os.path.isabs(rel) else os.path.join(root, rel))
  return paths, ranges, missing


def check_index(index: image_index.ExampleIndex, missing: np.ndarray,
                mode: str):
  """(missing_mask, corrupt_mask) after the requested check."""
  return image_check.check_files(index.paths, index.ranges, missing, mode)


def apply_bad_image_policy(splits: Mapping[str, Tuple[image_index.ExampleIndex,
                                                      np.ndarray, np.ndarray]],
                            config: image_config.LoaderConfig, report_path: str,
                            name: str) -> Dict[str, image_index.ExampleIndex]:
  """Writes the report; fails or drops bad examples as configured.

  Args:
    splits: split name -> (index, missing_mask, corrupt_mask).
    config: `check_images` and `on_bad_image`.
    report_path: JSON report (always written when a check ran).
    name: data set name for messages.

  Returns:
    split name -> index without the bad examples.
  """
  keep = image_check.report_and_apply(
      name, {split: image_check.SplitCheck(index.image_ids, index.paths,
                                           missing, corrupt, index.client_ids)
             for split, (index, missing, corrupt) in splits.items()},
      config.check_images, config.on_bad_image, report_path)
  return {split: (index if keep[split].all() else index.subset(keep[split]))
          for split, (index, _, _) in splits.items()}
