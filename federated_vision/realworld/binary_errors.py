"""Shared error handling of the `datasets/` binaries: one line, no traceback.

Defines no flags (the binaries do); the helpers take the parsed flag values.
"""

import glob
import json
import os
import sys
from typing import Callable, List, Sequence

from federated_vision.realworld import image_check

# Input errors that are the user's, not bugs: reported as one line, exit 2.
# (split_io.SplitFormatError and inaturalist_metadata.InputError are ValueErrors.)
INPUT_ERRORS = (FileNotFoundError, IsADirectoryError, PermissionError,
                ValueError, json.JSONDecodeError, UnicodeDecodeError)


def fail(message: str, code: int = 2) -> None:
  """Prints `error: <message>` (one line) to stderr and exits."""
  sys.stderr.write("error: " + " ".join(str(message).split()) + "\n")
  sys.stderr.flush()
  sys.exit(code)


def guarded(main: Callable[[Sequence[str]], None]) -> Callable[[Sequence[str]], None]:
  """Wraps an absl main so that input errors exit 2 with one line."""
  def wrapped(argv):
    try:
      main(argv)
    except image_check.BadImagesError as e:  # The report names the images.
      fail(str(e), code=3)
    except INPUT_ERRORS as e:
      fail(str(e))
  return wrapped


def int_list(flag_name: str, values: Sequence[str]) -> List[int]:
  """Parses a list flag of positive integers ('30000,10000' or '30k,10k')."""
  out = []
  for v in values:
    v = v.strip().lower()
    try:
      n = int(v[:-1]) * 1000 if v.endswith("k") else int(v)
    except ValueError:
      fail(f"--{flag_name}: {v!r} is not an integer")
    if n < 1:
      fail(f"--{flag_name}: {n} must be >= 1")
    out.append(n)
  if not out:
    fail(f"--{flag_name}: give at least one value")
  return out


def require_flags(flag_values, names: Sequence[str]) -> None:
  """Fails with one line listing the required flags that were not given."""
  missing = [f"--{n}" for n in names if getattr(flag_values, n) in (None, "")]
  if missing:
    fail(f"missing required flag(s): {', '.join(missing)}")


def image_check_config(flag_values, output_dir: str):
  """ImageCheckConfig from the flags, or None when no images were given."""
  shards = []
  for pattern in getattr(flag_values, "tar_shards", None) or []:
    hits = sorted(glob.glob(pattern))
    if not hits:
      fail(f"--tar_shards: no file matches {pattern}")
    shards.extend(hits)
  if not flag_values.image_root and not shards:
    return None
  return image_check.ImageCheckConfig(
      image_root=flag_values.image_root or None, tar_shards=tuple(shards),
      check_images=flag_values.check_images,
      on_bad_image=flag_values.on_bad_image,
      report_path=flag_values.report_path or os.path.join(
          output_dir, "image_report.json"))
