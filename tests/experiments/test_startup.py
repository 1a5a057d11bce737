"""Start-up (issue 18): a refused command line, --help and a plan exit before
TensorFlow is imported (`cli.parse_then_import_tf`); TensorFlow's import
alone is ~3 s of CPU, so each such command takes well under a second.

Each case runs the binary as `__main__` in a fresh interpreter that then
reports whether TensorFlow / TFF were imported.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO
from federated_vision.experiment import config as config_lib
from experiments import reproduce_lib
from federated_vision.experiment import run_record
from federated_vision.reproduction import presets

_PROBE = """
import runpy, sys
sys.argv = sys.argv[1:]
try:
  runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
  code = 0
except SystemExit as e:
  code = e.code
print("PROBE", code, "tensorflow" in sys.modules,
      "tensorflow_federated" in sys.modules)
"""


def _probe(module, *args):
  """(exit status, TF imported, TFF imported, stdout, stderr)."""
  proc = subprocess.run([sys.executable, "-c", _PROBE, module, *args],
                        cwd=REPO, capture_output=True, text=True, timeout=120,
                        stdin=subprocess.DEVNULL, check=False)
  line = [l for l in proc.stdout.splitlines() if l.startswith("PROBE ")]
  assert line, proc.stderr[-2000:]
  code, tf, tff = line[-1].split()[1:]
  code = 0 if code == "None" else int(code)  # sys.exit(None): status 0.
  return code, tf == "True", tff == "True", proc.stdout, proc.stderr


@pytest.mark.parametrize("module, args, code, error", [
    ("experiments.train_main", ["--bogus_flag"], 2,
     "train_main.py: error: Unknown command line flag 'bogus_flag'"),
    ("experiments.train_main", ["--seed=-1"], 2,
     "train_main.py: error: flag --seed=-1: -1 is not an integer in the"),
    ("experiments.train_main", ["--virtual_client_size=64"], 2,
     "train_main.py: error: --virtual_client_size: not used: read by fedvc"),
    ("experiments.train_main", ["--algorithm=fedavg", "--server_momentum=0.5"],
     2, "train_main.py: error: --server_momentum: not used: read by fedavgm"),
    ("experiments.train_main", ["extra"], 2,
     "train_main.py: error: unexpected arguments ['extra']"),
    # An impossible --client_group_size (`client_group_size.uncovered`):
    # refused by config validation, before TF and any method is built.
    ("experiments.train_main", ["--client_group_size=2", "--algorithm=fedavg",
                                "--fedir", "--dataset=digits",
                                "--missing_classes=8,9", "--mixing=none"], 2,
     "train_main.py: error: --client_group_size=2: method fedavg+fedir+none "
     "cannot be grouped"),
    ("experiments.train_main", ["--client_group_size=2", "--dataset=digits",
                                "--missing_classes=8,9",
                                "--mixing=gradient_transfer"], 2,
     "train_main.py: error: --client_group_size=2: method "
     "fedavg+gradient_transfer cannot be grouped"),
    ("experiments.sweep_main", ["--sweep=mcmahan_mnist_grid", "--fedir",
                                "--mixing=none", "--client_group_size=4"], 2,
     "sweep_main.py: error: --client_group_size=4: method fedavg+fedir+none "
     "cannot be grouped"),
    ("experiments.reproduce", ["--preset=digits_claims",
                               "--client_group_size=2",
                               "--results_root=/nonexistent/r"], 2,
     "reproduce.py: error: --client_group_size=2: method fedavg+parallel "
     "cannot be grouped"),
    ("experiments.sweep_main", ["--sweep=hsu2019_cifar10", "--alpha=2"], 2,
     "sweep_main.py: error: --alpha: set by the points of "
     "--sweep=hsu2019_cifar10"),
    ("experiments.sweep_main", ["--sweep=nope"], 2,
     "sweep_main.py: error: --sweep=nope: must be one of"),
    ("experiments.reproduce", ["--bogus_flag"], 2,
     "reproduce.py: error: Unknown command line flag 'bogus_flag'"),
    ("experiments.reproduce", ["--preset=hsu2020_table3",
                               "--results_root=/nonexistent/r"], 2,
     "reproduce.py: error: run inat_user_120k_fedavg_c10_fedvc_fedir_off_on_"
     "r5000 needs --split_csv (data is never downloaded)"),
    ("experiments.reproduce", ["--preset=nope"], 2,
     "reproduce.py: error: --preset=nope: no preset 'nope'"),
    # Issue 29: an empty path (results into the working directory), an
    # absurd round count, a method given twice.
    ("experiments.train_main", ["--root_output_dir="], 2,
     "train_main.py: error: --root_output_dir='': must be a non-empty path"),
    ("experiments.train_main", ["--total_rounds=10000000"], 2,
     "train_main.py: error: --total_rounds=10000000: must be <= 1,000,000"),
    ("experiments.train_main", ["--algorithm=fedavg,fedavg"], 2,
     "train_main.py: error: --algorithm=fedavg,fedavg: fedavg is given 2 "
     "times; give each algorithm once"),
    ("experiments.sweep_main", ["--sweep=hsu2019_cifar10",
                                "--root_output_dir="], 2,
     "sweep_main.py: error: --root_output_dir='': must be a non-empty path"),
])
def test_refused_command_line_exits_before_tensorflow(module, args, code,
                                                     error):
  got, tf, tff, _, err = _probe(module, *args)
  assert got == code, err[-2000:]
  errors = [l for l in err.splitlines() if "error:" in l]
  assert len(errors) == 1 and error in errors[0], err
  assert "Traceback" not in err
  assert not tf and not tff


@pytest.mark.parametrize("module, args, first_line", [
    ("experiments.train_main", ["--help"], "Federated training experiment"),
    ("experiments.sweep_main", ["--sweep=hsu2019_cifar10", "--dry_run",
                                "--root_output_dir=/nonexistent/out"],
     "sweep hsu2019_cifar10: 16 points, 0 done -> /nonexistent/out/"
     "hsu2019_cifar10"),
    ("experiments.reproduce", ["--preset=digits_claims", "--dry_run"],
     "preset digits_claims: 13 runs"),
])
def test_help_and_plans_import_no_tensorflow(module, args, first_line):
  code, tf, tff, out, err = _probe(module, *args)
  assert code == 0, err[-2000:]
  assert out.lstrip().startswith(first_line), out[:500]
  assert not tf and not tff


def test_report_only_imports_no_tensorflow(tmp_path):
  code, tf, tff, out, err = _probe(
      "experiments.reproduce", "--preset=hsu2020_table3", "--report_only",
      f"--results_root={tmp_path}")
  assert code == 0, err[-2000:]
  assert (f"written: {tmp_path}/hsu2020_table3.csv, "
          f"{tmp_path}/hsu2020_table3.md") in out
  assert (tmp_path / "hsu2020_table3.csv").is_file()
  assert not tf and not tff


# --- refusals that used to come after TensorFlow's import (issue: friction) --

def test_reproduce_without_preset_lists_the_presets_before_tensorflow():
  # Was "--preset: required" after ~5 s of TensorFlow/TFF start-up.
  code, tf, tff, out, err = _probe("experiments.reproduce")
  assert code == 2, err[-2000:]
  assert err.strip().splitlines() == [
      "reproduce.py: error: --preset: required; presets: "
      + ", ".join(presets.preset_names())]
  assert "digits_claims" in presets.preset_names()
  assert not tf and not tff and out.splitlines() == ["PROBE 2 False False"]


def test_reproduce_refuses_setting_flags_a_preset_fixes():
  # Were accepted and ignored (the runs kept the preset's seed and rounds).
  code, tf, tff, out, err = _probe(
      "experiments.reproduce", "--preset=digits_claims", "--dry_run",
      "--total_rounds=3", "--seed=1", "--local_workers=1",
      "--root_output_dir=/nonexistent/out")
  assert code == 2, err[-2000:]
  assert err.strip().splitlines() == [
      "reproduce.py: error: --seed, --total_rounds: not read: a preset fixes "
      "its runs' settings (reproduce reads only the data-location, "
      "output-root and TFF-worker flags, see --help); vary settings with "
      "train_main or sweep_main"]
  assert not tf and not tff and out.splitlines() == ["PROBE 2 False False"]


def test_sweep_without_its_data_refuses_before_tensorflow(tmp_path):
  # Was refused only after ~15 s of TensorFlow/TFF start-up.
  tfds_dir = tmp_path / "tfds"
  tfds_dir.mkdir()
  root = tmp_path / "out"
  code, tf, tff, out, err = _probe(
      "experiments.sweep_main", "--sweep=hsu2019_cifar10",
      f"--data_dir={tfds_dir}", f"--root_output_dir={root}")
  assert code == 2, err[-2000:]
  assert err.strip().splitlines() == [
      "sweep_main.py: error: --dataset=cifar10: tensorflow-datasets 'cifar10' "
      f"not prepared under --data_dir={tfds_dir} (nothing is downloaded): "
      "give --data_dir=DIR (a prepared cifar10) or --data_source=archive "
      "--archive_path=FILE (16 point(s) of --sweep=hsu2019_cifar10; nothing "
      "ran)"]
  assert not tf and not tff and out.splitlines() == ["PROBE 2 False False"]
  assert not root.exists()


def test_train_main_into_another_experiments_directory_refuses_before_tf(
    tmp_path):
  # Was refused only after ~10 s of TensorFlow/TFF start-up.
  out_dir = tmp_path / "exp"
  out_dir.mkdir()
  recorded = config_lib.replace_fields(config_lib.ExperimentConfig(),
                                       {"total_rounds": 2})
  (out_dir / "experiment.json").write_text(json.dumps({
      "settings": run_record.recorded_settings(recorded),
      "partition_fingerprint": "x", "package_version": "0"}))
  common = [f"--root_output_dir={tmp_path}", "--experiment_name=exp"]
  code, tf, tff, out, err = _probe("experiments.train_main", *common,
                                   "--total_rounds=2", "--seed=1")
  assert code == 2, err[-2000:]
  assert err.strip().splitlines() == [
      f"train_main.py: error: {out_dir} holds another experiment: --seed=1 "
      f"(recorded 0); rerun with --overwrite to delete {out_dir} and start "
      "over, or choose another --experiment_name"]
  assert not tf and not tff and out.splitlines() == ["PROBE 2 False False"]
  code, tf, tff, out, err = _probe("experiments.train_main", *common,
                                   "--total_rounds=1")
  assert code == 2, err[-2000:]
  assert err.strip().splitlines() == [
      f"train_main.py: error: --total_rounds=1: {out_dir} already holds a "
      "run of 2 rounds (it can only be extended); rerun with --overwrite to "
      f"delete {out_dir} and start over, or choose another --experiment_name"]
  assert not tf and not tff
  assert sorted(os.listdir(out_dir)) == ["experiment.json"]
  # A damaged record (issue 29): one line naming it, exit 1, before TF.
  (out_dir / "experiment.json").write_text('{"settings": {"total_rounds": 2')
  code, tf, tff, out, err = _probe("experiments.train_main", *common,
                                   "--total_rounds=2")
  assert code == 1 and not tf and not tff, err[-2000:]
  (line,) = err.strip().splitlines()
  assert line.startswith(f"train_main.py: error: {out_dir}/experiment.json: "
                         "not valid JSON (")
  assert line.endswith("cut short or damaged); rerun with --overwrite to "
                       f"delete {out_dir} and start over, or choose another "
                       "--experiment_name")


@pytest.mark.parametrize("module, args", [
    ("experiments.train_main", []),
    ("experiments.reproduce", ["--preset=digits_claims"])])
def test_estimate_setting_without_estimate_is_one_line(module, args):
  # Was accepted and ignored (issue: friction).
  code, tf, tff, _, err = _probe(module, *args, "--estimate_rounds=2")
  assert code == 2, err[-2000:]
  binary = module.split(".")[1]
  assert err.strip().splitlines() == [
      f"{binary}.py: error: flag --estimate_rounds=2: only with --estimate (a "
      "setting of its calibration) (--help lists the flags)"]
  assert not tf and not tff


def test_reproduction_doc_names_the_flags_reproduce_reads():
  with open(os.path.join(REPO, "docs", "reproduction.md")) as f:
    text = " ".join(f.read().split())
  assert "Phase 1 has no entry point" not in text  # It has one.
  start = text.index("A preset fixes every setting of its runs:")
  claim = text[start:text.index("vary settings with", start)]
  named = re.findall(r"`--([a-z_]+)`", claim)
  read = set(reproduce_lib.read_flag_names())
  assert {"split_csv", "root_output_dir", "local_workers"} <= set(named)
  assert [n for n in named if n not in read] == [
      "help", "seed", "total_rounds"]
