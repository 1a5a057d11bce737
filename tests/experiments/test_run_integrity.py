"""Run integrity through the binaries (issue 10): one experiment per
directory, the lock (two real processes at once: test_workers_flags.py),
divergence, unreadable checkpoints, --help and flags."""

import csv
import json
import os
import shutil

import pytest

import in_process
import divergence_checks
from conftest import run_module
from conftest import SMALL_RUN, metric_rows

# The other tests' runs (`runs` uses conftest's SMALL_RUN and reference_run).
SMALL = ["--algorithm=fedavg", "--num_clients=6", "--clients_per_round=3",
         "--client_batch_size=20", "--rounds_per_eval=1",
         "--rounds_per_checkpoint=1", "--centralized_epochs=1", "--seed=3"]


def _run_small(train, root, *args):
  """A run of conftest's SMALL_RUN into <root>/ext (see `runs`) by
  `train_in_process` (conftest): in this process, its exit status and
  output the binary's. The real processes' exit statuses of these failures
  are tests/project/test_docs_output.py's failure-table rows."""
  return train(f"--root_output_dir={root}", "--experiment_name=ext",
               *SMALL_RUN, *args)


def _error_lines(proc):
  return [l for l in proc.stderr.splitlines() if "error:" in l]


_strict_json = divergence_checks.strict_json


# Several train_main runs per test, the module's fixture included.
pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, reference_run, train_in_process):
  """conftest's uninterrupted 6-round run, and a 4-round run of the same
  settings later extended to 6 after a rerun with another --alpha was
  refused (evaluated every 2 rounds: both evaluate rounds 2, 4 and 6)."""
  root = tmp_path_factory.mktemp("runs")
  first = _run_small(train_in_process, root, "--total_rounds=4")
  assert first.returncode == 0, first.stderr[-3000:]
  other = _run_small(train_in_process, root, "--total_rounds=4", "--alpha=0.1")
  extended = _run_small(train_in_process, root, "--total_rounds=6")
  assert extended.returncode == 0, extended.stderr[-3000:]
  return root, other, extended, reference_run


def test_other_settings_refused_extension_runs_only_new_rounds(runs):
  root, other, extended, ref = runs
  # Acceptance 1: --alpha changed -> exit 2, one line naming alpha.
  assert other.returncode == 2
  assert "Traceback" not in other.stderr
  lines = _error_lines(other)
  assert len(lines) == 1 and "--alpha=0.1 (recorded 0.5)" in lines[0]
  assert "--overwrite" in lines[0] and "--experiment_name" in lines[0]
  # --total_rounds=6, nothing else changed: rounds 5-6 only, said so.
  assert "extending" in extended.stdout and "from 4 to 6 rounds" in extended.stdout
  assert "resuming from the checkpoint of round 4" in extended.stdout
  done = [l.split("round")[1].split("/")[0].strip()
          for l in extended.stdout.splitlines() if l.startswith("[fedavg] round")]
  assert done == ["5", "6"]
  ext = root / "ext"
  # Same seed, same numbers: rounds 1-4 of a fresh run in this process (and
  # 5-6 of its extension) equal the reference run's (a child process), and
  # byte for byte once the timing column is cut (was test_train_main's
  # test_same_seed_gives_identical_metrics, a third 6-round run).
  assert (metric_rows(ext / "fedavg" / "metrics.csv")
          == metric_rows(ref / "fedavg" / "metrics.csv"))
  strip = lambda p: [",".join(l.split(",")[:-1])
                     for l in p.read_text().splitlines()]
  assert (strip(ext / "fedavg" / "metrics.csv")
          == strip(ref / "fedavg" / "metrics.csv"))
  assert len(strip(ref / "fedavg" / "metrics.csv")) == 7  # Header, 6 rounds.
  s, r = _strict_json(ext / "summary.json"), _strict_json(ref / "summary.json")
  m = s["methods"]["fedavg"]
  assert m["final_accuracy"] == r["methods"]["fedavg"]["final_accuracy"]
  assert m["status"] == "completed" and m["rounds"] == 6
  assert m["clients_dropped_non_finite"] == 0 and m["non_finite_rounds"] == []
  # seconds accumulates over both invocations (the CSV's round_seconds).
  with open(ext / "fedavg" / "metrics.csv", newline="") as f:
    seconds = [float(x["round_seconds"]) for x in csv.DictReader(f)]
  assert len(seconds) == 6
  assert m["seconds"] == pytest.approx(sum(seconds), abs=0.01)
  record = _strict_json(ext / "experiment.json")
  assert record["settings"]["total_rounds"] == 6
  # The extension reused the 4-round invocation's centralized baseline (not
  # trained again), which equals the one the uninterrupted run trained.
  assert "[centralized] 1 epochs: reusing the baseline" in extended.stdout
  assert "[centralized] training" not in extended.stdout
  assert s["centralized"]["accuracy"] == r["centralized"]["accuracy"]
  assert s["centralized"]["history"] == r["centralized"]["history"]
  assert s["centralized"]["reused"] is True
  assert r["centralized"]["reused"] is False
  assert _strict_json(ext / "centralized.json")["result"]["accuracy"] == (
      r["centralized"]["accuracy"])
  assert record["partition_fingerprint"] == _strict_json(
      ref / "experiment.json")["partition_fingerprint"]


