"""The README's output claims against the binaries (issue 19, check 6).

Every row of the failure table (docs/failure_modes.md) is run and its
documented exit status compared with the real one; printed tables hold no
`nan` and each `-` (not measured) has a footnote; the default experiment's
numbers quoted in the README are what `make run` prints.
"""

import errno
import fcntl
import fnmatch
import inspect
import io
import json
import math
import os
import re
import resource
import shlex
import shutil
import socket
import subprocess
import sys

import pytest

from conftest import REPO, run_module
import built_method_memo
import in_process
import divergence_checks
from run_checks import run_file_bytes
from experiments import cli
from federated_vision.experiment import report_lib
from federated_vision.evaluation import reporting

BINARY = "experiments.train_main"
TINY = ["--algorithm=fedavg", "--num_clients=3", "--clients_per_round=2",
        "--client_batch_size=20", "--rounds_per_eval=1",
        "--rounds_per_checkpoint=1", "--centralized_epochs=0", "--seed=3"]


def _readme():
  with open(os.path.join(REPO, "README.md")) as f:
    return f.read()


def _failure_modes():
  with open(os.path.join(REPO, "docs", "failure_modes.md")) as f:
    return f.read()


def failure_table():
  """[(situation, documented exit status)] of docs/failure_modes.md's
  failure table."""
  text = _failure_modes()
  start = text.index("| situation | what happens | exit |")
  rows = []
  for line in text[start:].splitlines()[2:]:
    if not line.startswith("|"):
      break
    cells = [c.strip() for c in line.strip("|").split("|")]
    rows.append((cells[0], int(cells[-1])))
  return rows


def _run(root, name, *args, stdout_to=None):
  """The row's run in this process (`in_process.run_as_binary`: the
  binary's exit status, its stderr and its program name, as a child's).
  Five rows stay real processes: a refused flag (`_bad_flag`), a file
  size limit (`_disk_full`), a worker that never starts (`_no_worker`),
  report_main and reproduce (`_report_input`) and a closed stdout
  (`_stdout_closed`); ours: test-suite CPU (issue 29, check 5)."""
  return in_process.run_as_binary(BINARY, f"--root_output_dir={root}",
                                  f"--experiment_name={name}", *TINY, *args,
                                  stdout_to=stdout_to)



def _errors(proc):
  return [l for l in proc.stderr.splitlines() if "error:" in l]


def _table(stdout):
  """The printed results table and its footnotes."""
  lines = stdout.splitlines()
  i = next(k for k, l in enumerate(lines) if l.startswith("method "))
  out = []
  for l in lines[i:]:
    if not l.strip():
      break
    out.append(l)
  return out


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
  """A finished 2-round run without a centralized baseline, and its stdout
  (in this process: its readers check files and printed lines)."""
  root = tmp_path_factory.mktemp("finished")
  stdout = in_process.run_train_main(f"--root_output_dir={root}",
                                     "--experiment_name=done", *TINY,
                                     "--total_rounds=2")
  return root, stdout


# One scenario per situation of the table: (key words, run) -> process.
def _bad_flag(tmp_path, finished):
  # The other values' lines in this process (`in_process.run`: the
  # binary's exit status and stderr); the row's real process is the last.
  for flag, named in (("--root_output_dir=", "--root_output_dir='': must "
                       "be a non-empty path"),
                      ("--total_rounds=1000000000000000000000",
                       "--total_rounds=1000000000000000000000: must be <= "
                       "1,000,000"),
                      ("--algorithm=fedavg,fedavg", "--algorithm=fedavg,"
                       "fedavg: fedavg is given 2 times; give each algorithm "
                       "once"),
                      ("--experiment_name=..", "--experiment_name='..': must "
                       "be a non-empty name without '/', not '.' or '..'")):
    proc = in_process.run_as_binary(BINARY, flag)
    lines = _errors(proc)
    assert proc.returncode == 2 and len(lines) == 1, (flag, proc.stderr)
    assert lines[0].startswith(f"train_main.py: error: {named}"), lines
  return run_module(BINARY, "--seed=-1", timeout=120), "--seed=-1"


def _locked(tmp_path, finished):
  exp = tmp_path / "held"
  exp.mkdir()
  with open(exp / ".lock", "w") as lock:
    lock.write("pid 4242 on elsewhere\n")
    lock.flush()
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    proc = _run(tmp_path, "held", "--total_rounds=1")
  return proc, "pid 4242"


