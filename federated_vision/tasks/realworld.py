"""iNaturalist and Landmarks splits (Hsu, Qi & Brown 2020) + synthetic twins.

The split CSV is the partition: clients and their examples come from
--split_csv (the real tasks) or from a tiny JPEG split the twins write under
<cache_dir>/.synthetic_data/<task> and open with the real loaders. Crop side
S: 299 (iNaturalist), 224 (Landmarks), 32 for the twins (MobileNetV2's
minimum, so smoke runs are fast).
"""

import glob
import logging
import os
from typing import List

from federated_vision.data import class_numbering
from federated_vision.errors import ConfigError, bad, one_line
from federated_vision.realworld import source_ids
from federated_vision.tasks import base
from federated_vision.tasks import realworld_options as opts

CHECK_IMAGES = ("none", "exists", "decode")
BAD_IMAGE_POLICIES = ("fail", "skip")
SYNTHETIC_CLASSES = 3
SYNTHETIC_IMAGE_SIZE = 32
_LOADER = frozenset({"check_images", "on_bad_image", "image_report_path",
                     "index_cache_dir", "image_size"})
_INAT_ONLY = ("image_paths_csv", "metadata_json", "inat_split")
_LANDMARKS_ONLY = ("tar_shards", "gld_metadata_csv")
_SPLIT = ("split_csv", "test_csv", "image_root", "gld_metadata_csv",
          "accept_unchecked_class_numbering", "tar_shards") + _INAT_ONLY
_METADATA_FLAG = {"inaturalist": "metadata_json",
                  "landmarks": "gld_metadata_csv"}

log = logging.getLogger(__name__)


def expand_tar_shards(patterns) -> List[str]:
  """--tar_shards with globs expanded (ConfigError if one matches nothing)."""
  out = []
  for pattern in patterns:
    hits = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else (
        [pattern] if os.path.isfile(pattern) else [])
    if not hits:
      raise bad("tar_shards", list(patterns), f"{pattern} "
                f"{'matches no file' if glob.has_magic(pattern) else 'no such file'}")
    out.extend(hits)
  return out


def _existing(name: str, path: str, kind: str = "file") -> None:
  ok = os.path.isdir(path) if kind == "directory" else os.path.isfile(path)
  if not ok:
    raise bad(name, path, f"no such {kind}")


def _check(task, data, given):
  for name, allowed in (("check_images", CHECK_IMAGES),
                        ("on_bad_image", BAD_IMAGE_POLICIES)):
    if getattr(data, name) not in allowed:
      raise bad(name, getattr(data, name), f"must be one of {', '.join(allowed)}")
  for name in ("partition", "alpha", "imbalance_sigma"):
    if name in given or getattr(data, name) != getattr(base.DataConfig(), name):
      raise ConfigError(f"--{name}: not used by --dataset={task.name} (the "
                        "split CSV is the partition)", name)
  if task.name.startswith("synthetic_"):
    for name in _SPLIT:
      if getattr(data, name):
        raise ConfigError(f"--{name}: not used by --dataset={task.name} (it "
                          "writes its own split and images)", name)
    return
  for name in ("num_clients", "examples_per_client"):
    if getattr(data, name) is not None:
      raise ConfigError(f"--{name}: not used by --dataset={task.name} "
                        "(clients and their examples come from --split_csv)",
                        name)
  for name, what in (("split_csv", "a published or built user_id,image_id,"
                      "class split CSV"),
                     ("test_csv", "the server-held image_id,class test set")):
    if getattr(data, name) is None:
      raise ConfigError(f"--dataset={task.name} needs --{name} ({what})", name)
    _existing(name, getattr(data, name))
  if task.family == "inaturalist":
    for name in _LANDMARKS_ONLY:
      if getattr(data, name):
        raise ConfigError(f"--{name}: only for --dataset=landmarks (GLD-v2)",
                          name)
    if data.image_root is None:
      raise ConfigError("--dataset=inaturalist needs --image_root (the "
                        "directory holding train_val_images/)", "image_root")
    if data.image_paths_csv and data.metadata_json:
      raise ConfigError("--image_paths_csv and --metadata_json: give only one",
                        "image_paths_csv")
    if data.image_paths_csv:
      _existing("image_paths_csv", data.image_paths_csv)
    for path in data.metadata_json:
      _existing("metadata_json", path)
  else:
    for name in _INAT_ONLY:
      if getattr(data, name):
        raise ConfigError(f"--{name}: only for --dataset=inaturalist", name)
    if bool(data.image_root) == bool(data.tar_shards):
      raise ConfigError("--dataset=landmarks needs exactly one of --image_root "
                        "(a/b/c/<id>.jpg or flat) and --tar_shards", "image_root")
    if data.tar_shards:
      expand_tar_shards(data.tar_shards)
    for path in data.gld_metadata_csv:
      _existing("gld_metadata_csv", path)
  if data.image_root is not None:
    _existing("image_root", data.image_root, "directory")


