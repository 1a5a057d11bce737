"""No flag that silently does nothing (issue 20, check 3): a flag given on
the command line that the resolved experiment does not read is one `error:`
line naming it, exit 2, before any directory exists; the recorded config
holds only what the run read (`federated_vision.experiment.fields_read`)."""

import json
import os

import pytest

from conftest import TRAIN_MAIN, run_module
import in_process
from federated_vision.experiment import config as config_lib
from federated_vision.experiment import run_record
from federated_vision.experiment import fields_read
from federated_vision.methods import usage as method_usage
from federated_vision import methods as methods_lib
from federated_vision.errors import ConfigError
from federated_vision.reproduction import results

SPLIT = "user_id,image_id,class\n0,0,0\n0,1,1\n1,2,0\n1,3,1\n"


@pytest.fixture(name="split_csv")
def _split_csv(tmp_path):
  path = tmp_path / "split.csv"
  path.write_text(SPLIT)
  return str(path)


# --- The three cases of the issue, through the binary. -----------------------

@pytest.mark.parametrize("flags,field,why", [
    (["--dataset=synthetic_cifar10", "--split_csv={csv}", "--alpha=0.1"],
     "alpha", "--split_csv gives the partition"),
    (["--algorithm=fedavg", "--server_momentum=0.5"], "server_momentum",
     "read by fedavgm, @sgdm, @nesterov; this run's methods are fedavg"),
    (["--virtual_client_size=64"], "virtual_client_size",
     "read by fedvc; this run's methods are fedavg, fedavgm"),
])
def test_unused_flag_is_one_error_line_exit_2_and_no_directory(
    tmp_path, split_csv, flags, field, why):
  root = tmp_path / "out"
  proc = run_module(TRAIN_MAIN, f"--root_output_dir={root}",
                    "--experiment_name=x", "--total_rounds=1",
                    *[f.format(csv=split_csv) for f in flags], timeout=120)
  assert proc.returncode == 2, proc.stderr[-2000:]
  lines = proc.stderr.strip().splitlines()
  errors = [l for l in lines if "error:" in l]
  assert len(errors) == 1, proc.stderr
  assert errors[0].endswith(f"error: --{field}: not used: {why}"), errors[0]
  assert "Traceback" not in proc.stderr
  assert not root.exists()  # Refused before any directory was created.


# --- Every config field has a rule. ------------------------------------------

# Fields every run reads, with the reason (the test's own list).
ALWAYS = {
    "dataset": "selects the task",
    "model": "selects the model (None: the task's default)",
    "mixed_precision": "the model's compute precision (every model)",
    "total_rounds": "every method's rounds",
    "rounds_per_eval": "every method's evaluation cadence",
    "rounds_per_checkpoint": "every method's checkpoints",
    "centralized_epochs": "the centralized baseline (0 skips it)",
    "seed": "partition, sampling, shuffling, initialisation",
    "target_accuracy": "rounds_to_target in summary.json",
    "full_train_loss": "every method's training-set loss column",
    "mixing": "the mixing strategies (empty: none)",
    "root_output_dir": "output location", "experiment_name": "output location",
    "overwrite": "run control", "on_divergence": "run control",
    "resume_from_last_valid": "run control",
    "local_workers": "the local workers", "workers": "the remote workers",
    "worker_startup_timeout": "every worker's start-up deadline",
    "client_group_size": "every method's clients per TFF slot",
}
# Read by every built-in method (each algorithm's optimizers), not an
# always-used field of `usage`: the methods' rule decides, so an algorithm
# that does not read them would be refused.
EVERY_METHOD = {
    "client_learning_rate": "every built-in algorithm's client optimizer",
    "server_learning_rate": "every built-in algorithm's server optimizer",
    "client_learning_rate_decay": "the client rate's schedule",
    "server_learning_rate_decay": "the server rate's schedule",
}
# The method selection: --methods, or its shorthands; whichever chose the
# methods is read, the other is not (giving both is refused by
# config.check_method_selection, naming --methods).
SELECTION = {
    "methods": "the explicit method list", "algorithm": "shorthand",
    "fedir": "shorthand", "fedprox": "shorthand", "fedvc": "shorthand",
}
# Given means set: --client_fraction on the command line always sets clients
# per round (it is left out of the record only when unset).
WHEN_GIVEN = {"client_fraction": "sets clients per round = max(C*K, 1)"}

