"""Reading a preset's run directories: status, recorded config, curves.

Layout (as federated_vision/experiment/runner.py writes it), one directory per named run under
a results root:
  <root>/<run>/hparams.json          every flag value (+ resolved settings)
  <root>/<run>/summary.json          per method results; written at the end
  <root>/<run>/<method>/metrics.csv  one row per round

Statuses, from the run's point of view:
  finished  summary.json exists (a method may still say "diverged")
  running   no summary.json yet, but hparams.json or a metrics.csv exists
  missing   no run directory or nothing in it
  mismatch  hparams.json records a flag value other than the preset's, or
            trained other methods (its `method_settings`: e.g. a heavy-ball
            `fedavgm` where the preset trains `fedavgm@nesterov`, chosen by
            --algorithm, which the preset's --methods run never compares);
            the directory holds another experiment: never reported as this
            one
  invalid   a file exists but cannot be read
A method of a finished run is finished, diverged (summary's "status", or a
non-finite final accuracy), running (its "status" says so) or missing (not in
summary.json).
"""

import dataclasses
import math
import os
from typing import Dict, List, Mapping, Optional, Tuple

from federated_vision.reproduction import spec
from federated_vision.training import run_files

FINISHED = "finished"
DIVERGED = "diverged"
RUNNING = "running"
MISSING = "missing"
MISMATCH = "mismatch"
INVALID = "invalid"
UNAVAILABLE = "unavailable"  # A finished run lacks what a number needs.
METHOD_STATUSES = (FINISHED, DIVERGED, RUNNING)


@dataclasses.dataclass(frozen=True)
class RunDir:
  """A run directory as read from disk.

  Attributes:
    name: the run name.
    path: <root>/<name>.
    status: FINISHED, RUNNING, MISSING, MISMATCH or INVALID.
    detail: one line saying why (names the file or flag), '' when finished.
    summary: parsed summary.json (None unless it exists and parses).
    hparams: parsed hparams.json (None unless it exists and parses).
  """
  name: str
  path: str
  status: str
  detail: str = ""
  summary: Optional[Mapping[str, object]] = None
  hparams: Optional[Mapping[str, object]] = None


@dataclasses.dataclass(frozen=True)
class MethodState:
  """A method's status and its summary.json entry ({} when none)."""
  status: str
  detail: str
  entry: Mapping[str, object]


REMEDY = "rerun the run's command to write it again"


def read_record(path: str) -> dict:
  """A run's hparams.json / summary.json, checked (`run_files.read_json`:
  strict JSON, an object, its checksum when it has one).

  Raises:
    RunFileError: naming the file, what is wrong and what to do.
  """
  return run_files.read_json(path, REMEDY)


def recorded_flags(hparams: Mapping[str, object]) -> Mapping[str, object]:
  """The flag values a run recorded (hparams.json keeps them at top level)."""
  return hparams


def _normal(value):
  """Comparable form: lists/tuples -> lists, ints -> floats, inf spellings."""
  if isinstance(value, (list, tuple)):
    return [_normal(v) for v in value]
  if isinstance(value, bool) or value is None:
    return value
  if isinstance(value, (int, float)):
    return float(value)
  if isinstance(value, str) and value.strip().lower() in (
      "inf", "infinity", "+inf", "+infinity"):
    return math.inf
  return value


def flag_mismatch(expected: Mapping[str, object],
                  recorded: Mapping[str, object]) -> Optional[str]:
  """The first flag whose recorded value differs, as one line, or None.

  A flag the run did not read (hparams.json's `not_read`, e.g. a preset's
  --server_momentum of a FedAvg-only run) had no effect: not compared."""
  not_read = recorded.get("not_read")
  for name in sorted(expected):
    if name not in recorded and isinstance(not_read, dict) and name in not_read:
      continue
    if name not in recorded:
      return f"hparams.json does not record --{name}"
    want, got = _normal(expected[name]), _normal(recorded[name])
    if want != got:
      return (f"hparams.json has --{name}={recorded[name]!r}, the preset "
              f"--{name}={expected[name]!r}")
  return None


def methods_mismatch(methods, hparams: Mapping[str, object]
                     ) -> Optional[str]:
  """One line when the methods a run trained (hparams.json's
  `method_settings`, by name; the file sorts its keys) are not `methods`,
  else None."""
  trained = hparams.get("method_settings")
  if isinstance(trained, dict) and sorted(trained) != sorted(methods):
    return (f"hparams.json trained the methods {', '.join(trained)}, the "
            f"preset {', '.join(methods)}")
  return None


