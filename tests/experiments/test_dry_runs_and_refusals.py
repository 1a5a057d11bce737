"""Runs and sweeps without friction (issue 19, acceptance checks 2-5).

2. `reproduce --report_only` needs only results (no data flag); one output
   root: --results_root defaults to --root_output_dir.
3. Dry runs print the base once and per run only what differs (no line over
   300 characters); a sweep's points without their data are marked, naming
   the flag, and the real run refuses before its first point.
4. A run refused by validation (a malformed --split_csv) leaves no directory.
5. HParams: after extending a run from 2 to 3 rounds, one session with
   total_rounds=3 and no output / run-control / execution field, read back
   through TensorBoard's HParams plugin data.
"""

import glob
import json
import os

import pytest

import built_method_memo
import in_process
from conftest import run_module
from federated_vision.experiment import config as config_lib
from experiments import reproduce_lib
from experiments import sweep_lib
from federated_vision.experiment import sweeps
from federated_vision.errors import ConfigError
from federated_vision.reproduction import hparams
from federated_vision.reproduction import presets
from federated_vision.tasks import presence
from tests.fixtures.reproduction_helpers import listing_runs
from tests.fixtures.reproduction_helpers import listing_settings

MAX_LINE = 300  # Issue 19, check 3.
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "3"}  # No cuDNN-registration lines.


def _one_line_error(proc, status=2):
  assert proc.returncode == status, (proc.returncode, proc.stderr[-2000:])
  assert "Traceback" not in proc.stderr
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1, proc.stderr
  return lines[0]


# --- check 2: --report_only, one output root ---------------------------------

def test_report_only_needs_no_data_flags_and_writes_under_results_root(
    tmp_path):
  root = tmp_path / "D"
  proc = run_module("experiments.reproduce", "--preset=hsu2020_table3",
                    "--report_only", f"--results_root={root}", timeout=120,
                    env=QUIET)
  assert proc.returncode == 0, proc.stderr[-2000:]
  # (and the summary of its cells and claims, issue 28; its Figure 7,
  # drawn from no finished run: issue 35)
  assert sorted(os.listdir(root)) == ["hsu2020_table3.csv",
                                      "hsu2020_table3.md",
                                      "hsu2020_table3_figure7.csv",
                                      "hsu2020_table3_figure7.png",
                                      "hsu2020_table3_summary.json"]
  assert any(l.startswith(f"written: {root}/hsu2020_table3.csv, "
                          f"{root}/hsu2020_table3.md")
             for l in proc.stdout.splitlines()), proc.stdout


def test_results_root_defaults_to_root_output_dir(tmp_path):
  root = tmp_path / "out"
  proc = run_module("experiments.reproduce", "--preset=hsu2020_table3",
                    "--report_only", f"--root_output_dir={root}", timeout=120,
                    env=QUIET)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert sorted(os.listdir(root)) == ["hsu2020_table3.csv",
                                      "hsu2020_table3.md",
                                      "hsu2020_table3_figure7.csv",
                                      "hsu2020_table3_figure7.png",
                                      "hsu2020_table3_summary.json"]
  both = run_module("experiments.reproduce", "--preset=hsu2020_table3",
                    "--report_only", f"--root_output_dir={root}",
                    f"--results_root={tmp_path}/other", timeout=120, env=QUIET)
  assert _one_line_error(both) == (
      f"reproduce.py: error: --results_root={tmp_path}/other and "
      f"--root_output_dir={root}: give one (--results_root defaults to "
      "--root_output_dir)")
  assert not (tmp_path / "other").exists()


def test_default_output_roots_are_gitignored(repo_root):
  with open(os.path.join(repo_root, ".gitignore")) as f:
    ignored = f.read().splitlines()
  default = config_lib.OutputConfig().root_output_dir
  assert f"/{default}/" in ignored and "/reproduction/" in ignored


# --- check 3: dry runs -------------------------------------------------------

@pytest.mark.parametrize("name", presets.preset_names())
def test_preset_dry_run_lines_are_short(name):
  out = []
  reproduce_lib.reproduce(name, "/r", {}, dry_run=True, echo=out.append)
  lines = "\n".join(out).splitlines()
  assert max(len(l) for l in lines) <= MAX_LINE, max(lines, key=len)