def _diverged(tmp_path, finished):
  # Also issue 10's acceptance 3 for client updates (moved here from
  # tests/experiments/test_run_integrity.py, which runs the server-side case):
  # the method marked diverged, no baseline trained, the report says so.
  proc = _run(tmp_path, "div", "--total_rounds=1",
              "--client_learning_rate=1e30", "--centralized_epochs=1")
  table = _table(proc.stdout)
  assert not any("nan" in l.lower() for l in table), table
  assert any("- in central_acc: not trained: a method diverged" in l
             for l in table), table
  assert any("- in relative_acc:" in l for l in table), table
  m = divergence_checks.check_stopped_at_round_1(tmp_path / "div")
  assert m["clients_dropped_non_finite"] == 2  # Every client update (TINY).
  return proc, "[fedavg] diverged at round 1"


def _every_method_diverged(tmp_path, finished):
  # With a centralized baseline, which diverges too (moved here from
  # tests/experiments/test_run_integrity.py): no relative accuracy anywhere.
  proc = _run(tmp_path, "cont", "--total_rounds=2", "--on_divergence=continue",
              "--client_learning_rate=1e30", "--centralized_epochs=1")
  (line,) = _errors(proc)
  assert line.endswith(
      "error: every method diverged (fedavg; on_divergence='continue' ran "
      "them to the end): summary.json marks them 'diverged' and gives no "
      "relative accuracy")
  assert "on_divergence='continue'" in proc.stdout
  summary = divergence_checks.strict_json(tmp_path / "cont" / "summary.json")
  assert summary["status"] == "diverged"
  assert summary["centralized"]["status"] == "diverged"
  m = summary["methods"]["fedavg"]
  assert m["status"] == "diverged" and m["non_finite_rounds"] == [1, 2]
  assert m["relative_accuracy"] is None and m["clients_dropped_non_finite"] == 4
  rows = report_lib.gather(str(tmp_path / "cont"))
  assert rows[0]["status"] == "diverged" and rows[0]["relative_accuracy"] is None
  return proc, ("every method diverged (fedavg; on_divergence='continue' ran "
                "them to the end)")


def _damaged_run_file(tmp_path, finished):
  root, _ = finished
  shutil.copytree(root / "done", tmp_path / "done")
  record = tmp_path / "done" / "experiment.json"
  record.write_bytes(record.read_bytes()[:-40])  # A copy cut short.
  proc = _run(tmp_path, "done", "--total_rounds=2")
  return proc, f"{record}: not valid JSON ("


def _reproduce_report_only_damaged_seed(tmp_path):
  """reproduce --report_only over a --seeds=2 root whose second seed's
  summary.json is cut short: the report written (n=1 of 2, the footnote
  naming the file), one line naming it, exit 1 (issue 37, check 5). A real
  process: reproduce defines its flags at import (without TensorFlow
  until the HParams sweep is written)."""
  from federated_vision.reproduction import presets  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import seeds as seeds_lib  # pylint: disable=g-import-not-at-top
  from reproduction_helpers import finished_run  # pylint: disable=g-import-not-at-top
  preset = seeds_lib.expand(presets.get_preset("hsu2020_table3"), 2)
  (table,) = preset.tables
  run = next(c.run for c in table.cells
             if c.row == "FedAvg, FedVC ✓, FedIR ✗, C = 10")
  names = seeds_lib.replicas(preset, run)
  root = tmp_path / "seeds"
  for name, acc in zip(names, (0.42, 0.44)):
    curve = [(1000, acc), (2500, acc), (5000, acc)]
    finished_run(str(root), preset.run(name), {"fedavg+fedvc": curve,
                                               "fedavg+fedir+fedvc": curve})
  summary = root / names[1] / "summary.json"
  summary.write_bytes(summary.read_bytes()[:-20])
  proc = run_module("experiments.reproduce", "--preset=hsu2020_table3",
                    "--seeds=2", "--report_only", f"--results_root={root}",
                    timeout=120, env={"TF_CPP_MIN_LOG_LEVEL": "3"})
  assert proc.returncode == 1 and "Traceback" not in proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1, proc.stderr
  cells = sum(c.run == run for c in table.cells)
  assert lines[0].startswith(
      f"reproduce.py: error: {cells} cell(s) could not be computed from "
      f"every run they read (marked invalid): {summary}: not valid JSON ("
      ), lines[0]
  md = (root / "hsu2020_table3.md").read_text()
  assert "(n=1 of 2)" in md and f"{summary}: not valid JSON (" in md
  assert (root / "hsu2020_table3.csv").is_file()