def read_run(root: str, run: spec.Run) -> RunDir:
  """Reads <root>/<run.name> and decides its status (never raises on I/O)."""
  path = os.path.join(root, run.name)
  if not os.path.isdir(path):
    return RunDir(run.name, path, MISSING, f"no directory {path}")
  hparams = None
  hp_path = os.path.join(path, "hparams.json")
  if os.path.isfile(hp_path):
    try:
      hparams = read_record(hp_path)
    except run_files.RunFileError as e:
      return RunDir(run.name, path, INVALID, str(e))
    mismatch = (flag_mismatch(run.flags, recorded_flags(hparams))
                or methods_mismatch(run.methods(), hparams))
    if mismatch:
      return RunDir(run.name, path, MISMATCH, f"{hp_path}: {mismatch}",
                    hparams=hparams)
  sm_path = os.path.join(path, "summary.json")
  if not os.path.isfile(sm_path):
    started = hparams is not None or any(
        os.path.isfile(os.path.join(path, m, "metrics.csv"))
        for m in run.methods())
    if started:
      return RunDir(run.name, path, RUNNING, f"{path}: no summary.json yet",
                    hparams=hparams)
    return RunDir(run.name, path, MISSING, f"{path}: nothing written")
  if hparams is None:
    return RunDir(run.name, path, INVALID, f"{hp_path}: missing (cannot "
                  "check the run's configuration)")
  try:
    summary = read_record(sm_path)
  except run_files.RunFileError as e:
    return RunDir(run.name, path, INVALID, str(e), hparams=hparams)
  if not isinstance(summary.get("methods"), dict):
    return RunDir(run.name, path, INVALID, f"{sm_path}: no 'methods' object",
                  hparams=hparams)
  return RunDir(run.name, path, FINISHED, "", summary, hparams)


def read_runs(root: str, runs) -> Dict[str, RunDir]:
  return {r.name: read_run(root, r) for r in runs}


def _finite(x) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool) and \
      math.isfinite(x)


def recorded_status(entry: Mapping[str, object]) -> str:
  """A summary.json method's status in this module's terms: the runner
  writes "completed" / "diverged" / "not_run" (no status: finished)."""
  status = entry.get("status", FINISHED)
  return {"completed": FINISHED, "not_run": MISSING}.get(status, status)


def method_state(run: RunDir, method: str) -> MethodState:
  """Status of one method of a run (see the module docstring)."""
  if run.status != FINISHED:
    return MethodState(run.status, run.detail, {})
  entry = run.summary["methods"].get(method)
  sm_path = os.path.join(run.path, "summary.json")
  if not isinstance(entry, dict):
    return MethodState(MISSING, f"{sm_path}: no method {method!r}", {})
  status = recorded_status(entry)
  if status == MISSING:
    return MethodState(MISSING, f"{sm_path}: method {method} not run", entry)
  if status not in METHOD_STATUSES:
    return MethodState(INVALID, f"{sm_path}: method {method} has status "
                       f"{status!r}", entry)
  if status == FINISHED and not _finite(entry.get("final_accuracy")):
    return MethodState(DIVERGED, f"{sm_path}: method {method} final accuracy "
                       f"is {entry.get('final_accuracy')!r}", entry)
  detail = "" if status == FINISHED else f"{sm_path}: method {method} {status}"
  return MethodState(status, detail, entry)


def centralized_accuracy(run: RunDir) -> Tuple[Optional[float], str, str]:
  """(accuracy, status, detail) of a centralized run's baseline.

  The accuracy is None unless the status is FINISHED: a missing, running,
  diverged (non-finite or "status": "diverged") or absent baseline gives none.
  """
  if run.status != FINISHED:
    return None, run.status, run.detail
  central = run.summary.get("centralized")
  sm_path = os.path.join(run.path, "summary.json")
  if not isinstance(central, dict):
    return None, MISSING, f"{sm_path}: no centralized result"
  acc = central.get("accuracy")
  if central.get("status", FINISHED) == DIVERGED or not _finite(acc) or acc <= 0:
    return None, DIVERGED, f"{sm_path}: centralized accuracy {acc!r}"
  return float(acc), FINISHED, ""


def sgd_curve(run: RunDir) -> Tuple[Optional[List[float]],
                                    Optional[List[float]], str, str]:
  """(minibatch updates, test accuracies, status, detail) of a centralized
  run's baseline SGD, one point per epoch (summary.json "centralized":
  "minibatch_updates", "history"); the lists are None unless the status is
  FINISHED."""
  _, status, detail = centralized_accuracy(run)
  if status != FINISHED:
    return None, None, status, detail
  central = run.summary["centralized"]
  history, updates = central.get("history"), central.get("minibatch_updates")
  if not (isinstance(history, list) and isinstance(updates, list)
          and len(history) == len(updates) and history):
    return None, None, UNAVAILABLE, (
        f"{run.path}/summary.json: no centralized history with its "
        "minibatch_updates (a run from before they were recorded: rerun it)")
  return updates, history, FINISHED, ""


def read_metrics(run: RunDir, method: str) -> List[Dict[str, object]]:
  """Rows of <run>/<method>/metrics.csv ([] when absent from a run not
  finished), checked and typed (`run_files.read_metrics_csv`).

  Raises:
    RunFileError: missing from a finished run, or the file has no round/test_accuracy/cumulative_batch_budget
      column, or is damaged (a damaged end of a finished run too: its
      summary.json was written from rows the file no longer holds).
  """
  path = os.path.join(run.path, method, "metrics.csv")
  if run.status == FINISHED and not os.path.isfile(path):
    raise run_files.RunFileError(path, "missing", REMEDY)
  metrics = run_files.read_metrics_csv(
      path, REMEDY, required=("round", "test_accuracy",
                              "cumulative_batch_budget"))
  if metrics.dropped and run.status == FINISHED:
    raise run_files.RunFileError(path, metrics.dropped.split(": ", 1)[-1],
                                 REMEDY)
  return metrics.rows
