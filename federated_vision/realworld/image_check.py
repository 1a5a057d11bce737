"""Missing / corrupt image checks shared by builders, loaders and conversion.

No TensorFlow here (the builders stay light). Bad images are always listed in
a JSON report; the policy then either fails (`BadImagesError`, naming the
report) or drops them with a warning giving per-split counts. Never silent.
"""

import dataclasses
import io
import json
import logging
import os
import tarfile
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from federated_vision.training import run_files

CHECK_MODES = ("none", "exists", "decode")
BAD_IMAGE_POLICIES = ("fail", "skip")
WHOLE_FILE = (0, -1, -1)

log = logging.getLogger(__name__)


class BadImagesError(RuntimeError):
  """Missing or corrupt images with `on_bad_image='fail'`; names the report."""


@dataclasses.dataclass(frozen=True)
class ImageCheckConfig:
  """Where the images are and how builders check them.

  Attributes:
    image_root: image directory (iNaturalist `file_name`s or GLD `a/b/c/<id>.jpg`
      are relative to it).
    tar_shards: GLD-v2 `images_NNN.tar` shards instead of `image_root`.
    check_images: 'exists' (stat / tar membership) or 'decode' (PIL decode).
    on_bad_image: 'fail' or 'skip' (drop before any filtering or balancing).
    report_path: JSON report listing bad images.
  """
  image_root: Optional[str] = None
  tar_shards: Tuple[str, ...] = ()
  check_images: str = "exists"
  on_bad_image: str = "fail"
  report_path: str = "image_report.json"

  def __post_init__(self):
    if self.image_root is None and not self.tar_shards:
      raise ValueError("ImageCheckConfig needs image_root or tar_shards")
    if self.image_root is not None and not os.path.isdir(self.image_root):
      raise FileNotFoundError(f"image_root {self.image_root}: no such directory")
    if self.check_images not in CHECK_MODES[1:]:
      raise ValueError(f"check_images must be one of {CHECK_MODES[1:]}, got "
                       f"{self.check_images!r}")
    if self.on_bad_image not in BAD_IMAGE_POLICIES:
      raise ValueError(f"on_bad_image must be one of {BAD_IMAGE_POLICIES}, "
                       f"got {self.on_bad_image!r}")


def index_tar_shards(shards: Sequence[str]) -> Dict[str, Tuple[str, int, int, int]]:
  """image id (member basename without extension) -> (shard, offset, size, shard_size).

  Reads tar headers only (GLD-v2 `images_NNN.tar`), not image data.
  """
  out = {}
  for shard in shards:
    if not os.path.isfile(shard):
      raise FileNotFoundError(f"{shard}: no such tar shard")
    shard_abs = os.path.abspath(shard)
    shard_size = os.path.getsize(shard)
    try:
      with tarfile.open(shard, "r:") as tar:
        for m in tar:
          if not m.isfile():
            continue
          stem = os.path.splitext(os.path.basename(m.name))[0]
          out[stem] = (shard_abs, m.offset_data, m.size, shard_size)
    except tarfile.TarError as e:
      raise ValueError(f"{shard}: not a readable uncompressed tar ({e})") from None
  return out


def decodes(path: str, byte_range=WHOLE_FILE) -> bool:
  """Whether the file (or byte range) is a JPEG/PNG/GIF/BMP that PIL decodes."""
  # Local: PIL is a heavy optional dependency, loaded only to decode images.
  from PIL import Image  # pylint: disable=g-import-not-at-top
  try:
    with open(path, "rb") as f:
      if byte_range[1] >= 0:
        f.seek(int(byte_range[0]))
        data = f.read(int(byte_range[1]))
      else:
        data = f.read()
    with Image.open(io.BytesIO(data)) as im:
      if im.format not in ("JPEG", "PNG", "GIF", "BMP"):
        return False
      im.load()
    return True
  except Exception:  # pylint: disable=broad-except
    return False


def check_files(paths: Sequence[str], ranges: np.ndarray, missing: np.ndarray,
                mode: str) -> Tuple[np.ndarray, np.ndarray]:
  """(missing_mask, corrupt_mask) after the requested check.

  `missing` marks entries already known to be absent (e.g. not in any tar
  shard). Byte ranges (length >= 0) exist by construction.
  """
  if mode not in CHECK_MODES:
    raise ValueError(f"check_images must be one of {CHECK_MODES}, got {mode!r}")
  missing = np.asarray(missing, bool).copy()
  corrupt = np.zeros(len(paths), bool)
  if mode == "none":
    return missing, corrupt
  ranges = np.asarray(ranges).reshape([-1, 3])
  for i, p in enumerate(paths):
    if missing[i]:
      continue
    r = ranges[i]
    if r[1] < 0 and not os.path.isfile(p):
      missing[i] = True
    elif mode == "decode" and not decodes(p, r):
      corrupt[i] = True
  return missing, corrupt


