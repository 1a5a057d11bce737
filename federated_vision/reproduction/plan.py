"""Planning a preset: which runs, with which full flags, and what is done.

`plan` selects a preset's runs (`only` shell patterns), checks before anything
runs that every data-location flag a run requires is given and names an
existing file/directory, and returns each run's full flag dict (the preset's
flags + the data flags it takes + its output location) with its current
status from the results root (finished runs are skipped by the runner; one
run name is one configuration, so a centralized baseline shared by several
presets runs once).
"""

import dataclasses
import glob
import os
from typing import Dict, List, Mapping, Optional, Sequence

from federated_vision.experiment import selection
from federated_vision import tasks
from federated_vision.reproduction import results
from federated_vision.reproduction import spec
from federated_vision.tasks import presence

# Data flags that name inputs, and what they must be.
FILE_FLAGS = ("split_csv", "test_csv", "image_paths_csv", "pretrained_weights")
DIR_FLAGS = ("image_root", "data_dir", "celeba_cache_dir")
LIST_FILE_FLAGS = ("metadata_json", "gld_metadata_csv")
GLOB_FLAGS = ("tar_shards",)
EXISTS_FLAGS = ("archive_path",)  # A file or a directory.


class PlanError(ValueError):
  """A preset cannot run as asked; the message names the flag or file."""


@dataclasses.dataclass(frozen=True)
class PlannedRun:
  """A run ready for the runner: full flags and its current status."""
  run: spec.Run
  flags: Mapping[str, object]
  status: str
  detail: str


def select(preset: spec.Preset, patterns: Sequence[str] = ()):
  """The runs whose name matches any fnmatch pattern (all if none).

  Raises:
    PlanError: a pattern matches no run.
  """
  try:
    return selection.select(preset.runs, patterns)
  except selection.NoMatch as e:
    raise PlanError(f"--only={e.pattern}: matches no run of preset "
                    f"{preset.name}") from None


def _as_list(value) -> List[str]:
  if isinstance(value, str):
    return [v for v in value.split(",") if v]
  return [str(v) for v in value or ()]


def check_data_flag(name: str, value) -> None:
  """Raises PlanError when a path flag names nothing on disk."""
  if name in FILE_FLAGS and not os.path.isfile(value):
    raise PlanError(f"--{name}={value}: no such file")
  if name in DIR_FLAGS and not os.path.isdir(value):
    raise PlanError(f"--{name}={value}: no such directory")
  if name in EXISTS_FLAGS and not os.path.exists(value):
    raise PlanError(f"--{name}={value}: does not exist")
  for path in _as_list(value) if name in LIST_FILE_FLAGS else ():
    if not os.path.isfile(path):
      raise PlanError(f"--{name}: {path}: no such file")
  for pattern in _as_list(value) if name in GLOB_FLAGS else ():
    if not glob.glob(pattern):
      raise PlanError(f"--{name}: {pattern} matches no file")


def _given(value) -> bool:
  return value not in (None, "", [], ())


def missing_data(run: spec.Run, data: Mapping[str, object]
                 ) -> Optional[presence.MissingData]:
  """What `run` misses with the data flags `data`: a required data flag not
  given, or data not on this machine (`tasks.presence`); None if nothing."""
  for group in run.required_data_flags:
    if not any(_given(data.get(f)) for f in group):
      return presence.MissingData(group, (
          f"run {run.name} needs --{' or --'.join(group)} (data is never "
          "downloaded)"))
  flags = dict(run.flag_dict(), **{n: data[n] for n in run.data_flags
                                   if _given(data.get(n))})
  fields = set(tasks.data_fields())  # Task-declared ones too.
  config = tasks.DataConfig.of(**{
      k: tuple(v) if isinstance(v, list) else v for k, v in flags.items()
      if k in fields})
  found = presence.missing_data(config)
  if found is None:
    return None
  return found._replace(message=f"run {run.name}: {found.message}")


def run_flags(run: spec.Run, data: Mapping[str, object],
              results_root: str) -> Dict[str, object]:
  """The run's full flags: preset flags, the data flags it takes, output.

  Raises:
    PlanError: a required data flag is missing, or the data are not on this
      machine (names the run and flag).
  """
  missing = missing_data(run, data)
  if missing is not None:
    raise PlanError(missing.message)
  flags = run.flag_dict()
  for name in run.data_flags:
    if data.get(name) not in (None, "", [], ()):
      flags[name] = data[name]
  flags.update(root_output_dir=results_root, experiment_name=run.name)
  return flags


def plan(preset: spec.Preset, results_root: str,
         data: Mapping[str, object], only: Sequence[str] = (),
         ) -> List[PlannedRun]:
  """Every selected run with full flags and status, checked before running.

  Args:
    preset: the preset.
    results_root: where run directories go (<root>/<run name>).
    data: data-location flags given on the command line (name -> value).
    only: fnmatch patterns of run names (all runs if empty).

  Raises:
    PlanError: unknown pattern, a missing required data flag, a data flag
      naming nothing on disk, or data not on this machine (e.g. CIFAR not
      prepared for tensorflow-datasets) -- always before any run starts.
  """
  runs = select(preset, only)
  for name in sorted(data):
    if data[name] not in (None, "", [], ()) and any(
        name in r.data_flags for r in runs):
      check_data_flag(name, data[name])
  out = []
  for run in runs:
    flags = run_flags(run, data, results_root)
    state = results.read_run(results_root, run)
    out.append(PlannedRun(run, flags, state.status, state.detail))
  return out