_LOCAL0 = {"local_workers": 0, "workers": ("localhost:1",)}
# field -> a config giving it, where the run does not read it ("_given": the
# fields given on the command line when not all of them).
REFUSED = {
    "data_source": {"dataset": "synthetic_cifar10", "data_source": "tfds"},
    "data_dir": {"dataset": "synthetic_cifar10", "data_dir": "/tmp"},
    "archive_path": {"dataset": "cifar10", "archive_path": "/nonexistent"},
    "partition": {"dataset": "synthetic_inaturalist", "partition": "iid"},
    "num_clients": {"dataset": "cifar10", "split_csv": "{csv}",
                    "num_clients": 3},
    "examples_per_client": {"dataset": "cifar10", "split_csv": "{csv}",
                            "examples_per_client": 3},
    "split_csv": {"split_csv": "{csv}"},
    "alpha": {"dataset": "synthetic_cifar10", "split_csv": "{csv}",
              "alpha": 0.1},
    "imbalance_sigma": {"partition": "shards", "imbalance_sigma": 1.0},
    "test_csv": {"test_csv": "{csv}"},
    "image_root": {"image_root": "/tmp"},
    "image_paths_csv": {"image_paths_csv": "{csv}"},
    "metadata_json": {"metadata_json": ("{csv}",)},
    "gld_metadata_csv": {"gld_metadata_csv": ("{csv}",)},
    "accept_unchecked_class_numbering": {
        "accept_unchecked_class_numbering": True},
    "inat_split": {"inat_split": "geo_100"},
    "tar_shards": {"tar_shards": ("{csv}",)},
    "check_images": {"check_images": "exists"},
    "on_bad_image": {"on_bad_image": "fail"},
    "image_report_path": {"image_report_path": "/tmp/r.json"},
    "index_cache_dir": {"index_cache_dir": "/tmp"},
    "image_size": {"image_size": 32},
    "celeba_cache_dir": {"celeba_cache_dir": "/tmp"},
    # Issue 34: the Shakespeare tasks' own fields (digits reads none).
    "shakespeare_cache_dir": {"shakespeare_cache_dir": "/tmp"},
    "shakespeare_plays": {"shakespeare_plays": ("hamlet",)},
    "shakespeare_source": {"shakespeare_source": "plays"},
    "shakespeare_split": {"shakespeare_split": "iid"},
    "shakespeare_text": {"shakespeare_text": "/tmp/pg100.txt"},
    "weight_decay": {"weight_decay": 0.0},
    "mobilenet_alpha": {"mobilenet_alpha": 1.0},
    "gn_groups": {"gn_groups": 32},
    "bottleneck_dim": {"bottleneck_dim": 0},
    "pretrained_weights": {"pretrained_weights": "{csv}"},
    "trainable_last_layers": {"trainable_last_layers": 2},
    "include_plain": {"include_plain": True},
    "client_epochs": {"algorithm": ("fedsgd",), "centralized_epochs": 0,
                      "client_epochs": 2},
    "client_batch_size": {"algorithm": ("fedsgd",), "centralized_epochs": 0,
                          "client_batch_size": 5},
    "server_momentum": {"algorithm": ("fedavg",), "server_momentum": 0.5},
    "virtual_client_size": {"virtual_client_size": 64},
    "fedir_target": {"fedvc": True, "fedir_target": "test"},
    "fedprox_mu": {"fedir": True, "fedprox_mu": 0.1},
    "feddyn_alpha": {"algorithm": ("fedavg",), "feddyn_alpha": 0.1},
    # The server optimizers' own (issue 27): unread unless a method uses it.
    **{f: {f: 0.5} for f in ("adagrad_beta_1", "adam_beta_1", "adam_beta_2",
                             "yogi_beta_1", "yogi_beta_2")},
    **{f: {"methods": ("fedavg@adam",), f: 0.01}
       for f in ("adagrad_tau", "yogi_tau")},
    "adam_tau": {"methods": ("fedavg@yogi",), "adam_tau": 0.01},
    # Set by a sweep point, not given (both given: "give only one").
    "clients_per_round": {"client_fraction": 0.5, "clients_per_round": 3,
                          "_given": ["clients_per_round"]},
    "merge_weight": {"mixing": ("none",), "merge_weight": 0.3},
    "central_steps": {"mixing": ("example_transfer",), "central_steps": 2},
    "central_batch_size": {"mixing": ("oracle",), "central_batch_size": 8},
    "central_learning_rate": {"mixing": ("gradient_transfer",),
                              "central_learning_rate": 0.1},
    "central_examples_per_client": {"mixing": ("parallel",),
                                    "central_examples_per_client": 3},
    "gradient_weight": {"mixing": ("parallel",), "gradient_weight": 2.0},
    "missing_classes": {"dataset": "celeba", "celeba_cache_dir": "/tmp",
                        "mixing": ("none",), "missing_classes": "1"},
    "max_concurrent_computation_calls": dict(
        _LOCAL0, max_concurrent_computation_calls=2),
    "worker_malloc_arena_max": dict(_LOCAL0, worker_malloc_arena_max=2),
    "worker_intra_op_threads": dict(_LOCAL0, worker_intra_op_threads=2),
    "worker_inter_op_threads": dict(_LOCAL0, worker_inter_op_threads=2),
}