def test_digits_claims_dry_run_prints_the_base_once_then_differences():
  out = []
  preset = presets.get_preset("digits_claims")
  reproduce_lib.reproduce(preset, "/r", {}, dry_run=True, echo=out.append)
  lines = "\n".join(out).splitlines()
  assert max(len(l) for l in lines) <= MAX_LINE
  listed = listing_runs(lines)
  assert list(listed) == ["base"] + [r.name for r in preset.runs]
  base = listing_settings(listed["base"])
  # The base: every setting but the run's name, once.
  assert set(base) == set(config_lib.field_sections()) - {"experiment_name"}
  assert base["root_output_dir"] == "/r" and base["dataset"] == "digits"
  for run in preset.runs:
    shown = listing_settings(listed[run.name])
    full = reproduce_lib.full_config(run, "/r")
    # Exactly the settings where the run differs from the base.
    assert set(shown) == {k for k, v in full.items() if k != "experiment_name"
                          and reproduce_lib._show(v) != base[k]}  # pylint: disable=protected-access
    for k, v in shown.items():
      assert v == reproduce_lib._show(full[k])  # pylint: disable=protected-access
  assert listed["digits_claims_alpha_100"] == [
      "--alpha=100", "--num_clients=60", "--total_rounds=40"]


def test_preset_dry_run_marks_runs_missing_data(tmp_path):
  out = []
  reproduce_lib.reproduce("hsu2020_table3", "/r", {}, dry_run=True,
                          echo=out.append)
  lines = "\n".join(out).splitlines()
  # Every run of Table 3 (4 federated + the centralized baseline) reads
  # iNaturalist files.
  assert sum("[missing data: give --split_csv]" in l for l in lines) == len(
      presets.get_preset("hsu2020_table3").runs) == 5


def _sweep_dry_run(parse, capsys, *args):
  from experiments import sweep_main  # pylint: disable=g-import-not-at-top,unused-import
  planned = sweep_lib.plan(parse("--sweep=hsu2019_cifar10", *args))
  sweep_lib.print_plan(*planned)
  return planned, capsys.readouterr().out.splitlines()


def test_sweep_dry_run_without_cifar_marks_every_point(parse, tmp_path,
                                                       capsys, monkeypatch):
  monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
  planned, lines = _sweep_dry_run(parse, capsys,
                                  f"--root_output_dir={tmp_path}")
  assert max(len(l) for l in lines) <= MAX_LINE
  points = lines[2:18]
  assert len(points) == 16
  for line, (pt, _, _, _) in zip(points, planned[2]):
    assert line.startswith(f"  [missing data: give --data_dir or "
                           f"--archive_path] {pt.name}  --methods="), line
  message = (f"--dataset=cifar10: tensorflow-datasets 'cifar10' not "
             f"prepared under tfds' default data_dir {tmp_path}/tfds (nothing "
             "is downloaded): give --data_dir=DIR (a prepared cifar10) or "
             "--data_source=archive --archive_path=FILE")
  assert lines[18:] == ["  16 point(s) miss data:", f"    {message}"]
  # The real run refuses before its first point, naming the flag.
  from federated_vision.experiment import runner  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(runner, "run", lambda c: pytest.fail("a point ran"))
  with pytest.raises(ConfigError) as e:
    sweep_lib.run_points(*planned)
  assert str(e.value) == (f"{message} (16 point(s) of --sweep=hsu2019_cifar10;"
                          " nothing ran)")
  assert e.value.field == "data_dir"
  assert not (tmp_path / "hsu2019_cifar10").exists()


@pytest.mark.parametrize("name", sweeps.SWEEP_NAMES)
def test_sweep_dry_run_lines_are_short(name, parse, tmp_path, capsys,
                                       monkeypatch):
  from experiments import sweep_main  # pylint: disable=g-import-not-at-top,unused-import
  monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
  planned = sweep_lib.plan(parse(f"--sweep={name}",
                                 f"--root_output_dir={tmp_path}"))
  sweep_lib.print_plan(*planned)
  lines = capsys.readouterr().out.splitlines()
  assert len(lines) == 2 + len(sweeps.SWEEPS[name].points) + 2
  assert max(len(l) for l in lines) <= MAX_LINE, max(lines, key=len)


