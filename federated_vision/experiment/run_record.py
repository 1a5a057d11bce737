"""One experiment per directory: `experiment.json`, the run's recorded identity.

Written when a run starts (under the directory's `RunLock`): every setting
that changes results, the partition's fingerprint and the package version. A
later run into the same directory must match it, except that `total_rounds`
may grow (the finished run is extended). Not recorded, because they change
no result: the output location (`root_output_dir`, `experiment_name`), run
control (`overwrite`, `on_divergence`, `resume_from_last_valid`), the TFF
workers (every `ExecutionConfig` field: --local_workers, --workers, ...; a
run may resume on other workers), checkpoint cadence
(`rounds_per_checkpoint`) and the reported target (`target_accuracy`).
Nor is a setting the run does not read (`federated_vision.experiment.fields_read`: e.g. --alpha of
a split-CSV run, --server_momentum of a FedAvg-only run).

--overwrite deletes a run's own files only (`clear`): those a run writes
at the top of its directory (`RUN_FILES`) and its method directories (a
directory holding only `METHOD_FILES`). A directory holding anything else
(a user's file, a data set, another run, a sweep's points) is refused, one
line naming the first such entry, before a byte is deleted.
"""

import dataclasses
import fnmatch
import hashlib
import os
import shutil
from typing import Dict, Optional

import numpy as np

from federated_vision.experiment import config as config_lib
from federated_vision.experiment import fields_read
from federated_vision import __version__
from federated_vision.errors import ConfigError, show
from federated_vision.training import run_files

RECORD_FILE = "experiment.json"
NOT_RECORDED = ("root_output_dir", "experiment_name", "overwrite",
                "on_divergence", "resume_from_last_valid",
                "rounds_per_checkpoint", "target_accuracy") + tuple(
                    f.name for f in dataclasses.fields(
                        config_lib.ExecutionConfig))
# Settings added after records were written, with the value every older
# run had: a record without one holds that value, so it still resumes.
ADDED_SETTINGS = {"mixed_precision": "float32", "full_train_loss": False}
# What a run writes at the top of its directory (shell patterns): its
# record, results, baseline, plots, partition and image reports, lock file
# and the temporary files of interrupted writes (`run_files.atomic_path`).
RUN_FILES = (RECORD_FILE, "hparams.json", "summary.json", "centralized.json",
             "accuracy.png", "accuracy_vs_batches.png", "loss.png",
             "partition*_class_counts.json", "partition*_class_counts.png",
             "image_report.json", ".lock", ".*.tmp[0-9]*")
# What a method's directory holds (`training_loop`'s module docstring).
METHOD_FILES = ("metrics.csv", "checkpoints", "tensorboard", "client_states",
                ".lock", ".*.tmp[0-9]*")
_KEEP_ON_CLEAR = (".lock",)  # Held by the run that clears the directory.


def recorded_settings(config: config_lib.ExperimentConfig) -> Dict[str, object]:
  """{flag name: value} of every setting that changes results (none the run
  does not read: `fields_read.recorded_flat`; e.g. an unset --methods is left
  out, as in records made before --methods existed, which therefore still
  resume)."""
  return {k: v for k, v in fields_read.recorded_flat(config).items()
          if k not in NOT_RECORDED}


def partition_fingerprint(fed_data) -> str:
  """sha256 of the client ids (in order) and the per-client class counts."""
  h = hashlib.sha256()
  h.update("\n".join(map(str, fed_data.client_data.client_ids)).encode())
  counts = np.ascontiguousarray(np.asarray(fed_data.class_counts, np.int64))
  h.update(str(counts.shape).encode())
  h.update(counts.tobytes())
  return h.hexdigest()


def _matches(name: str, patterns) -> bool:
  return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def not_run_files(directory: str) -> list:
  """The entries of `directory` no run writes (sorted): neither one of
  `RUN_FILES` nor a method directory (a real directory, not a link, whose
  entries all match `METHOD_FILES`; an empty one holds nothing to lose)."""
  foreign = []
  for name in sorted(os.listdir(directory)):
    path = os.path.join(directory, name)
    if os.path.isdir(path) and not os.path.islink(path):
      if not all(_matches(n, METHOD_FILES) for n in os.listdir(path)):
        foreign.append(name)
    elif not _matches(name, RUN_FILES):
      foreign.append(name)
  return foreign


def check_clearable(directory: str) -> None:
  """--overwrite: `directory` holds a run's files only (or does not exist).

  Raises:
    ConfigError: naming the first entry no run writes (nothing is deleted).
  """
  if not os.path.isdir(directory):
    return
  foreign = not_run_files(directory)
  if foreign:
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    raise ConfigError(
        f"--overwrite: {directory} holds {os.path.join(directory, foreign[0])}"
        f"{more}, which no run writes; --overwrite deletes a run's own files "
        "only and deleted nothing: choose another --experiment_name (or "
        "--root_output_dir)", "overwrite")


def clear(directory: str) -> list:
  """--overwrite: deletes the run's files in `directory` (all but its lock
  file) after `check_clearable`; returns the entries deleted.

  Raises:
    ConfigError: `directory` holds anything else (nothing is deleted).
  """
  check_clearable(directory)
  removed = []
  for name in sorted(os.listdir(directory)):
    if name in _KEEP_ON_CLEAR:
      continue
    path = os.path.join(directory, name)
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path)
    else:
      os.remove(path)
    removed.append(name)
  return removed


def _how_to_proceed(directory: str) -> str:
  return (f"rerun with --overwrite to delete {directory} and start over, or "
          "choose another --experiment_name")