def _fill(values, csv):
  def one(v):
    if isinstance(v, str):
      return v.format(csv=csv)
    if isinstance(v, tuple):
      return tuple(one(x) for x in v)
    return v
  return {k: one(v) for k, v in values.items()}


@pytest.mark.parametrize("field", sorted(config_lib.field_sections()))
def test_every_field_is_refused_where_unread_or_always_read(field, split_csv):
  lists = [n for n, d in (("ALWAYS", ALWAYS), ("EVERY_METHOD", EVERY_METHOD),
                          ("WHEN_GIVEN", WHEN_GIVEN), ("REFUSED", REFUSED),
                          ("SELECTION", SELECTION))
           if field in d]
  assert len(lists) == 1, (f"--{field}: in {lists or 'no list'}; a new field "
                           "needs a rule in federated_vision.experiment.fields_read and one entry "
                           "here")
  assert field not in fields_read.uncovered(config_lib.ExperimentConfig())
  if field in REFUSED:
    values = _fill(REFUSED[field], split_csv)
    given = values.pop("_given", list(values))
    others = {k: v for k, v in values.items() if k != field}
    # Without the field the same configuration is valid ...
    config_lib.from_values(others, [g for g in given if g != field])
    # ... and giving it is refused, naming it.
    with pytest.raises(ConfigError) as e:
      config_lib.from_values(values, given)
    assert e.value.field == field, str(e.value)
    assert str(e.value).startswith(f"--{field}"), str(e.value)
    assert field in fields_read.unused_fields(config_lib.replace_fields(
        config_lib.ExperimentConfig(), others)) or field in others
    return
  if field in SELECTION:
    listed = fields_read.unused_fields(config_lib.from_values(
        {"methods": ("fedavg+fedvc",)}, ["methods"]))
    shorthands = fields_read.unused_fields(config_lib.from_values(
        {"algorithm": ("fedavg",)}, ["algorithm"]))
    assert (field in listed) == (field != "methods"), listed.get(field)
    assert (field in shorthands) == (field == "methods"), shorthands
    if field != "methods":
      with pytest.raises(ConfigError, match=f"--methods and --{field}: give "
                         "only one"):
        config_lib.from_values({"methods": ("fedavg",), field: (
            ("fedavgm",) if field == "algorithm" else True)},
                               ["methods", field])
    return
  if field in ALWAYS:
    assert field in fields_read.ALWAYS_USED
  configs = [{}, {"algorithm": ("fedsgd",), "centralized_epochs": 0},
             {"algorithm": ("fedavgm",), "fedvc": True, "fedir": True},
             {"dataset": "synthetic_cifar10", "split_csv": split_csv},
             {"mixing": ("parallel",), "client_fraction": 0.5},
             {"dataset": "synthetic_landmarks", "fedprox": True,
              "local_workers": 0, "workers": ("localhost:1",)}]
  for values in configs:
    config = config_lib.from_values(values, list(values))
    unused = fields_read.unused_fields(config)
    if field in WHEN_GIVEN and config.training.client_fraction is None:
      assert field in unused  # Unset: recorded as nothing.
      continue
    assert field not in unused, (values, unused.get(field))