def test_sweep_dry_run_with_prepared_cifar_lists_points_to_run(
    parse, tmp_path, capsys):
  info = tmp_path / "tfds" / "cifar10" / "3.0.2" / "dataset_info.json"
  info.parent.mkdir(parents=True)
  info.write_text("{}")
  _, lines = _sweep_dry_run(parse, capsys, f"--root_output_dir={tmp_path}",
                            f"--data_dir={tmp_path}/tfds", "--only=fedavg_*")
  assert [l.split()[:2] for l in lines[2:]] == [
      ["[todo]", f"fedavg_alpha_{a}"] for a in
      ("100", "10", "1", "0.5", "0.2", "0.1", "0.05", "0")]


def test_presence_of_tfds_data(tmp_path, monkeypatch):
  from federated_vision import tasks  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path))
  data = tasks.DataConfig(dataset="mnist")
  missing = presence.missing_data(data)
  assert missing.flags == ("data_dir", "archive_path")
  assert missing.label == "missing data: give --data_dir or --archive_path"
  (tmp_path / "mnist" / "3.0.1").mkdir(parents=True)
  assert presence.missing_data(data) is not None  # No dataset_info.json.
  (tmp_path / "mnist" / "3.0.1" / "dataset_info.json").write_text("{}")
  assert presence.missing_data(data) is None
  other = tmp_path / "elsewhere"
  missing = presence.missing_data(tasks.DataConfig(dataset="cifar100",
                                                   data_dir=str(other)))
  assert f" not prepared under --data_dir={other} (" in missing.message
  for present in (tasks.DataConfig(dataset="digits"),
                  tasks.DataConfig(dataset="synthetic_cifar10"),
                  tasks.DataConfig(dataset="cifar10", data_source="archive",
                                   archive_path=str(tmp_path))):
    assert presence.missing_data(present) is None


# --- check 4: no directory from a refused run --------------------------------

def test_malformed_split_csv_leaves_no_directory(tmp_path):
  split = tmp_path / "split.csv"
  split.write_text("user_id,image_id,class\nu,1,0\nu,x,1\n")
  root = tmp_path / "out" / "sub"
  # In this process (`in_process.run`): the binary's exit status and its
  # one line; a real process's exit 2 for a refused flag is
  # tests/project/test_docs_output.py's "bad flag value" row.
  proc = in_process.run_as_binary("experiments.train_main",
                           "--dataset=synthetic_cifar10",
                           f"--split_csv={split}", f"--root_output_dir={root}",
                           "--experiment_name=e", "--total_rounds=1")
  assert _one_line_error(proc) == (
      f"train_main.py: error: --split_csv={split}: {split}:3: image_id must "
      "be a non-negative integer, got 'x'")
  assert sorted(os.listdir(tmp_path)) == ["split.csv"]  # Not even out/.


def test_train_main_refuses_missing_cifar_before_any_directory(
    tmp_path, monkeypatch):
  from federated_vision.experiment import runner  # pylint: disable=g-import-not-at-top
  monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
  config = config_lib.from_values(dict(
      dataset="cifar10", root_output_dir=str(tmp_path / "out"),
      experiment_name="e"))
  with pytest.raises(ConfigError) as e:
    runner.run(config)
  assert str(e.value).startswith(
      "--dataset=cifar10: tensorflow-datasets 'cifar10' not prepared under "
      f"tfds' default data_dir {tmp_path}/tfds (nothing is downloaded)")
  assert e.value.field == "data_dir"
  assert not (tmp_path / "out").exists()


