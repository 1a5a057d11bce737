"""Components own their configuration; ones from --extra_modules reach the
flags (issue 17, item 3 and acceptance check 4 (a), (c), and the 4-method
preset).

(a) tests/fixtures/extra_client_variant.py registers the client-work variant
    `scaled` with its own hyper-parameter --update_scale; (c)
    tests/fixtures/extra_task.py the task `toy_synth` with its own
    --toy_num_classes. Both are passed to train_main with --extra_modules in a
    child process (so this session's registries stay as the package makes them),
    2 rounds each: their two runs in one child
    (tests/fixtures/child_train_runs.py), the refused command lines and --help
    each a process of its own (one line, before TensorFlow).
"""

import dataclasses
import json
import os
import subprocess
import sys
from typing import Optional, Tuple

import numpy as np
import pytest

from conftest import FIXTURES, REPO, TEST_PYTHONPATH, TRAIN_MAIN
from conftest import metric_rows, run_module
from experiments import cli
from federated_vision.experiment import config as config_lib
from experiments import flags_lib
from federated_vision.experiment import fields_read
from federated_vision import config_fields
from federated_vision import tasks
from federated_vision.errors import ConfigError

# The helper modules import from tests/ and tests/fixtures/ (PYTHONPATH of
# the subprocesses).
ENV = {"PYTHONPATH": TEST_PYTHONPATH}
TINY = ["--total_rounds=2", "--rounds_per_eval=1", "--num_clients=3",
        "--clients_per_round=2", "--client_batch_size=20",
        "--centralized_epochs=0", "--seed=1"]


def _train(root, name, *args):
  return run_module(TRAIN_MAIN, f"--root_output_dir={root}",
                    f"--experiment_name={name}", *args, env=ENV, timeout=600)


# (a)'s run: plain FedAvg, the variant at 1.0 (its own setting after its
# name) and the variant at the flag's 0.5 -- same data, sampling and init.
ONE = "fedavg+scaled:update_scale=1.0"
VARIANT_ARGS = ["--extra_modules=extra_client_variant", *TINY]
VARIANT_RUN = [f"--methods=fedavg,{ONE},fedavg+scaled", "--update_scale=0.5",
               *VARIANT_ARGS]
# (c)'s run: toy_synth with C = 4.
TASK_ARGS = ["--extra_modules=extra_task", "--dataset=toy_synth",
             "--algorithm=fedavg", "--total_rounds=2", "--rounds_per_eval=1",
             "--clients_per_round=2", "--client_batch_size=4",
             "--centralized_epochs=0", "--seed=2"]
