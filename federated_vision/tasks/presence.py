"""Is a task's data on this machine? Checked before any run starts.

`missing_data(data)` is None when the data of `data.dataset` can be read, or
a `MissingData` naming the flags to give. Flags naming files are checked by
each task's `check` (`Task.validate`); what validation cannot see is a
tensorflow-datasets data set that is not prepared: `--data_source=tfds`
(the default) reads it from --data_dir, or from tfds' default data_dir
($TFDS_DATA_DIR, else ~/tensorflow_datasets, as
`tensorflow_datasets.core.constants.DATA_DIR`), and nothing is ever
downloaded. A sweep's dry run marks such points, and `sweep_main`,
`reproduce` and `train_main` refuse them before the first run starts.
"""

import glob
import os
from typing import NamedTuple, Optional, Tuple

from federated_vision.errors import ConfigError
from federated_vision.tasks import base


class MissingData(NamedTuple):
  """Data a run needs but cannot find.

  Attributes:
    flags: the flags to give, e.g. ('data_dir', 'archive_path').
    message: one line naming the flag and where it looked.
  """
  flags: Tuple[str, ...]
  message: str

  @property
  def label(self) -> str:
    """Short form for plan listings: 'missing data: give --a or --b'."""
    return "missing data: give " + " or ".join(f"--{f}" for f in self.flags)


def tfds_data_dir(data_dir: Optional[str] = None) -> str:
  """`data_dir`, else tfds' default: $TFDS_DATA_DIR or ~/tensorflow_datasets."""
  if data_dir:
    return data_dir
  return os.environ.get("TFDS_DATA_DIR",
                        os.path.join(os.path.expanduser("~"),
                                     "tensorflow_datasets"))


def tfds_prepared(name: str, data_dir: Optional[str] = None) -> bool:
  """Whether tfds data set `name` is prepared under `data_dir`: a
  <data_dir>/<name>/[<config>/]<version>/dataset_info.json exists (what
  `tfds.load(..., download=False)` reads; no TensorFlow import)."""
  root = os.path.join(tfds_data_dir(data_dir), name)
  return bool(glob.glob(os.path.join(root, "*", "dataset_info.json")) or
              glob.glob(os.path.join(root, "*", "*", "dataset_info.json")))


def missing_tfds(task, data) -> Optional[MissingData]:
  """`Task.presence` of the real array tasks (CIFAR, MNIST): the task's name
  is its tensorflow-datasets name; --data_source=archive files are checked
  by `Task.validate`."""
  if data.data_source != "tfds" or tfds_prepared(task.name, data.data_dir):
    return None
  where = (f"--data_dir={data.data_dir}" if data.data_dir else
           f"tfds' default data_dir {tfds_data_dir()}")
  return MissingData(("data_dir", "archive_path"), (
      f"--dataset={task.name}: tensorflow-datasets {task.name!r} not "
      f"prepared under {where} (nothing is downloaded): give --data_dir=DIR "
      f"(a prepared {task.name}) or --data_source=archive "
      "--archive_path=FILE"))


def missing_data(data) -> Optional[MissingData]:
  """None if the data of `data.dataset` (a `DataConfig`) are present."""
  task = base.get_task(data.dataset)
  return task.presence(task, data) if task.presence is not None else None


def require(data) -> None:
  """Raises `ConfigError` (the message of `missing_data`, naming the first
  flag to give) when the data of `data.dataset` are not on this machine."""
  missing = missing_data(data)
  if missing is not None:
    raise ConfigError(missing.message, missing.flags[0])