class SplitCheck:
  """Check result of one split, for `report_and_apply`."""

  def __init__(self, image_ids, paths, missing, corrupt, client_ids=None):
    self.image_ids = list(image_ids)
    self.paths = list(paths)
    self.missing = np.asarray(missing, bool)
    self.corrupt = np.asarray(corrupt, bool)
    self.client_ids = None if client_ids is None else list(client_ids)


def report_and_apply(name: str, splits: Mapping[str, SplitCheck],
                     check_images: str, on_bad_image: str,
                     report_path: str) -> Dict[str, np.ndarray]:
  """Writes the report, then fails or returns per-split keep masks.

  Args:
    name: data set name (messages).
    splits: split name -> `SplitCheck`.
    check_images: the check that ran (recorded).
    on_bad_image: 'fail' raises `BadImagesError` if anything is bad; 'skip'
      logs, per split, how many examples are dropped.
    report_path: JSON report (written whenever a check ran or something is bad).

  Returns:
    split name -> boolean mask of examples to keep.
  """
  if on_bad_image not in BAD_IMAGE_POLICIES:
    raise ValueError(f"on_bad_image must be one of {BAD_IMAGE_POLICIES}, got "
                     f"{on_bad_image!r}")
  report = {"dataset": name, "check_images": check_images,
            "on_bad_image": on_bad_image, "splits": {}}
  total_bad = 0
  for split, s in splits.items():
    bad = s.missing | s.corrupt
    total_bad += int(bad.sum())
    entry = {
        "num_examples": len(s.paths),
        "num_missing": int(s.missing.sum()),
        "num_corrupt": int(s.corrupt.sum()),
        "num_dropped": int(bad.sum()) if on_bad_image == "skip" else 0,
        "missing": [{"image_id": s.image_ids[i], "path": s.paths[i]}
                    for i in np.flatnonzero(s.missing)],
        "corrupt": [{"image_id": s.image_ids[i], "path": s.paths[i]}
                    for i in np.flatnonzero(s.corrupt)],
    }
    if s.client_ids is not None and on_bad_image == "skip":
      before = set(s.client_ids)
      after = {c for c, b in zip(s.client_ids, bad) if not b}
      entry["clients_emptied"] = sorted(before - after)
    report["splits"][split] = entry
  if check_images != "none" or total_bad:
    run_files.write_text(report_path,  # Atomic: whole or absent.
                         json.dumps(report, indent=1, sort_keys=True))
  if total_bad and on_bad_image == "fail":
    counts = ", ".join(
        f"{s}: {e['num_missing']} missing, {e['num_corrupt']} corrupt"
        for s, e in report["splits"].items())
    raise BadImagesError(f"{name}: bad images ({counts}); listed in "
                         f"{report_path}; use on_bad_image='skip' to drop them")
  keep = {}
  for split, s in splits.items():
    bad = s.missing | s.corrupt
    if bad.any():
      log.warning("%s/%s: dropped %d of %d examples (%d missing, %d corrupt "
                  "images); listed in %s", name, split, int(bad.sum()),
                  len(s.paths), int(s.missing.sum()), int(s.corrupt.sum()),
                  report_path)
    keep[split] = ~bad
  return keep


def check_relative_images(name: str, config: ImageCheckConfig,
                          splits: Mapping[str, Tuple[Sequence[str], Sequence[str]]]
                          ) -> Dict[str, np.ndarray]:
  """Builder-side check. splits: name -> (image_ids, relative paths).

  With tar shards, images are found by id (member basename); otherwise at
  `image_root/relative path`. Returns keep masks (see `report_and_apply`).
  """
  tar_index = index_tar_shards(config.tar_shards) if config.tar_shards else None
  checks = {}
  for split, (ids, rels) in splits.items():
    n = len(ids)
    ranges = np.tile(np.array(WHOLE_FILE, np.int64), (n, 1))
    missing = np.zeros(n, bool)
    paths = []
    for i, (image_id, rel) in enumerate(zip(ids, rels)):
      if tar_index is not None:
        hit = tar_index.get(image_id)
        if hit is None:
          missing[i] = True
          paths.append(rel)
        else:
          paths.append(hit[0])
          ranges[i] = hit[1], hit[2], hit[3]
      else:
        paths.append(os.path.join(config.image_root, rel))
    missing, corrupt = check_files(paths, ranges, missing, config.check_images)
    checks[split] = SplitCheck(ids, paths, missing, corrupt)
  return report_and_apply(name, checks, config.check_images,
                          config.on_bad_image, config.report_path)