def check(directory: str, config: config_lib.ExperimentConfig
          ) -> Optional[dict]:
  """The directory's record if `config` may run there (None if it is new).

  Raises:
    ConfigError: the directory holds another experiment (naming the first
      differing settings), fewer rounds are asked for than it holds, or it
      holds results without a record.
    RunFileError: its experiment.json is damaged (`read`).
  """
  path = os.path.join(directory, RECORD_FILE)
  if not os.path.exists(path):
    # The lock file and the image report may precede the record.
    if any(not n.startswith(".") and n != "image_report.json"
           for n in os.listdir(directory)):
      foreign = not_run_files(directory)
      if foreign:  # Not a run's directory: --overwrite would refuse it.
        raise ConfigError(
            f"{directory} is not a run's directory (it holds "
            f"{os.path.join(directory, foreign[0])}, which no run writes, "
            f"and no {RECORD_FILE}); choose another --experiment_name (or "
            "--root_output_dir)", "experiment_name")
      raise ConfigError(f"{directory} holds results without {RECORD_FILE} "
                        f"(another or an older run); {_how_to_proceed(directory)}",
                        "experiment_name")
    return None
  record = read(path, _how_to_proceed(directory))
  old = {**ADDED_SETTINGS, **record["settings"]}
  new = recorded_settings(config)
  # A field this run does not read cannot make it another experiment (a
  # record written before `fields_read` may hold one, e.g. --alpha of a CSV split).
  unread = fields_read.unused_fields(config)
  diffs = [f"--{k}={show(new.get(k, 'unset'))} (recorded "
           f"{show(old.get(k, 'unset'))})"
           for k in list(new) + [k for k in old if k not in new]
           if k != "total_rounds" and k not in unread
           and old.get(k, "unset") != new.get(k, "unset")]
  if diffs:
    raise ConfigError(f"{directory} holds another experiment: "
                      f"{', '.join(diffs[:3])}"
                      f"{f' and {len(diffs) - 3} more' if len(diffs) > 3 else ''}"
                      f"; {_how_to_proceed(directory)}",
                      diffs[0][2:].split("=")[0])
  if new["total_rounds"] < old["total_rounds"]:
    raise ConfigError(f"--total_rounds={new['total_rounds']}: {directory} "
                      f"already holds a run of {old['total_rounds']} rounds "
                      f"(it can only be extended); {_how_to_proceed(directory)}",
                      "total_rounds")
  return record


def read(path: str, remedy: str) -> dict:
  """experiment.json, checked (`run_files.read_json`: strict JSON, its
  checksum when it has one -- records written before checksums have none
  and still resume) and its fields: "settings" an object whose
  total_rounds is an integer >= 1, "partition_fingerprint" a string.

  Raises:
    RunFileError: one line naming the file, what is wrong and `remedy`.
  """
  record = run_files.read_json(path, remedy)
  settings = record.get("settings")
  run_files.require(isinstance(settings, dict), path, "no 'settings' object",
                    remedy)
  rounds = settings.get("total_rounds")
  run_files.require(isinstance(rounds, int) and not isinstance(rounds, bool)
                    and rounds >= 1, path, f"its total_rounds {rounds!r} is "
                    "not an integer >= 1", remedy)
  run_files.require(isinstance(record.get("partition_fingerprint"), str), path,
                    "no partition_fingerprint string", remedy)
  return record


def check_before_run(config: config_lib.ExperimentConfig) -> None:
  """`check` of an existing directory, before TensorFlow's import (ours: a
  rerun with other settings is refused in under a second, not after ~10 s
  of TensorFlow/TFF start-up); `runner.run` checks again under the lock.

  Raises:
    ConfigError: as `check`; with --overwrite, the directory holds files
      no run writes (`check_clearable`).
  """
  if config.run.overwrite:
    check_clearable(config.output_dir)
  elif os.path.isdir(config.output_dir):
    check(config.output_dir, config)


def check_partition(directory: str, fingerprint: str,
                    record: Optional[dict]) -> None:
  """The partition the data give now is the recorded run's.

  Raises:
    ConfigError: the same settings built another partition (e.g. the data
      files changed).
  """
  if record is not None and record.get("partition_fingerprint") != fingerprint:
    raise ConfigError(f"{directory}: the data now give another partition "
                      "than the recorded run's (partition fingerprint "
                      "differs; the data files changed?); "
                      f"{_how_to_proceed(directory)}", "experiment_name")


def start(directory: str, config: config_lib.ExperimentConfig,
          fingerprint: str, record: Optional[dict], log=print) -> None:
  """Checks the partition against `record` (`check_partition`), then
  (re)writes the record with the current total_rounds and removes
  summary.json, so a run in progress never looks finished (and the
  temporary files a killed run left). The runner calls it once every
  method's files were read and checked (`runner.open_methods`).

  Raises:
    ConfigError: the same settings built another partition.
  """
  # Local: evaluation.reporting imports TensorFlow; only when a run starts.
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  settings = recorded_settings(config)
  check_partition(directory, fingerprint, record)
  if record is not None:
    if record.get("package_version") != __version__:
      log(f"note: {directory} was started with federated_vision "
          f"{record.get('package_version')}, this is {__version__}")
    old_rounds = record["settings"]["total_rounds"]
    if settings["total_rounds"] > old_rounds:
      log(f"extending {directory} from {old_rounds} to "
          f"{settings['total_rounds']} rounds (every other setting is "
          "unchanged)")
  summary = os.path.join(directory, "summary.json")
  if os.path.exists(summary):
    os.remove(summary)
  run_files.remove_temporaries(directory)  # Left by a killed invocation.
  reporting.write_json(os.path.join(directory, RECORD_FILE), {
      "settings": settings, "partition_fingerprint": fingerprint,
      "package_version": (record or {}).get("package_version", __version__),
      "not_recorded": list(NOT_RECORDED)}, sealed=True)