def test_truncated_checkpoint_named_then_resumed_from_previous(
    runs, tmp_path, train_in_process):
  root, _, _, ref = runs
  # Acceptance 4, on a copy of the extended run (paths are not recorded).
  work = tmp_path / "ext"
  shutil.copytree(root / "ext", work)
  latest = work / "fedavg" / "checkpoints" / "round_6"
  data = sorted((latest / "variables").glob("variables.data-*"))[0]
  data.write_bytes(data.read_bytes()[:10])
  # In this process: its exit status and one line are the binary's; the real
  # process's exit 1 for this failure-table row is
  # tests/project/test_docs_output.py's `_bad_checkpoint`.
  named = _run_small(train_in_process, tmp_path, "--total_rounds=6")
  assert named.returncode == 1
  lines = _error_lines(named)
  assert len(lines) == 1 and str(latest) in lines[0], named.stderr
  assert "resume_from_last_valid" in lines[0]
  assert "Traceback" not in named.stderr
  resumed = _run_small(train_in_process, tmp_path, "--total_rounds=6",
                       "--resume_from_last_valid")
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "resuming from the checkpoint of round 5" in resumed.stdout
  assert (metric_rows(work / "fedavg" / "metrics.csv")
          == metric_rows(ref / "fedavg" / "metrics.csv"))
  assert (work / "fedavg" / "checkpoints" / "corrupt" / "round_6").is_dir()


# Acceptance 2 (two concurrent runs of one command: exactly one proceeds, the
# other is refused at the lock naming the winner's pid, before loading any
# data): two real processes in tests/experiments/test_workers_flags.py's
# test_two_concurrent_runs_one_proceeds_lost_worker_stops_it_rerun_resumes,
# whose winner then loses its TFF worker (two processes, not three).


# Acceptance 3 for client updates made non-finite (--client_learning_rate=
# 1e30): tests/project/test_docs_output.py's `_diverged` failure row (a real
# process, exit 3), which checks what this test checks.
@pytest.mark.parametrize("flag", ["--server_learning_rate=1e35"])
def test_divergence_exits_3_and_marks_the_method(tmp_path, flag,
                                                train_in_process):
  # Acceptance 3. In this process (conftest's train_in_process): its exit
  # status and one line are the binary's; a real process's exit 3 for a
  # diverged method is tests/project/test_docs_output.py's `_diverged` row.
  proc = train_in_process(f"--root_output_dir={tmp_path}",
                          "--experiment_name=div", *SMALL, "--total_rounds=3",
                          flag)
  assert proc.returncode == 3, proc.stderr[-3000:]
  lines = _error_lines(proc)
  assert len(lines) == 1 and "[fedavg] diverged at round 1" in lines[0]
  divergence_checks.check_stopped_at_round_1(tmp_path / "div")


# A diverged centralized baseline gives no relative accuracy, and every
# method diverged exits 3 after the outputs: tests/project/test_docs_output.py's
# `_every_method_diverged` failure row (a real process).


@pytest.mark.parametrize("binary", ["experiments.train_main",
                                    "experiments.sweep_main"])
def test_bad_seed_is_one_line_exit_2(binary):
  # In this process (`in_process.run`): the binary's exit status and line; a
  # real train_main process refusing --seed=-1 is
  # tests/project/test_docs_output.py's "bad flag value" row.
  proc = in_process.run(binary, "--seed=-1")
  assert proc.returncode == 2
  lines = _error_lines(proc)
  assert len(lines) == 1 and "--seed=-1" in lines[0]
  assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("binary, own", [
    ("experiments.train_main", ["--total_rounds", "--alpha", "--model",
                                "--[no]overwrite", "--on_divergence",
                                "--extra_modules"]),
    ("experiments.sweep_main", ["--sweep", "--[no]dry_run", "--total_rounds",
                                "--on_divergence"]),
    ("experiments.report_main", ["--input_dir", "--reference"]),
])
def test_help_lists_the_binarys_own_flags_only(binary, own):
  proc = run_module(binary, "--help", timeout=120)
  # Grouped by section (help_lib), exit 0 (absl's own --help exited 1).
  assert proc.returncode == 0 and "Traceback" not in proc.stderr
  listed = {l.split(":")[0].strip() for l in proc.stdout.splitlines()
            if l.startswith("  --")}
  assert set(own) <= listed, listed
  assert not listed & {"--logtostderr", "--verbosity", "--only_check_args",
                       "--[no]logtostderr", "--[no]only_check_args"}