def check_class_numbering(task, data) -> str:
  """--split_csv and --test_csv number classes alike (or are accepted).

  The rule is `federated_vision.data.class_numbering`'s; the metadata is
  --metadata_json (inaturalist) or --gld_metadata_csv (landmarks). Logs the
  one warning line of an unchecked pair unless
  --accept_unchecked_class_numbering.

  Returns:
    How the numbering was established (`class_numbering.Result.how`).

  Raises:
    ConfigError: a mismatch (`--split_csv=...: <train> and <test> number
      classes differently: ...`), or unreadable metadata (naming its flag).
  """
  flag = _METADATA_FLAG[task.family]
  files = list(getattr(data, flag))
  try:
    source = source_ids.for_dataset(task.family, files)
  except (FileNotFoundError, ValueError) as e:
    raise bad(flag, files, one_line(e)) from None
  try:
    result = class_numbering.check_files(
        data.split_csv, data.test_csv, data.inat_split, source,
        data.accept_unchecked_class_numbering, metadata_flag=f"--{flag}")
  except (FileNotFoundError, ValueError) as e:
    raise bad("split_csv", data.split_csv, one_line(e)) from None
  if result.warning:
    log.warning("%s", result.warning)
  return result.how


def _data(task, data, resolved, context):
  """An iNaturalist / Landmarks split (or its synthetic twin)."""
  from federated_vision.realworld import synthetic  # pylint: disable=g-import-not-at-top
  from federated_vision.realworld import image_data  # pylint: disable=g-import-not-at-top
  report = data.image_report_path or os.path.join(context.output_dir,
                                                  "image_report.json")
  cfg = dict(image_size=resolved["image_size"], check_images=data.check_images,
             on_bad_image=data.on_bad_image, report_path=report,
             cache_dir=data.index_cache_dir or os.path.join(context.cache_dir,
                                                            ".image_index"))
  numbering = None
  if not task.name.startswith("synthetic_"):  # The twins write both files.
    numbering = check_class_numbering(task, data)
  try:
    if task.name.startswith("synthetic_"):
      root = os.path.join(context.cache_dir, ".synthetic_data", task.name)
      make = (synthetic.synthetic_inaturalist if task.family == "inaturalist"
              else synthetic.synthetic_landmarks)
      fed = make(root, num_clients=resolved["num_clients"],
                 examples_per_client=resolved["examples_per_client"],
                 num_classes=SYNTHETIC_CLASSES, seed=context.seed, **cfg)
    elif task.family == "inaturalist":
      fed = image_data.load_inaturalist(
          data.split_csv, data.image_root, split=data.inat_split,
          test_csv=data.test_csv, image_paths=data.image_paths_csv,
          metadata_json=list(data.metadata_json),
          config=image_data.LoaderConfig(**cfg))
    else:
      fed = image_data.load_landmarks(
          data.split_csv, image_root=data.image_root,
          tar_shards=expand_tar_shards(data.tar_shards) or None,
          test_csv=data.test_csv, config=image_data.LoaderConfig(**cfg))
  except image_data.BadImagesError as e:
    raise ConfigError(
        f"--check_images={data.check_images} --on_bad_image="
        f"{data.on_bad_image}: bad images, listed in {report} "
        f"({one_line(e).split(' (')[-1].split(')')[0]}); fix them or use "
        "--on_bad_image=skip", "on_bad_image") from None
  except (FileNotFoundError, ValueError) as e:
    if data.split_csv:
      raise bad("split_csv", data.split_csv, one_line(e)) from None
    raise bad("dataset", task.name, one_line(e)) from None
  info = {k: v for k, v in fed.info.items() if k != "class_names"}
  info.update(partition="csv", image_size=resolved["image_size"],
              num_classes=fed.num_classes)
  if data.inat_split:
    info["inat_split"] = data.inat_split
  if numbering:
    info["class_numbering"] = numbering
  names = fed.info.get("class_names")
  if names and all(n is not None for n in names):
    info["label_names"] = [str(n) for n in names]
  if len(fed.client_data.client_ids) == 0:
    raise bad("split_csv", data.split_csv, "no clients left")
  return fed._replace(info=info)


# The reads beyond the declared sections (`realworld_options`), which add
# the fields of _SPLIT and _LOADER each task reads.
_OWN = {"inaturalist": opts.InatOptions, "landmarks": opts.LandmarksOptions}
for _family, _size in (("inaturalist", 299), ("landmarks", 224)):
  _defaults = (("bottleneck_dim", 64),) if _family == "landmarks" else ()
  base.register_task(base.Task(
      _family, _family, "mobilenet_v2_gn", _data,
      reads=frozenset({"split_csv", "image_size"}),
      options=(opts.LoaderOptions, opts.SplitOptions, _OWN[_family]),
      image_size=_size, partitions=("csv",), model_defaults=_defaults,
      check=_check,
      description=f"{_family} split CSV (Hsu, Qi & Brown 2020), S = {_size}"))
  base.register_task(base.Task(
      f"synthetic_{_family}", _family, "mobilenet_v2_gn", _data,
      reads=frozenset({"image_size", "num_clients", "examples_per_client"}),
      options=opts.LoaderOptions, num_clients=6, examples_per_client=5,
      image_size=SYNTHETIC_IMAGE_SIZE, partitions=("csv",),
      model_defaults=_defaults, check=_check,
      description=f"tiny JPEG twin of {_family} read by the real loaders"))