def test_the_rules_cover_exactly_the_config_fields():
  assert set(fields_read.ruled_fields()) == set(config_lib.field_sections())
  assert not fields_read.uncovered(config_lib.ExperimentConfig())


def test_fedsgd_reads_no_local_b_or_e_but_the_baseline_reads_b():
  base = {"algorithm": ("fedsgd",)}
  with_baseline = fields_read.unused_fields(config_lib.from_values(base))
  assert "client_batch_size" not in with_baseline  # Centralized B.
  assert with_baseline["client_epochs"].startswith("not used: read by ")
  no_baseline = fields_read.unused_fields(config_lib.from_values(
      dict(base, centralized_epochs=0)))
  assert {"client_batch_size", "client_epochs"} <= set(no_baseline)


@pytest.mark.parametrize("variant", ["fedir", "fedprox", "fedvc"])
def test_noinclude_plain_is_read_beside_every_variant(variant):
  """--<variant> --noinclude_plain trains only the variant's methods: the
  rule must name every variant (a rule forgetting --fedvc refused
  `--fedvc --noinclude_plain`, and no test gave it)."""
  values = {variant: True, "include_plain": False}
  config = config_lib.from_values(values, list(values))  # Not refused.
  assert "include_plain" not in fields_read.unused_fields(config)
  assert [m.name for m in config.methods.expand()] == [
      f"fedavg+{variant}", f"fedavgm+{variant}"]
  assert fields_read.recorded_flat(config)["include_plain"] is False
  # Without any variant it is refused, naming the flag.
  with pytest.raises(ConfigError, match="--include_plain: not used: without "
                     "--fedir, --fedprox or --fedvc"):
    config_lib.from_values({"include_plain": True}, ["include_plain"])


def test_methods_read_the_union_of_their_components():
  m = methods_lib.MethodConfig("fedavgm", ("fedir", "fedvc"))
  # (A rate's schedule is read with the rate.)
  schedules = {"client_learning_rate_decay", "server_learning_rate_decay"}
  assert method_usage.fields_read(m) == {
      "client_epochs", "client_batch_size", "client_learning_rate",
      "server_learning_rate", "server_momentum", "fedir_target",
      "virtual_client_size"} | schedules
  assert method_usage.fields_read(methods_lib.MethodConfig("fedsgd")) == {
      "client_learning_rate", "server_learning_rate"} | schedules
  # Unknown (no declaration): every hyper-parameter, nothing refused.
  assert method_usage.component_reads("not_declared") == set(
      method_usage.hyper_parameters())
  # What a component reads is part of its one declaration (no separate
  # `declare_reads` table); a non-shared field is refused there.
  with pytest.raises(ValueError, match="alpha"):
    methods_lib.register(methods_lib.DataSide(
        name="reads_alpha", build=None, citation="ours", reads=("alpha",)))


def test_partition_fields_unread_by_scheme():
  iid = config_lib.from_values({"dataset": "synthetic_cifar10",
                                "partition": "iid"})
  assert fields_read.unused_fields(iid)["alpha"] == (
      "not used: --partition=iid draws no Dirichlet class proportions")
  with pytest.raises(ConfigError, match="^--alpha: not used: --partition=iid"):
    config_lib.from_values({"dataset": "synthetic_cifar10", "partition": "iid",
                            "alpha": 0.3}, ["dataset", "partition", "alpha"])
  dirichlet = config_lib.from_values({"dataset": "synthetic_cifar10"})
  assert "alpha" not in fields_read.unused_fields(dirichlet)


