"""Fault injection on a finished run's files (issue 29): what a crash, a
full disk or a damaged copy leaves, and what the next invocation makes of it.

One small finished run (digits, 3 clients, 2 rounds, a checkpoint per round,
a 1-epoch centralized baseline) is trained once, in this process; every case
works on a copy of it and reruns the same command in this process
(`in_process.run`: its exit status and one-line error are what the binary
would exit with and print; the method FedAvg is built once for all of them,
tests/fixtures/built_method_memo.py). The failure-table rows these cases
document run as real processes in tests/project/test_docs_output.py.
"""

import contextlib
import csv
import errno
import fnmatch
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest

import in_process
import built_method_memo
from run_checks import run_file_bytes
from conftest import REPO, run_module
from federated_vision.evaluation import partition_report
from federated_vision.training import run_files
from federated_vision.training.metrics_csv import CSV_COLUMNS
from federated_vision.training.metrics_csv import TIMING_COLUMNS

NAME = "run"
FLAGS = ["--algorithm=fedavg", "--num_clients=3", "--clients_per_round=2",
         "--client_batch_size=20", "--rounds_per_eval=1",
         "--rounds_per_checkpoint=1", "--centralized_epochs=1", "--seed=3",
         "--total_rounds=2"]
# Fields of summary.json that say what an invocation did or where, not a
# result (the cases below rerun copies of the first run under other roots).
PROVENANCE = ("resumed_from_round", "seconds", "reused", "root_output_dir")

pytestmark = pytest.mark.timeout(900)


# The methods the module's first invocation built (built_method_memo): every
# `_train` runs the same FLAGS, and these cases are about the run's files.
_BUILT_METHODS = {}


def _train(root):
  with built_method_memo.methods_built_once(_BUILT_METHODS):
    return in_process.run("experiments.train_main",
                          f"--root_output_dir={root}",
                          f"--experiment_name={NAME}", *FLAGS)


def _errors(proc):
  return [l for l in proc.stderr.splitlines() if "error:" in l]


def metrics_md5(path) -> str:
  """md5 of a metrics.csv's text without its timing columns."""
  with open(path, newline="") as f:
    rows = list(csv.reader(f))
  keep = [i for i, c in enumerate(rows[0]) if c not in TIMING_COLUMNS]
  text = "\n".join(",".join(r[i] for i in keep) for r in rows)
  return hashlib.md5(text.encode()).hexdigest()


def _strip(value):
  """A summary without its provenance / timing fields and checksum."""
  if isinstance(value, dict):
    return {k: _strip(v) for k, v in value.items()
            if k not in PROVENANCE + (run_files.CHECKSUM_KEY,)}
  return value


def results(summary_path) -> dict:
  """summary.json's results (`_strip`)."""
  with open(summary_path) as f:
    return _strip(json.load(f))


def _leftovers(run_dir):
  """Temporary files / directories of interrupted writes under `run_dir`."""
  return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
                if ".tmp" in p.name or "_temp" in p.name)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
  """(root, snapshot dir, stdout) of the finished run: <root>/run is the
  first invocation's directory, the snapshot a copy of it taken at once."""
  root = tmp_path_factory.mktemp("first")
  proc = _train(root)
  assert proc.returncode == 0, proc.stderr[-3000:]
  snapshot = tmp_path_factory.mktemp("snapshot") / NAME
  shutil.copytree(root / NAME, snapshot)
  return root, snapshot, proc.stdout


def _copy(first, tmp_path):
  """A copy of the finished run under tmp_path (its root); the run dir."""
  shutil.copytree(first[1], tmp_path / NAME)
  return tmp_path / NAME


def _last_row_start(data: bytes) -> int:
  return data.rstrip(b"\n").rfind(b"\n") + 1


# --- metrics.csv: a damaged end is dropped and redone ---------------------------