TASK_RUN = ["--toy_num_classes=4", *TASK_ARGS]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  """The root of (a)'s run `half` and (c)'s run `toy`, trained in one child
  process; {name: {"code", "stdout", "stderr"}}."""
  root = tmp_path_factory.mktemp("extra_components")
  runs = {name: [f"--root_output_dir={root}", f"--experiment_name={name}",
                 *args] for name, args in (("half", VARIANT_RUN),
                                           ("toy", TASK_RUN))}
  proc = subprocess.run(
      [sys.executable, os.path.join(FIXTURES, "child_train_runs.py"), REPO,
       json.dumps(runs)], cwd=REPO, capture_output=True, text=True,
      timeout=900, check=False,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg", **ENV))
  line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
  assert line, proc.stderr[-3000:]
  return root, json.loads(line[-1][len("RESULT "):])


def _error_line(proc) -> str:
  """The one error line of a refused command (exit 2; TF's C++ start-up
  lines aside)."""
  assert proc.returncode == 2, proc.stderr[-2000:]
  errors = [l for l in proc.stderr.strip().splitlines() if "error:" in l]
  assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
  return errors[0]


# --- The mechanism, on the package's own declarations (nothing declared). --


def test_built_in_tasks_declare_their_sections():
  by_name = {s.cls.__name__: s for s in config_fields.sections()}
  assert by_name["CelebaOptions"].owners == ("celeba",)
  assert by_name["CelebaOptions"].field_names == ("celeba_cache_dir",)
  assert by_name["DigitsOptions"].field_names == ("imbalance_sigma",)
  assert "celeba_cache_dir" in tasks.get_task("celeba").reads
  assert "imbalance_sigma" in tasks.get_task("digits").reads
  assert {"imbalance_sigma", "celeba_cache_dir"} <= set(tasks.data_fields())
  assert "options" not in config_lib.field_sections()
  # The real-world tasks read what they read before their sections moved
  # out of DataConfig (loader + split + their own; the twins the loader's).
  loader = {"check_images", "on_bad_image", "image_report_path",
            "index_cache_dir", "image_size"}
  split = {"split_csv", "test_csv", "image_root",
           "accept_unchecked_class_numbering"}
  assert tasks.get_task("inaturalist").reads == loader | split | {
      "image_paths_csv", "metadata_json", "inat_split"}
  assert tasks.get_task("landmarks").reads == loader | split | {
      "tar_shards", "gld_metadata_csv"}
  assert tasks.get_task("synthetic_landmarks").reads == loader | {
      "num_clients", "examples_per_client"}
  assert by_name["LoaderOptions"].owners == (
      "inaturalist", "synthetic_inaturalist", "landmarks",
      "synthetic_landmarks")
  assert config_lib.field_sections()["celeba_cache_dir"] == "data"


def test_declared_fields_route_record_and_compare_as_values():
  c = config_lib.replace_fields(config_lib.ExperimentConfig(),
                                {"celeba_cache_dir": "/c", "alpha": 0.2})
  assert c.data.celeba_cache_dir == "/c" and c.data.alpha == 0.2
  assert c.data.options.values == (("celeba_cache_dir", "/c"),)
  assert c.data.imbalance_sigma is None  # Declared default.
  d = c.to_dict()["data"]
  assert (d["celeba_cache_dir"], d["imbalance_sigma"]) == ("/c", None)
  # A value equal to its default is the default: equal configs are equal.
  same = config_lib.replace_fields(config_lib.ExperimentConfig(),
                                   {"imbalance_sigma": None})
  assert same == config_lib.ExperimentConfig()
  assert hash(same) == hash(config_lib.ExperimentConfig())
  assert tasks.DataConfig.of(imbalance_sigma=1.5).imbalance_sigma == 1.5
  with pytest.raises(AttributeError):
    tasks.DataConfig().no_such_option  # pylint: disable=expression-not-assigned
  with pytest.raises(ConfigError, match="--nope: not a setting"):
    config_lib.replace_fields(c, {"nope": 1})


def test_a_task_section_validates_and_unread_fields_are_refused():
  with pytest.raises(ConfigError, match=r"^--imbalance_sigma=nan: must be a "
                     "finite number >= 0$"):
    config_lib.from_values({"imbalance_sigma": float("nan")})
  with pytest.raises(ConfigError, match=r"^--celeba_cache_dir: not used by "
                     "--dataset=digits$"):
    config_lib.from_values({"celeba_cache_dir": "/c"}, ["celeba_cache_dir"])
  recorded = fields_read.recorded(config_lib.from_values(
      {"imbalance_sigma": 0.5}, ["imbalance_sigma"]))
  assert recorded["data"]["imbalance_sigma"] == 0.5
  assert "celeba_cache_dir" not in recorded["data"]


def test_generated_flags_carry_type_default_bounds_and_help(parse):
  f = parse("--imbalance_sigma=0.25", "--celeba_cache_dir=/x")
  assert (f.imbalance_sigma, f.celeba_cache_dir) == (0.25, "/x")
  names = {x.name for x in f.get_flags_for_module(
      "experiments.flags_lib")}
  assert {"imbalance_sigma", "celeba_cache_dir"} <= names
  assert f["celeba_cache_dir"].help.startswith("celeba: the directory holding "
                                               "TFF's celeba.sqlite")
  assert f["imbalance_sigma"].help.startswith("digits: client sizes are")
  assert f["imbalance_sigma"].default is None
  with pytest.raises(Exception, match="imbalance_sigma"):
    parse("--imbalance_sigma=-1")  # lower_bound=0.0 from the declaration.
  assert sorted(flags_lib.config_flag_names(f)) == sorted(
      config_lib.field_sections())


@dataclasses.dataclass(frozen=True)
class _Kinds:
  a: Optional[float] = config_fields.option(None, "x")
  b: Tuple[str, ...] = config_fields.option((), "x")
  c: bool = config_fields.option(False, "x")
  d: int = config_fields.option(1, "x")
  e: dict = config_fields.option(None, "x")


@dataclasses.dataclass
class _Mutable:
  z_mutable: int = config_fields.option(1, "x")


@dataclasses.dataclass(frozen=True)
class _Taken:
  alpha_taken: int = config_fields.option(1, "x")
  celeba_cache_dir: Optional[str] = config_fields.option(None, "x")


def test_flag_kinds_and_bad_declarations_are_refused_before_registering():
  kinds = [config_fields.flag_kind(_Kinds, f)
           for f in dataclasses.fields(_Kinds)[:4]]
  assert kinds == ["float", "list", "bool", "integer"]
  with pytest.raises(ValueError, match="has no flag"):
    config_fields.flag_kind(_Kinds, dataclasses.fields(_Kinds)[4])
  with pytest.raises(ValueError, match="help text is empty"):
    config_fields.option(1, " ")
  before = config_fields.sections()
  with pytest.raises(ValueError, match="must be a frozen dataclass"):
    config_fields.declare(config_fields.TASK, "t", _Mutable)
  with pytest.raises(ValueError, match="'celeba_cache_dir' is already "
                     "declared by \\('celeba',\\)"):
    config_fields.declare(config_fields.TASK, "t", _Taken)
  assert config_fields.sections() == before


def test_extra_modules_are_found_in_argv_before_parsing():
  assert cli.extra_modules_in(["p", "--extra_modules=a,b", "--x=1"]) == [
      "a", "b"]
  assert cli.extra_modules_in(["p", "--extra_modules", "c"]) == ["c"]
  assert cli.extra_modules_in(["p", "--seed=1"]) == []


# --- (a) A client-work variant with its own hyper-parameter and flag. -----


def test_variant_hyper_parameter_from_extra_modules(tmp_path, trained):
  root, runs = trained
  assert runs["half"]["code"] == 0, runs["half"]["stderr"]
  out = root / "half"
  # update x 1.0 is plain FedAvg's client work: identical curves.
  plain = metric_rows(out / "fedavg" / "metrics.csv")
  assert len(plain) == 2
  assert metric_rows(out / ONE / "metrics.csv") == plain
  rows = metric_rows(out / "fedavg+scaled" / "metrics.csv")
  assert [r["train_loss"] for r in rows] != [r["train_loss"] for r in plain]
  summary = json.loads((out / "summary.json").read_text())
  assert summary["methods"][ONE]["settings"]["update_scale"] == 1.0
  settings = summary["methods"]["fedavg+scaled"]["settings"]
  assert (settings["update_scale"], settings["client_work"]) == (0.5, "scaled")
  assert summary["config"]["methods"]["update_scale"] == 0.5
  hparams = json.loads((out / "hparams.json").read_text())
  assert hparams["update_scale"] == 0.5
  # Not read without the variant: refused, one line, before any directory.
  refused = _train(tmp_path, "no", "--methods=fedavg", "--update_scale=0.5",
                   *VARIANT_ARGS)
  assert _error_line(refused).endswith(
      "--update_scale: not used: read by scaled; this run's methods are "
      "fedavg")
  assert not (tmp_path / "no").exists()
  bad = _train(tmp_path, "bad", "--methods=fedavg+scaled",
               "--update_scale=-1", *VARIANT_ARGS)
  assert _error_line(bad).endswith(
      "--update_scale=-1.0: must be a finite number > 0")


# --- (c) A task with its own config field. --------------------------------


def _toy_labels(num_classes, seed):
  """toy_synth's training labels: 5 clients x 12 (its defaults)."""
  rng = np.random.default_rng(seed)  # As extra_task.labels draws them.
  return rng.integers(0, num_classes, 5 * 12 + 30)[:60]


def test_task_option_from_extra_modules(tmp_path, trained):
  root, runs = trained
  assert runs["toy"]["code"] == 0, runs["toy"]["stderr"]
  out = root / "toy"
  assert len(metric_rows(out / "fedavg" / "metrics.csv")) == 2
  # C = 4 classes, exactly the labels toy_synth draws with C = 4.
  counts = json.loads((out / "partition_alpha_0.50_class_counts.json")
                      .read_text())
  np.testing.assert_array_equal(counts["class_totals"],
                                np.bincount(_toy_labels(4, 2), minlength=4))
  assert sum(sum(c["class_counts"]) for c in counts["clients"]) == 60
  summary = json.loads((out / "summary.json").read_text())
  assert summary["config"]["data"]["toy_num_classes"] == 4
  assert "imbalance_sigma" not in summary["config"]["data"]  # digits'.
  hparams = json.loads((out / "hparams.json").read_text())
  assert hparams["toy_num_classes"] == 4
  # Its flag is in --help, in the data section, with its declared help.
  helped = run_module(TRAIN_MAIN, "--extra_modules=extra_task", "--help",
                      env=ENV)
  assert helped.returncode == 0, helped.stderr[-2000:]
  data = helped.stdout.split("== data:")[1].split("\n== ")[0]
  assert "--toy_num_classes: toy_synth: classes of the synthetic labels" in data
  # Another task's run refuses it; its own check runs.
  assert _error_line(_train(tmp_path, "d", "--toy_num_classes=4",
                            "--extra_modules=extra_task", *TINY)).endswith(
      "--toy_num_classes: not used by --dataset=digits")
  assert _error_line(_train(tmp_path, "big", "--toy_num_classes=11",
                            *TASK_ARGS)).endswith(
      "--toy_num_classes=11: must be in [2, 10]")


# --- A preset naming 4 methods trains exactly those 4. ---------------------

FOUR = ("fedavg", "fedavgm", "fedsgd", "fedavg+fedprox")


def test_a_preset_naming_four_methods_trains_exactly_those(tmp_path):
  from experiments import reproduce_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import spec  # pylint: disable=g-import-not-at-top
  run = spec.Run("four_methods_tiny", {
      "dataset": "digits", "methods": FOUR, "total_rounds": 2,
      "rounds_per_eval": 1, "rounds_per_checkpoint": 2, "num_clients": 3,
      "clients_per_round": 2, "client_batch_size": 20,
      "centralized_epochs": 0, "seed": 1})
  preset = spec.Preset("four_methods", "mcmahan2017", "4 methods, 2 rounds "
                       "(ours: a test preset)", (run,))
  assert run.methods() == FOUR
  root = tmp_path / "results"
  # In this process (`reproduce_lib.run_one`: the config --parallel_runs
  # would pickle for its child, trained here).
  outcome = reproduce_lib.reproduce(preset, str(root), {}, echo=lambda *a: None)
  assert outcome == {"four_methods_tiny": "ran"}
  run_dir = root / "four_methods_tiny"
  summary = json.loads((run_dir / "summary.json").read_text())
  assert sorted(summary["methods"]) == sorted(FOUR)  # JSON keys sorted.
  assert tuple(summary["config"]["methods"]["methods"]) == FOUR
  trained = sorted(p.parent.name for p in run_dir.glob("*/metrics.csv"))
  assert trained == sorted(FOUR)
  for name in FOUR:
    assert len(metric_rows(run_dir / name / "metrics.csv")) == 2
    assert summary["methods"][name]["rounds"] == 2
  assert summary["methods"]["fedsgd"]["settings"]["B"] is None  # B = inf.
  assert summary["methods"]["fedavg+fedprox"]["settings"]["fedprox_mu"] == 0.01