def test_refused_run_keeps_directories_it_did_not_create(tmp_path):
  from federated_vision.experiment import runner  # pylint: disable=g-import-not-at-top
  split = tmp_path / "split.csv"
  split.write_text("user_id,image_id,class\nu,1,0\n")  # Too few rows.
  (tmp_path / "root").mkdir()
  (tmp_path / "root" / "keep").mkdir()
  config = config_lib.from_values(dict(
      dataset="synthetic_cifar10", split_csv=str(split),
      root_output_dir=str(tmp_path / "root"), experiment_name="keep",
      total_rounds=1))
  with pytest.raises(ConfigError, match="--split_csv="):
    runner.run(config)
  # It existed before: kept, with the lock file of the refused run.
  assert os.listdir(tmp_path / "root" / "keep") == [".lock"]
  config = config_lib.from_values(dict(
      dataset="synthetic_cifar10", split_csv=str(split),
      root_output_dir=str(tmp_path / "root"), experiment_name="new",
      total_rounds=1))
  with pytest.raises(ConfigError, match="--split_csv="):
    runner.run(config)
  assert sorted(os.listdir(tmp_path / "root")) == ["keep"]


# --- check 5: HParams after an extension -------------------------------------

def _session_starts(logdir):
  """The HParams session-start records of `logdir`'s event files, read as
  TensorBoard's HParams plugin reads them (its plugin data protos)."""
  from tensorboard.backend.event_processing import event_file_loader  # pylint: disable=g-import-not-at-top
  from tensorboard.plugins.hparams import metadata  # pylint: disable=g-import-not-at-top
  starts = []
  for path in sorted(glob.glob(os.path.join(logdir, "*tfevents*"))):
    for event in event_file_loader.EventFileLoader(path).Load():
      for value in event.summary.value:
        if (value.metadata.plugin_data.plugin_name == metadata.PLUGIN_NAME
            and value.tag == metadata.SESSION_START_INFO_TAG):
          info = metadata.parse_session_start_info_plugin_data(
              value.metadata.plugin_data.content)
          starts.append({k: getattr(v, v.WhichOneof("kind"))
                         for k, v in info.hparams.items()})
  return starts


def test_hparams_after_extension_hold_current_result_settings(tmp_path):
  from federated_vision.experiment import runner  # pylint: disable=g-import-not-at-top
  values = dict(dataset="digits", algorithm=["fedavg"], num_clients=3,
                clients_per_round=2, client_batch_size=20, rounds_per_eval=1,
                rounds_per_checkpoint=1, centralized_epochs=0, seed=1,
                root_output_dir=str(tmp_path), experiment_name="ext")
  # FedAvg built once for both (built_method_memo): the check is the HParams
  # records, not the build.
  with built_method_memo.methods_built_once({}):
    runner.run(config_lib.from_values(dict(values, total_rounds=2)))
    runner.run(config_lib.from_values(dict(values, total_rounds=3)))
  logdir = tmp_path / "ext" / "fedavg" / "tensorboard"
  (start,) = _session_starts(logdir)  # One session, not one per run.
  assert start["total_rounds"] == 3
  assert hparams.NON_RESULT_SECTIONS == ("output", "run", "execution")
  excluded = {f for f, s in config_lib.field_sections().items()
              if s in ("output", "run", "execution")}
  assert {"root_output_dir", "experiment_name", "overwrite", "on_divergence",
          "local_workers", "workers"} <= excluded
  assert not excluded & set(start)
  # Every result-affecting setting is there, with the run's value.
  recorded = hparams.result_flags(json.loads(
      (tmp_path / "ext" / "hparams.json").read_text()))
  assert {k for k in start if not k.startswith(("method", "server_eff"))} \
      == {k for k, v in recorded.items() if v is not None}
  assert not set(recorded) & excluded and {"total_rounds", "alpha", "model",
                                           "client_learning_rate"} <= set(start)
  assert start["alpha"] == 0.5 and start["num_clients"] == 3
  assert start["model"] == "digits_cnn"  # --model unset: the resolved one.
  assert start["method"] == "fedavg"
  # The same through the multiplexer reader: one run, metrics at round 3.
  (session,) = hparams.read_hparams(str(tmp_path / "ext")).values()
  assert session["hparams"] == start and session["status"] == "success"
  summary = json.loads((tmp_path / "ext" / "summary.json").read_text())
  assert session["metrics"]["final_accuracy"] == pytest.approx(
      summary["methods"]["fedavg"]["final_accuracy"])