def _report_input(tmp_path, finished):
  _reproduce_report_only_damaged_seed(tmp_path)
  root, _ = finished
  shutil.copytree(root / "done", tmp_path / "done")
  metrics = tmp_path / "done" / "fedavg" / "metrics.csv"
  metrics.unlink()
  # A real process: report_main defines its flags in __main__ only (it
  # does not import TensorFlow, so the process costs ~1 s).
  proc = run_module("experiments.report_main",
                    f"--input_dir={tmp_path / 'done'}",
                    "--target_accuracy=0.1", timeout=120)
  assert " missing " in proc.stdout  # The cell says why.
  return proc, (f"1 cell(s) could not be computed (marked missing): "
                f"{metrics}: missing; rerun the point's command")


def _bad_checkpoint(tmp_path, finished):
  root, _ = finished
  shutil.copytree(root / "done", tmp_path / "done")
  latest = tmp_path / "done" / "fedavg" / "checkpoints" / "round_2"
  data = sorted((latest / "variables").glob("variables.data-*"))[0]
  data.write_bytes(data.read_bytes()[:10])
  return _run(tmp_path, "done", "--total_rounds=3"), str(latest)


def _unwritable_at_start(tmp_path, finished):
  (tmp_path / "a_file").write_text("")
  root = tmp_path / "a_file" / "out"
  return (in_process.run_as_binary(BINARY, f"--root_output_dir={root}",
                                    *TINY, "--total_rounds=1"),
          f"--root_output_dir={root}")


def _disk_full(tmp_path, finished):
  def limit():  # Python ignores SIGXFSZ: a write past 100 kB fails (EFBIG).
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
  proc = subprocess.run(
      [sys.executable, "-m", BINARY, f"--root_output_dir={tmp_path}",
       "--experiment_name=full", *TINY, "--total_rounds=2"], cwd=REPO,
      capture_output=True, text=True, timeout=300, preexec_fn=limit,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg"),
      stdin=subprocess.DEVNULL, check=False)
  assert not list(tmp_path.glob("full/fedavg/checkpoints/*_temp*"))
  return proc, "cannot write the checkpoint"


def _no_worker(tmp_path, finished):
  with socket.socket() as s:  # A port nothing listens on.
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  return (run_module(BINARY, f"--root_output_dir={tmp_path}",
                     "--experiment_name=w", *TINY, "--total_rounds=1",
                     f"--workers=127.0.0.1:{port}",
                     "--worker_startup_timeout=1"),
          f"127.0.0.1:{port}")


def _overwrite_not_a_run(tmp_path, finished):
  root, _ = finished
  data = tmp_path / "data"  # A data folder holding a finished run too.
  data.mkdir()
  (data / "images.csv").write_text("id,label\n1,2\n")
  shutil.copytree(root / "done", data / "done")
  before = run_file_bytes(tmp_path)
  proc = _run(tmp_path, "data", "--total_rounds=2", "--overwrite")
  assert run_file_bytes(tmp_path) == before  # Not a byte deleted.
  return proc, (f"--overwrite: {data} holds {data / 'done'} and 1 more, "
                "which no run writes")


