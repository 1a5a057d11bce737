"""How a real-world image split is opened and turned into model input.

`LoaderConfig` holds the crop size and augmentation of the iNaturalist and
Landmarks loaders (Hsu, Qi & Brown 2020, ECCV, Section 6.5: "the image is
randomly cropped then resized to a target input size of 299x299
(iNaturalist) or 224x224 (Landmarks) with scale and aspect ratio
augmentation") and how images are checked when a split is opened
(`image_check`).
"""

import dataclasses
import os
import tempfile
from typing import Optional, Tuple

from federated_vision.realworld import image_check


@dataclasses.dataclass(frozen=True)
class LoaderConfig:
  """How a split is opened and turned into model input.

  Attributes:
    image_size: S, side of the square crops (299 iNaturalist, 224 Landmarks).
    crop_scale: (min, max) area fraction of the random-resized crop.
    crop_ratio: (min, max) aspect ratio of the random-resized crop.
    flip: random horizontal flips in training.
    eval_crop_fraction: central fraction kept for evaluation before resizing.
    check_images: 'none' (read nothing), 'exists' (stat each file / tar
      member; the default) or 'decode' (decode each image with PIL; slow).
    on_bad_image: 'fail' raises `image_check.BadImagesError` after writing
      the report;
      'skip' drops the examples and logs a warning with per-split counts.
    report_path: where the bad-image report JSON goes; defaults to
      `<cache_dir>/<name>.image_report.json` (written whenever checking).
    cache_dir: where index files go; defaults to
      `$TMPDIR/federated_vision_index`.
  """
  image_size: int = 299
  crop_scale: Tuple[float, float] = (0.08, 1.0)
  crop_ratio: Tuple[float, float] = (3 / 4, 4 / 3)
  flip: bool = True
  eval_crop_fraction: float = 0.875
  check_images: str = "exists"
  on_bad_image: str = "fail"
  report_path: Optional[str] = None
  cache_dir: Optional[str] = None

  def __post_init__(self):
    if int(self.image_size) < 8:
      raise ValueError(f"image_size must be >= 8, got {self.image_size}")
    lo, hi = self.crop_scale
    if not 0 < lo <= hi <= 1:
      raise ValueError(f"crop_scale must satisfy 0 < min <= max <= 1, got "
                       f"{self.crop_scale}")
    lo, hi = self.crop_ratio
    if not 0 < lo <= hi:
      raise ValueError(f"crop_ratio must satisfy 0 < min <= max, got "
                       f"{self.crop_ratio}")
    if not 0 < self.eval_crop_fraction <= 1:
      raise ValueError(f"eval_crop_fraction must be in (0, 1], got "
                       f"{self.eval_crop_fraction}")
    if self.check_images not in image_check.CHECK_MODES:
      raise ValueError(f"check_images must be one of "
                       f"{image_check.CHECK_MODES}, got {self.check_images!r}")
    if self.on_bad_image not in image_check.BAD_IMAGE_POLICIES:
      raise ValueError(f"on_bad_image must be one of "
                       f"{image_check.BAD_IMAGE_POLICIES}, "
                       f"got {self.on_bad_image!r}")

  def resolved_cache_dir(self) -> str:
    return self.cache_dir or os.path.join(tempfile.gettempdir(),
                                          "federated_vision_index")