def test_run_record_names_differences_and_allows_only_extension(tmp_path):
  from federated_vision.experiment import config as config_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.experiment import run_record  # pylint: disable=g-import-not-at-top
  from federated_vision.errors import ConfigError  # pylint: disable=g-import-not-at-top
  base = config_lib.from_values({"total_rounds": 3})
  (tmp_path / ".lock").write_text("")
  assert run_record.check(str(tmp_path), base) is None  # A new directory.
  settings = run_record.recorded_settings(base)
  assert not set(settings) & set(run_record.NOT_RECORDED)
  assert settings["alpha"] == 0.5 and settings["total_rounds"] == 3
  (tmp_path / run_record.RECORD_FILE).write_text(json.dumps(
      {"settings": settings, "partition_fingerprint": "f"}))
  same = config_lib.replace_fields(base, {
      "rounds_per_checkpoint": 7, "experiment_name": "x", "overwrite": True,
      "on_divergence": "continue", "target_accuracy": 0.5,
      "local_workers": 2, "workers": ["h:1"], "worker_startup_timeout": 5.0})
  assert run_record.check(str(tmp_path), same)["settings"] == settings
  longer = config_lib.replace_fields(base, {"total_rounds": 9})
  assert run_record.check(str(tmp_path), longer) is not None
  for change, field, text in [
      ({"alpha": 0.1, "seed": 4}, "alpha",
       "--alpha=0.1 (recorded 0.5), --seed=4 (recorded 0)"),
      ({"algorithm": ("fedavgm",)}, "algorithm",
       "--algorithm=fedavgm (recorded fedavg,fedavgm)"),
      ({"total_rounds": 2}, "total_rounds", "already holds a run of 3 rounds")]:
    with pytest.raises(ConfigError) as e:
      run_record.check(str(tmp_path), config_lib.replace_fields(base, change))
    assert e.value.field == field and text in str(e.value)
    assert "--overwrite" in str(e.value) and "\n" not in str(e.value)
  other = tmp_path / "other"
  other.mkdir()
  (other / "fedavg").mkdir()
  with pytest.raises(ConfigError, match="holds results without experiment.json"):
    run_record.check(str(other), base)
  (tmp_path / "fedavg").mkdir()
  # --overwrite deletes a run's own files only: `other` (a directory
  # holding a method directory: another run) is refused, nothing deleted.
  before = sorted(os.listdir(tmp_path))
  with pytest.raises(ConfigError, match=f"--overwrite: {tmp_path} holds "
                     f"{other}, which no run writes"):
    run_record.clear(str(tmp_path))
  assert sorted(os.listdir(tmp_path)) == before and os.listdir(other) == [
      "fedavg"]
  shutil.rmtree(other)
  assert run_record.clear(str(tmp_path)) == ["experiment.json", "fedavg"]
  assert os.listdir(tmp_path) == [".lock"]


def test_a_record_from_before_full_train_loss_resumes_without_it(tmp_path):
  """A run recorded before --full_train_loss existed wrote no such column:
  its record (no such setting) resumes without the flag and refuses it."""
  from federated_vision.experiment import config as config_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.experiment import run_record  # pylint: disable=g-import-not-at-top
  from federated_vision.errors import ConfigError  # pylint: disable=g-import-not-at-top
  base = config_lib.from_values({"total_rounds": 3})
  settings = run_record.recorded_settings(base)
  assert settings.pop("full_train_loss") is False
  (tmp_path / run_record.RECORD_FILE).write_text(json.dumps(
      {"settings": settings, "partition_fingerprint": "f"}))
  assert run_record.check(str(tmp_path), base)["settings"] == settings
  with pytest.raises(ConfigError) as e:
    run_record.check(str(tmp_path), config_lib.replace_fields(
        base, {"full_train_loss": True}))
  assert e.value.field == "full_train_loss"
  assert "--full_train_loss=True (recorded False)" in str(e.value)