def _damaged_client_state(tmp_path, finished):
  """A finished 1-round SCAFFOLD run, one state file cut short, rerun."""
  args = [f"--root_output_dir={tmp_path}", "--experiment_name=sc",
          "--methods=scaffold", "--num_clients=3", "--clients_per_round=2",
          "--client_batch_size=20", "--centralized_epochs=0", "--seed=3",
          "--total_rounds=1"]
  built, processes = {}, {}  # SCAFFOLD traced once for both runs.
  with built_method_memo.methods_built_once(built), \
      built_method_memo.training_processes_built_once(processes):
    first = in_process.run_as_binary(BINARY, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    path = sorted((tmp_path / "sc" / "scaffold" / "client_states" /
                   "round_1").glob("*.npy"))[0]
    path.write_bytes(path.read_bytes()[:-4])
    before = run_file_bytes(tmp_path)
    proc = in_process.run_as_binary(BINARY, *args)
  assert run_file_bytes(tmp_path) == before
  return proc, (f"client state {path} cannot be read (does not match its "
                "sha256 in clients.json (cut short, edited or damaged)); "
                f"delete {tmp_path / 'sc' / 'scaffold'} to start over")


def _stdout_closed(tmp_path, finished):
  """As written: `train_main ... | head -1` (bash; the binary's status)."""
  command = " ".join(shlex.quote(a) for a in (
      sys.executable, "-m", BINARY, f"--root_output_dir={tmp_path}",
      "--experiment_name=pipe", *TINY, "--total_rounds=2"))
  proc = subprocess.run(
      ["bash", "-c", f'{command} | head -1; exit "${{PIPESTATUS[0]}}"'],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", MPLBACKEND="Agg"),
      stdin=subprocess.DEVNULL, check=False)
  assert proc.stdout.startswith("data: digits, 3 clients, ")
  assert proc.stdout.count("\n") == 1 and proc.stderr == "", proc.stderr
  return proc, None  # Quiet: no line at all.


class _FullDevice(io.RawIOBase):
  """A stream every write of which fails as on a full device."""

  def writable(self):
    return True

  def write(self, data):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _stdout_full(tmp_path, finished):
  return (_run(tmp_path, "full_stdout", "--total_rounds=2",
               stdout_to=_FullDevice()),
          "train_main.py: error: cannot write to stdout: No space left on "
          "device")


SCENARIOS = [
    ("bad flag value", _bad_flag),
    ("another run holds the directory", _locked),
    ("non-finite values", _diverged),
    ("every method diverged", _every_method_diverged),
    ("checkpoint cannot be read", _bad_checkpoint),
    ("cannot be created or written when the run starts", _unwritable_at_start),
    ("disk full", _disk_full),
    ("a file the run reads back is damaged", _damaged_run_file),
    ("an input a cell needs is missing or damaged", _report_input),
    ("TFF worker does not start", _no_worker),
    ("--overwrite` on a directory holding anything", _overwrite_not_a_run),
    ("a per-client state file", _damaged_client_state),
    ("stdout closed", _stdout_closed),
    ("stdout cannot be written", _stdout_full),
]


def test_every_failure_row_has_a_scenario():
  rows = failure_table()
  assert len(rows) == len(SCENARIOS)
  for situation, _ in rows:
    assert sum(key in situation for key, _ in SCENARIOS) == 1, situation


@pytest.mark.parametrize("key, scenario", SCENARIOS, ids=[k for k, _ in SCENARIOS])
def test_failure_row_exit_status(key, scenario, tmp_path, finished):
  documented = [code for situation, code in failure_table()
                if key in situation]
  proc, named = scenario(tmp_path, finished)
  assert proc.returncode == documented[0], (key, proc.stderr[-3000:])
  lines = _errors(proc)
  if named is None:  # A quiet row: no line.
    assert lines == [], proc.stderr[-3000:]
  else:
    assert len(lines) == 1 and named in lines[0], proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr


def test_placeholders_without_baseline(finished):
  root, stdout = finished
  for png in ("accuracy.png", "accuracy_vs_batches.png", "loss.png"):
    assert (root / "done" / png).stat().st_size > 5000, png
  table = _table(stdout)
  header, rows = table[0].split(), [l for l in table[2:] if not l.startswith("  -")]
  row = dict(zip(header, rows[0].split()))
  assert row["central_acc"] == "-" and row["relative_acc"] == "-"
  assert float(row["final_acc"]) > 0
  notes = [l for l in table if l.startswith("  - ")]
  assert notes == [
      "  - in central_acc: no baseline (--centralized_epochs=0)",
      "  - in relative_acc: final_acc / central_acc only for a completed "
      "method with a completed centralized baseline"]
  assert "nan" not in "\n".join(table).lower()


def test_table_printers_never_print_nan():
  text = reporting.format_table(
      ["method", "central_acc", "acc@batch480"],
      [["a", math.nan, 0.5], ["b", None, None]],
      reporting.results_table_notes("no baseline", 60, 480))
  assert "nan" not in text.lower()
  assert text.splitlines()[2].split() == ["a", "-", "0.5000"]
  assert text.splitlines()[-2:] == [
      "  - in central_acc: no baseline",
      "  - in acc@batch480: the method's first evaluation came after 480 "
      "cumulative batches (the smallest final batch budget over the methods; "
      "evaluations every --rounds_per_eval rounds)"]
  assert reporting.format_table(["x"], [[1.0]]).splitlines()[-1].strip() == "1.0000"
  row = {c: None for c in report_lib.COLUMNS}
  row.update(point="p", final_accuracy=math.nan, relative_accuracy=math.nan)
  table = report_lib.format_table([row])
  assert "nan" not in table.lower() and "nan" not in report_lib.format_markdown(
      [row]).lower()
  assert "  - `-` in relative_accuracy:" in table


def _readme_default_numbers():
  text = " ".join(_readme().split("## The default experiment", 1)[1]
                  .split("\n## ", 1)[0].split())
  m = re.search(r"FedAvgM (0\.\d+) vs centralized (0\.\d+) \(relative (0\.\d+)\), "
                r"FedAvg (0\.\d+) \(relative (0\.\d+)\)", text)
  assert m, "the README's default-run sentence changed"
  n = re.search(r"uses ([\d,]+) and prints `(\d+) training examples \(of (\d+)\)`",
                text)
  assert n, "the README's example count sentence changed"
  return [float(v) for v in m.groups()], n


def test_readme_digits_counts():
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  _, y_train, _, y_test = digits.load_arrays()
  text = " ".join(_readme().split())
  assert f"{len(y_train):,} training, {len(y_test):,} test images" in text
  assert f"⌊{len(y_train):,} / 20⌋ = {len(y_train) // 20} examples" in text


def test_readme_default_run_numbers(tmp_path):
  """`make run`'s defaults (60 rounds; ~75 s of CPU): the README's numbers."""
  (fedavgm, central, rel_m, fedavg, rel), n = _readme_default_numbers()
  # In this process (the test reads stdout and summary.json): no flags, so
  # every flag at its default, as `make run` (no ARGS).
  stdout = in_process.run_train_main(f"--root_output_dir={tmp_path}")
  assert f"{n.group(2)} training examples (of {n.group(3)})" in stdout
  assert int(n.group(1).replace(",", "")) == int(n.group(2))
  assert "nan" not in "\n".join(_table(stdout)).lower()
  with open(tmp_path / "digits_fedavg_vs_fedavgm" / "summary.json") as f:
    methods = json.load(f)["methods"]
  got = [methods["fedavgm"]["final_accuracy"],
         methods["fedavgm"]["centralized_accuracy"],
         methods["fedavgm"]["relative_accuracy"],
         methods["fedavg"]["final_accuracy"],
         methods["fedavg"]["relative_accuracy"]]
  # The README quotes 3 decimals of each.
  assert [round(v, 3) for v in got] == [fedavgm, central, rel_m, fedavg, rel]


def _documented_outputs():
  """The file names (shell patterns; `<method>` -> `*`) in the first column
  of docs/experiments.md's Outputs table."""
  with open(os.path.join(REPO, "docs", "experiments.md")) as f:
    text = f.read()
  start = text.index("| file | content |")
  names = []
  for line in text[start:].splitlines()[2:]:
    if not line.startswith("|"):
      break
    first = line.strip("|").split("|")[0]
    names += [n.replace("<method>", "*") for n in re.findall(r"`([^`]+)`",
                                                                first)]
  return names


def test_every_file_a_run_writes_is_in_the_outputs_table(finished):
  # The partition report was missing from the table (issue: friction).
  root, _ = finished
  run_dir = root / "done"
  documented = _documented_outputs()
  written = []
  for entry in sorted(os.listdir(run_dir)):
    path = run_dir / entry
    if entry.startswith("."):  # The run's lock file.
      continue
    if path.is_dir():  # A method's directory.
      written += [f"{entry}/{child}" + ("/" if (path / child).is_dir() else "")
                  for child in sorted(os.listdir(path))
                  if not child.startswith(".")]
    else:
      written.append(entry)
  assert "partition_alpha_0.50_class_counts.json" in written
  assert "fedavg/metrics.csv" in written
  undocumented = [w for w in written
                  if not any(fnmatch.fnmatch(w, d) for d in documented)]
  assert not undocumented, (undocumented, documented)


def test_failure_modes_doc_quotes_the_ctrl_c_line():
  # Ctrl-C's line and status were undocumented (issue: friction);
  # tests/experiments/test_train_main.py sends SIGTERM and
  # tests/runtime/test_interrupts.py SIGINT (run_checks.signal_in_first_round)
  # and check both.
  text = " ".join(_failure_modes().split())
  line = inspect.signature(cli.main).parameters["interrupted"].default
  assert (f"Ctrl-C (SIGINT) stops a run and its workers with the one line "
          f"`{line}` and exit status 130; SIGTERM and SIGHUP print the same "
          "line and exit 143 and 129") in text