# --- The record holds what ran. ----------------------------------------------

def _split_config(split_csv, **extra):
  return config_lib.from_values(dict(
      dataset="synthetic_cifar10", split_csv=split_csv, algorithm=("fedavg",),
      **extra))


def test_split_csv_record_has_no_partition_or_alpha(split_csv):
  config = _split_config(split_csv)
  recorded = fields_read.recorded(config)
  assert "partition" not in recorded["data"]
  assert "alpha" not in recorded["data"]
  assert recorded["data"]["split_csv"] == split_csv
  settings = run_record.recorded_settings(config)
  for name in ("partition", "alpha", "imbalance_sigma", "server_momentum",
               "virtual_client_size", "fedir_target", "fedprox_mu",
               "data_dir", "celeba_cache_dir"):
    assert name not in settings
  assert settings["client_learning_rate"] == 0.05
  assert settings["num_clients"] is None  # The twin's default K sizes it.


def test_a_record_with_an_unread_value_still_resumes(tmp_path, split_csv):
  config = _split_config(split_csv)
  old = dict(run_record.recorded_settings(config), alpha=0.1,
             partition="dirichlet")  # Written before `usage` existed.
  (tmp_path / run_record.RECORD_FILE).write_text(json.dumps(
      {"settings": old, "partition_fingerprint": "f"}))
  assert run_record.check(str(tmp_path), config)["settings"] == old
  # A value the run reads still differs.
  other = _split_config(split_csv, client_learning_rate=0.5)
  with pytest.raises(ConfigError, match="--client_learning_rate=0.5"):
    run_record.check(str(tmp_path), other)


def test_flag_mismatch_skips_flags_the_run_did_not_read():
  recorded = {"algorithm": ["fedavg"], "not_read": {
      "server_momentum": "not used: read by fedavgm"}}
  assert results.flag_mismatch({"algorithm": ["fedavg"],
                                "server_momentum": 0.9}, recorded) is None
  assert results.flag_mismatch({"seed": 1}, recorded) == (
      "hparams.json does not record --seed")


def test_split_csv_run_records_no_partition_or_alpha(tmp_path):
  """A real run: experiment.json, hparams.json and summary.json."""
  # TensorFlow-importing loader, imported here only: the other tests of this
  # module need no TensorFlow.
  from federated_vision.data import cifar  # pylint: disable=g-import-not-at-top
  # The twin's images for its default K x n = 10 x 20, seed 0: the split's
  # classes must be their labels.
  labels = cifar.synthetic_arrays(200, 40, 10, 0).train_y
  root = tmp_path / "out"
  csv = tmp_path / "split.csv"
  csv.write_text("user_id,image_id,class\n" + "".join(
      f"{i // 2},{i},{int(labels[i])}\n" for i in range(4)))
  in_process.run_train_main(  # In this process: the test reads files.
      f"--root_output_dir={root}", "--experiment_name=csv",
      "--dataset=synthetic_cifar10", f"--split_csv={csv}",
      "--algorithm=fedavg", "--total_rounds=1", "--rounds_per_eval=1",
      "--clients_per_round=2", "--client_batch_size=2",
      "--centralized_epochs=0")
  out = root / "csv"
  record = json.loads((out / "experiment.json").read_text())["settings"]
  hparams = json.loads((out / "hparams.json").read_text())
  summary = json.loads((out / "summary.json").read_text())
  for name in ("partition", "alpha", "server_momentum", "virtual_client_size"):
    assert name not in record
    assert name not in hparams
    assert name not in hparams["config"]["data"]
    assert name not in hparams["config"]["methods"]
    assert name not in summary["config"]["data"]
    assert name not in summary["config"]["methods"]
  assert hparams["not_read"]["alpha"] == "not used: --split_csv gives the partition"
  assert hparams["split_csv"] == str(csv) == record["split_csv"]
  assert hparams["resolved"]["partition"] == "csv"
  assert hparams["partition_stats"]["num_clients"] == 2
  assert summary["methods"]["fedavg"]["rounds"] == 1
  assert os.path.isfile(out / "fedavg" / "metrics.csv")