def test_reader_at_every_byte_offset_of_the_last_row(first, tmp_path):
  """Cut at each offset, the reader gives exactly the intact rows and says
  what it dropped: the rerun therefore takes the same path at every offset
  (`test_truncated_last_row_is_redone` reruns a handful of them)."""
  path = first[1] / "fedavg" / "metrics.csv"
  data = path.read_bytes()
  whole = run_files.read_metrics_csv(str(path), "delete it", CSV_COLUMNS)
  assert whole.dropped is None and [r["round"] for r in whole.rows] == [1, 2]
  assert whole.rows[1]["test_accuracy"] == float(
      data.decode().splitlines()[2].split(",")[5])
  cut = tmp_path / "metrics.csv"
  start = _last_row_start(data)
  offsets = range(start, len(data))
  assert len(offsets) > 50  # Every byte of the row, its end of line last.
  for k in offsets:
    cut.write_bytes(data[:k])
    got = run_files.read_metrics_csv(str(cut), "delete it", CSV_COLUMNS)
    assert got.rows == whole.rows[:1], k
    assert (got.dropped is None) == (k == start), (k, got.dropped)
    if k > start:
      assert got.dropped.startswith(f"dropped the last row of {cut}: cut "
                                    "short"), got.dropped


def _cut_in(data: bytes, where: str) -> bytes:
  """metrics.csv cut inside its last row: at its start or inside its
  cumulative_batch_budget cell; or that row's cells after the round
  replaced by random bytes."""
  start = _last_row_start(data)
  row = data[start:].decode()
  if where == "row start":
    return data[:start]
  if where == "cumulative_batch_budget":
    cells = row.split(",")
    at = len(",".join(cells[:CSV_COLUMNS.index(where)])) + 2
    return data[:start + at]
  noise = random.Random(29).randbytes(len(row) - 2)
  return data[:start + 2] + noise + b"\n"


@pytest.mark.parametrize("where", ["row start", "cumulative_batch_budget",
                                   "random bytes"])
