"""Where GLD-v2 images lie under an image root: both layouts in use.

  GLD-v2's own shards (`images_NNN.tar`, extracted): `a/b/c/<id>.jpg`, the
    first three characters of the id as directories (Weyand et al. 2020's
    release layout, `image_data.GLD_PATH_TEMPLATE`).
  TFF's `tff.simulation.datasets.gldv2` cache: flat, `<cache_dir>/images/
    <id>.jpg` (its `_download_data` moves every kept image into one
    `images` directory).

`load_landmarks(image_root=...)` accepts either the flat directory itself or
TFF's cache directory holding it.
"""

import os

NESTED_TEMPLATE = "{image_id[0]}/{image_id[1]}/{image_id[2]}/{image_id}.jpg"
FLAT_TEMPLATE = "{image_id}.jpg"
TFF_CACHE_TEMPLATE = "images/{image_id}.jpg"


def _has_jpg(directory: str) -> bool:
  """Whether `directory` holds a `*.jpg` file directly (stops at the first)."""
  try:
    with os.scandir(directory) as entries:
      return any(e.name.lower().endswith(".jpg") and e.is_file()
                 for e in entries)
  except OSError:
    return False


def image_template(image_root: str) -> str:
  """The path template (under `image_root`) of the GLD-v2 layout found there.

  Args:
    image_root: a GLD-v2 image directory in either layout (module docstring).

  Returns:
    `TFF_CACHE_TEMPLATE` when `image_root/images` holds `.jpg` files,
    `FLAT_TEMPLATE` when `image_root` itself does, else `NESTED_TEMPLATE`
    (also for an empty directory: its missing images are then reported by
    the loader's image check under the nested paths).
  """
  if _has_jpg(image_root):
    return FLAT_TEMPLATE
  if _has_jpg(os.path.join(image_root, "images")):
    return TFF_CACHE_TEMPLATE
  return NESTED_TEMPLATE