def test_truncated_last_row_is_redone(first, tmp_path, where):
  """Acceptance 1: the rerun drops the damaged row, redoes its round from
  the checkpoint before it and ends with the uninterrupted run's metrics
  (md5 of every column but the timings) and results. Real reruns for the
  row cut at its start (a clean file one row short: nothing to drop, yet
  the checkpoint after it must not be trusted), inside its cumulative
  batch budget (the issue's traceback) and random bytes in it; the reader
  test above shows every other offset reads as these do."""
  run = _copy(first, tmp_path)
  path = run / "fedavg" / "metrics.csv"
  path.write_bytes(_cut_in(path.read_bytes(), where))
  proc = _train(tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  if where != "row start":
    assert f"[fedavg] dropped the " in proc.stdout
  assert ("holds rounds 1..1 only: removed the checkpoint(s) of round(s) 2, "
          "redoing round 2 on") in proc.stdout
  assert "resuming from the checkpoint of round 1" in proc.stdout
  assert metrics_md5(path) == metrics_md5(first[1] / "fedavg" / "metrics.csv")
  assert results(run / "summary.json") == results(first[1] / "summary.json")
  assert sorted(os.listdir(run / "fedavg" / "checkpoints")) == [
      "round_1", "round_2"]


def test_damage_before_intact_rows_is_one_line_and_changes_nothing(
    first, tmp_path):
  run = _copy(first, tmp_path)
  path = run / "fedavg" / "metrics.csv"
  lines = path.read_bytes().split(b"\n")
  lines[1] = random.Random(7).randbytes(len(lines[1]))  # Row 1: noise.
  damaged = b"\n".join(lines)
  path.write_bytes(damaged)
  checkpoints = sorted(os.listdir(run / "fedavg" / "checkpoints"))
  before = run_file_bytes(run)
  proc = _train(tmp_path)
  assert proc.returncode == 1 and "Traceback" not in proc.stderr
  (line,) = _errors(proc)
  assert (f"{path}: line 2 is damaged (" in line and "intact rows follow it "
          f"(line 3); delete {run / 'fedavg'} to start over" in line), line
  assert path.read_bytes() == damaged  # Nothing rewritten, nothing removed.
  assert sorted(os.listdir(run / "fedavg" / "checkpoints")) == checkpoints
  # Every file as it was, summary.json included: the finished run is still
  # reported (it was removed before the loop read metrics.csv).
  assert run_file_bytes(run) == before and "summary.json" in before


def _damage_header(run):
  path = run / "fedavg" / "metrics.csv"
  path.write_bytes(b"round,oops" + path.read_bytes()[len("round,clients"):])
  return f"{path}: its header is not the run's columns ("


def _damage_checkpoint(run):
  latest = run / "fedavg" / "checkpoints" / "round_2"
  data = sorted((latest / "variables").glob("variables.data-*"))[0]
  data.write_bytes(data.read_bytes()[:10])
  return f"checkpoint {latest} cannot be read ("


@pytest.mark.parametrize("damage", [_damage_header, _damage_checkpoint],
                         ids=["metrics.csv header", "last checkpoint"])
def test_a_damaged_file_stops_the_rerun_with_every_file_as_it_was(
    first, tmp_path, damage):
  """The rerun reads every method's files before it writes anything: one
  line naming the file, exit 1, and the finished run byte for byte."""
  run = _copy(first, tmp_path)
  named = damage(run)
  before = run_file_bytes(run)
  proc = _train(tmp_path)
  assert proc.returncode == 1 and "Traceback" not in proc.stderr
  (line,) = _errors(proc)
  assert named in line, line
  assert run_file_bytes(run) == before


def test_reader_refuses_a_damaged_header():
  for header, problem in ((b"round,oops\n1,2\n", "its header is not"),
                          (b"\xff\xfe\n", "its header is not")):
    with pytest.raises(run_files.RunFileError, match=problem):
      run_files.read_metrics_csv(_write_tmp(header), "x", ("round", "b"))
  empty = run_files.read_metrics_csv(_write_tmp(b"rou"), "x", ("round", "b"))
  assert empty.rows == [] and "no whole header" in empty.dropped


def _write_tmp(data: bytes) -> str:
  import tempfile  # pylint: disable=g-import-not-at-top
  fd, path = tempfile.mkstemp(suffix=".csv")
  with os.fdopen(fd, "wb") as f:
    f.write(data)
  return path


# --- report_main: a value it cannot compute is never printed as one -------------

def _report(run_dir, out_dir, *args):
  return run_module("experiments.report_main", f"--input_dir={run_dir}",
                    f"--output_dir={out_dir}", "--target_accuracy=0.15",
                    *args, timeout=120)


def _report_cell(stdout, column):
  lines = stdout.splitlines()
  header = lines[0].split()
  return dict(zip(header, lines[2].split()))[column]


@pytest.mark.parametrize("damage, word", [("missing", "missing"),
                                          ("random bytes", "damaged")])
def test_report_names_a_metrics_csv_it_cannot_read(first, tmp_path, damage,
                                                   word):
  run = _copy(first, tmp_path)
  path = run / "fedavg" / "metrics.csv"
  good = _report(first[1], tmp_path / "good")
  assert good.returncode == 0 and _report_cell(good.stdout,
                                               "rounds_to_target") != "-"
  if damage == "missing":
    path.unlink()
  else:
    path.write_bytes(path.read_bytes()[:60] + random.Random(3).randbytes(40)
                     + path.read_bytes()[100:])
  proc = _report(run, tmp_path / "out")
  assert proc.returncode == 1 and "Traceback" not in proc.stderr
  (line,) = _errors(proc)
  assert f"1 cell(s) could not be computed (marked {word}): {path}: " in line
  assert _report_cell(proc.stdout, "rounds_to_target") == word
  assert f"  - `{word}` in rounds_to_target of run/fedavg: {path}: " in (
      proc.stdout)
  assert "`-` in rounds_to_target" not in proc.stdout  # "never reached".
  with open(tmp_path / "out" / "report.csv", newline="") as f:
    (row,) = list(csv.DictReader(f))
  assert row["rounds_to_target"] == word and row["final_accuracy"]


def test_report_refuses_a_damaged_summary(first, tmp_path):
  run = _copy(first, tmp_path)
  summary = json.loads((run / "summary.json").read_text())
  summary["methods"]["fedavg"]["final_accuracy"] = 0.99  # Checksum kept.
  (run / "summary.json").write_text(json.dumps(summary))
  proc = _report(run, tmp_path / "out")
  assert proc.returncode == 1
  (line,) = _errors(proc)
  assert line.endswith(f"{run / 'summary.json'}: does not match its sha256 "
                       "checksum (edited, or damaged); rerun the point's "
                       "command to write it again")
  (run / "summary.json").write_bytes(b'{"methods": {"fedavg": {"fi')
  (line,) = _errors(_report(run, tmp_path / "out"))
  assert f"{run / 'summary.json'}: not valid JSON (" in line


# --- centralized.json: an edited baseline is retrained ----------------------------

def test_edited_baseline_is_retrained_never_reused(first, tmp_path):
  """Acceptance 2: the accuracy edited (the checksum left as it was) is
  noticed; the baseline is trained again, to the number the first run had."""
  run = _copy(first, tmp_path)
  path = run / "centralized.json"
  saved = json.loads(path.read_text())
  saved["result"]["accuracy"] = 0.999
  path.write_text(json.dumps(saved))
  proc = _train(tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert (f"[centralized] {path} cannot be reused (does not match its sha256 "
          "checksum (edited, or damaged)); training the baseline again"
          ) in proc.stdout
  summary = json.loads((run / "summary.json").read_text())
  assert summary["centralized"]["reused"] is False
  assert results(run / "summary.json") == results(first[1] / "summary.json")
  assert run_files.read_json(str(path), "", sealed=True)["result"][
      "accuracy"] == summary["centralized"]["accuracy"]


# --- a full disk at each write of the run's end --------------------------------------

@contextlib.contextmanager
def _disk_full_at(pattern: str):
  """ENOSPC when a file whose name matches `pattern` is put in place (the
  rename of `run_files.atomic_path`: the file written was never whole)."""
  real = os.replace

  def replace(src, dst, *args, **kwargs):
    if fnmatch.fnmatch(os.path.basename(dst), pattern):
      raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return real(src, dst, *args, **kwargs)
  with mock.patch.object(os, "replace", replace):
    yield


@contextlib.contextmanager
def _hparams_disk_full():
  """TensorBoard's event writer out of space (TensorFlow raises
  ResourceExhaustedError), as the issue met it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorboard.summary.writer import event_file_writer  # pylint: disable=g-import-not-at-top

  def add_event(self, event):
    del self, event
    raise tf.errors.ResourceExhaustedError(
        None, None, "events.out.tfevents; No space left on device")
  with mock.patch.object(event_file_writer.EventFileWriter, "add_event",
                         add_event):
    yield


class _Killed(BaseException):
  """A SIGKILL of the driver, in this process: nothing of ours cleans up."""


@contextlib.contextmanager
def _killed_at(pattern: str):
  """The process dies as a file matching `pattern` is put in place: its
  temporary file stays (no `finally` of `atomic_path` runs after a
  SIGKILL), every output after it is never written."""
  real = os.replace

  def replace(src, dst, *args, **kwargs):
    if fnmatch.fnmatch(os.path.basename(dst), pattern):
      raise _Killed(dst)
    return real(src, dst, *args, **kwargs)
  with mock.patch.object(os, "replace", replace), \
      mock.patch.object(run_files, "_remove", lambda path: None):
    yield


# The writes of a run's end, in order (summary.json last): how each fails,
# and the file or directory its one line names (None: killed, no line).
END_WRITES = [
    ("centralized.json", lambda: _disk_full_at("centralized.json"),
     "centralized.json"),
    ("HParams", _hparams_disk_full, "the HParams session in "),
    ("plots", lambda: _disk_full_at("accuracy_vs_batches.png"),
     "accuracy_vs_batches.png"),
    ("summary.json killed", lambda: _killed_at("summary.json"), None),
    ("summary.json", lambda: _disk_full_at("summary.json"), "summary.json"),
]


def test_disk_full_or_killed_at_each_write_of_the_run_end(first, tmp_path):
  """Acceptance 3 (and kill points): each write failing for a full disk is
  one line, exit 1, no partial file; a kill leaves its temporary file,
  which the next invocation removes; never a summary.json (it would say
  "completed") while an output is missing. Each invocation gets further;
  the last finishes every output with the first run's results."""
  run = _copy(first, tmp_path)
  (run / "centralized.json").unlink()  # So the rerun trains and writes it.
  for what, inject, named in END_WRITES:
    with inject():
      if named is None:
        with pytest.raises(_Killed):
          _train(tmp_path)
      else:
        proc = _train(tmp_path)
    assert not (run / "summary.json").exists(), what
    if named is None:  # What the killed write left, and nothing after it.
      target = what.split()[0]
      assert [p for p in _leftovers(run) if p.startswith(f".{target}.tmp")]
      continue
    assert proc.returncode == 1, (what, proc.stderr[-3000:])
    (line,) = _errors(proc)
    assert "cannot write " in line and named in line, (what, line)
    assert line.endswith("No space left on device; no partial file was kept")
    assert _leftovers(run) == [], what
  proc = _train(tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert results(run / "summary.json") == results(first[1] / "summary.json")
  for png in ("accuracy.png", "accuracy_vs_batches.png", "loss.png"):
    assert (run / png).read_bytes()[:4] == b"\x89PNG", png
  assert len(list((run / "fedavg" / "tensorboard").glob("*.hparams"))) == 1


def test_disk_full_while_writing_the_report(first, tmp_path):
  out = tmp_path / "out"
  script = ("import errno, os, runpy, sys\n"
            "real = os.replace\n"
            "def replace(src, dst):\n"
            "  if dst.endswith('report.md'):\n"
            "    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
            "  return real(src, dst)\n"
            "os.replace = replace\n"
            "sys.argv = sys.argv[1:]\n"
            "runpy.run_module(sys.argv[0], run_name='__main__')\n")
  proc = subprocess.run(
      [sys.executable, "-c", script, "experiments.report_main",
       f"--input_dir={first[1]}", f"--output_dir={out}"], cwd=REPO,
      capture_output=True, text=True, timeout=120, check=False)
  assert proc.returncode == 1 and "Traceback" not in proc.stderr
  (line,) = _errors(proc)
  assert line.endswith(f"cannot write {out / 'report.md'}: No space left on "
                       "device; no partial file was kept")
  assert sorted(os.listdir(out)) == ["report.csv"]  # Whole; no report.md.


# --- a rerun records nothing differently ---------------------------------------------

def _hparams_sessions(run):
  from federated_vision.reproduction import hparams  # pylint: disable=g-import-not-at-top
  return hparams.read_hparams(str(run / "fedavg" / "tensorboard"))


def test_rerun_of_a_finished_run_records_no_result_differently(first,
                                                               tmp_path):
  """Acceptance 4, in the first run's own directory: only provenance and
  timing fields may differ (acc_at_round used to become the CSV's 9 digits
  on a rerun)."""
  root, _, _ = first
  run = root / NAME
  files = ("summary.json", "hparams.json", "experiment.json",
           "centralized.json", "partition_alpha_0.50_class_counts.json",
           "fedavg/metrics.csv")
  before = {f: (run / f).read_bytes() for f in files}
  report_before = _report(run, tmp_path / "before")
  sessions = _hparams_sessions(run)
  proc = _train(root)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "[centralized] 1 epochs: reusing the baseline" in proc.stdout
  after = {f: (run / f).read_bytes() for f in files}
  for f in files[1:]:
    assert after[f] == before[f], f
  old, new = (json.loads(before["summary.json"]),
              json.loads(after["summary.json"]))
  assert new["methods"]["fedavg"]["resumed_from_round"] == 2
  assert old["methods"]["fedavg"]["resumed_from_round"] == 0
  assert (old["centralized"]["reused"], new["centralized"]["reused"]) == (
      False, True)
  assert _strip(new) == _strip(old)
  for key in ("acc_at_round", "acc_at_batch", "final_accuracy",
              "relative_accuracy"):
    assert repr(new["methods"]["fedavg"][key]) == repr(
        old["methods"]["fedavg"][key]), key
  report_after = _report(run, tmp_path / "after")
  table = lambda proc: proc.stdout.split("\n\n")[0]  # Not the paths line.
  assert table(report_after) == table(report_before)
  for f in ("report.csv", "report.md"):
    assert ((tmp_path / "after" / f).read_bytes()
            == (tmp_path / "before" / f).read_bytes()), f
  assert _hparams_sessions(run) == sessions


# --- the other readers ---------------------------------------------------------------------

def test_damaged_experiment_record_is_one_line_exit_1(first, tmp_path):
  run = _copy(first, tmp_path)
  record = json.loads((run / "experiment.json").read_text())
  record["settings"]["total_rounds"] = "2"  # The checksum no longer fits.
  (run / "experiment.json").write_text(json.dumps(record))
  proc = _train(tmp_path)
  assert proc.returncode == 1
  (line,) = _errors(proc)
  assert line.endswith(f"{run / 'experiment.json'}: does not match its sha256 "
                       f"checksum (edited, or damaged); rerun with --overwrite "
                       f"to delete {run} and start over, or choose another "
                       "--experiment_name")


def test_json_records_are_read_like_input(tmp_path):
  path = tmp_path / "r.json"
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  reporting.write_json(str(path), {"a": 0.1 + 0.2, "b": [1, None]},
                       sealed=True)
  assert run_files.read_json(str(path), "x", sealed=True) == {
      "a": 0.1 + 0.2, "b": [1, None]}
  for text, problem in (
      ('{"a": NaN}', "not valid JSON (holds NaN, which strict JSON has not"),
      ('[1]', "holds a JSON list, not an object"),
      (b'{"a": "\xff"}', "not valid JSON ("),
      ('{"a": 1, "sha256": "0"}', "does not match its sha256 checksum")):
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(run_files.RunFileError) as e:
      run_files.read_json(str(path), "do this")
    assert str(e.value).startswith(f"{path}: {problem}")
    assert str(e.value).endswith("; do this") and "\n" not in str(e.value)
  path.write_text('{"a": 1}')
  with pytest.raises(run_files.RunFileError, match="has no sha256 checksum"):
    run_files.read_json(str(path), "x", sealed=True)
  assert run_files.read_json(str(tmp_path / "none.json"), "x",
                             missing_ok=True) is None


def test_partition_report_read_back_checked(first, tmp_path):
  path = first[1] / "partition_alpha_0.50_class_counts.json"
  counts = partition_report.read_counts_report(str(path))
  assert counts.shape == (3, 10) and counts.sum() == 1437
  report = json.loads(path.read_text())
  report["clients"][0]["class_counts"][0] += 1
  edited = tmp_path / "p.json"
  edited.write_text(json.dumps(report))
  with pytest.raises(run_files.RunFileError, match="checksum"):
    partition_report.read_counts_report(str(edited))
  report.pop(run_files.CHECKSUM_KEY)
  edited.write_text(json.dumps(report))  # Unsealed: the counts are checked.
  with pytest.raises(run_files.RunFileError, match="num_examples .* is not "
                     "the sum of its class_counts"):
    partition_report.read_counts_report(str(edited))


def test_image_index_cache_is_rewritten_unless_it_holds_the_index(tmp_path):
  from federated_vision.realworld import image_index  # pylint: disable=g-import-not-at-top
  index = image_index.ExampleIndex(
      ["a", "b", "a"], ["x/1.jpg", "x/2.jpg", "x/3.jpg"],
      np.array([[0, -1, -1]] * 3, np.int64), np.array([0, 1, 2], np.int64),
      ["1", "2", "3"])
  data = image_index.IndexedImageClientData(index, str(tmp_path))
  path = data.index_path
  whole = open(path, "rb").read()
  edited = whole.replace(b"x/1.jpg", b"x/9.jpg")  # Same size, other image.
  for damage in (edited, whole[:-4]):
    with open(path, "wb") as f:
      f.write(damage)
    again = image_index.IndexedImageClientData(index, str(tmp_path))
    assert open(again.index_path, "rb").read() == whole
  paths = [e["path"] for e in again.create_tf_dataset_for_client("a")
           .as_numpy_iterator()]
  assert paths == [b"x/1.jpg", b"x/3.jpg"]


# --- --overwrite and --experiment_name: only a run's own files --------------

def _tree(root):
  """{path: bytes or None (a directory)} of everything under `root`."""
  return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
          for p in sorted(root.rglob("*"))}


def _user_files(first, root):
  """`root` as a user's: a data file, a data folder and a finished run
  (`keep`) beside where the command writes."""
  (root / "precious.txt").write_text("a user's file")
  (root / "data").mkdir()
  (root / "data" / "images.csv").write_text("id,label\n1,2\n")
  shutil.copytree(first[1], root / "keep")


@pytest.mark.parametrize("name", [".", "..", "a/b", "/abs/run"])
def test_experiment_name_not_one_directory_is_refused_before_writing(
    first, tmp_path, name):
  root = tmp_path / "root"
  root.mkdir()
  _user_files(first, root)
  before = _tree(tmp_path)
  for overwrite in ((), ("--overwrite",)):
    proc = in_process.run("experiments.train_main", f"--root_output_dir={root}",
                          f"--experiment_name={name}", *FLAGS, *overwrite)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = _errors(proc)
    assert (f"error: --experiment_name={name!r}: must be a non-empty name "
            "without '/', not '.' or '..' (one directory in "
            "--root_output_dir)") in line, line
    assert _tree(tmp_path) == before  # Nothing written, nothing deleted.


@pytest.mark.parametrize("target", ["data", "root", "run with a note"])
def test_overwrite_of_files_no_run_writes_is_refused_deleting_nothing(
    first, tmp_path, target):
  """A data folder, a directory holding another run, or a finished run
  holding a user's file: one line naming the file, exit 2, all unchanged."""
  root = tmp_path / "root"
  root.mkdir()
  _user_files(first, root)
  if target == "root":  # --experiment_name naming a directory of runs.
    root, name, named = tmp_path, "root", tmp_path / "root" / "data"
  elif target == "data":
    name, named = "data", root / "data" / "images.csv"
  else:
    name, named = "keep", root / "keep" / "notes.txt"
    named.write_text("my notes on this run")
  before = _tree(tmp_path)
  proc = in_process.run("experiments.train_main", f"--root_output_dir={root}",
                        f"--experiment_name={name}", *FLAGS, "--overwrite")
  assert proc.returncode == 2 and "Traceback" not in proc.stderr
  (line,) = _errors(proc)
  assert f"error: --overwrite: {root / name} holds {named}" in line, line
  assert line.endswith("which no run writes; --overwrite deletes a run's own "
                       "files only and deleted nothing: choose another "
                       "--experiment_name (or --root_output_dir)"), line
  assert _tree(tmp_path) == before
  # Without --overwrite, a directory holding no run is not told to use it.
  if target == "data":
    proc = in_process.run("experiments.train_main",
                          f"--root_output_dir={root}", "--experiment_name=data",
                          *FLAGS)
    (line,) = _errors(proc)
    assert proc.returncode == 2 and "--overwrite" not in line, line
    assert f"{root / 'data'} is not a run's directory (it holds " in line
    assert _tree(tmp_path) == before


def test_overwrite_of_a_finished_run_deletes_its_files_and_retrains(
    first, tmp_path):
  root = tmp_path / "root"
  root.mkdir()
  _user_files(first, root)
  run = root / NAME
  shutil.copytree(first[1], run)
  others = {k: v for k, v in _tree(root).items()
            if not k.startswith(NAME + os.sep) and k != NAME}
  written = sorted(n for n in os.listdir(run) if n != ".lock")
  with built_method_memo.methods_built_once(_BUILT_METHODS):
    proc = in_process.run("experiments.train_main", f"--root_output_dir={root}",
                          f"--experiment_name={NAME}", *FLAGS, "--overwrite")
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert f"--overwrite: deleted {', '.join(written)} in {run}" in proc.stdout
  assert "resuming" not in proc.stdout and "reusing" not in proc.stdout
  summary = json.loads((run / "summary.json").read_text())
  assert summary["methods"]["fedavg"]["resumed_from_round"] == 0
  assert summary["centralized"]["reused"] is False
  # Retrained from scratch: the first run's numbers again.
  assert metrics_md5(run / "fedavg" / "metrics.csv") == metrics_md5(
      first[1] / "fedavg" / "metrics.csv")
  got, want = results(run / "summary.json"), results(first[1] / "summary.json")
  for key in ("methods", "centralized", "emd", "status"):
    assert got[key] == want[key], key
  assert {k: v for k, v in _tree(root).items()
          if not k.startswith(NAME + os.sep) and k != NAME} == others
