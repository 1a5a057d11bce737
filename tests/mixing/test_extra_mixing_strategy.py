"""A mixing strategy registered from --extra_modules trains through
train_main (issue 17 item 1, acceptance 4b):
tests/fixtures/extra_mixing_strategy.py's 'parallel_shared' (own hyper-parameter
`federated_share` = 0.25) beside the built-in 'parallel' with
--merge_weight=0.25 gives the same numbers."""

import csv
import json

import pytest

from experiments import cli
from federated_vision.experiment import config as config_lib
from federated_vision.mixing import strategy as mixing_strategies
from federated_vision.errors import ConfigError

# Columns of metrics.csv that are numbers of the model (not timings).
VALUES = ("train_loss", "train_accuracy", "test_loss", "test_accuracy",
          "test_accuracy_missing", "test_accuracy_present")


def _rows(path):
  with open(path) as f:
    return list(csv.DictReader(f))


def test_registered_strategy_reads_its_flags_and_keeps_its_own_value():
  cli.import_extra_modules(["extra_mixing_strategy"])
  s = mixing_strategies.get_strategy("parallel_shared")
  assert s.flags_read() == ("central_steps", "central_batch_size",
                       "central_learning_rate")
  params = s.params_from(config_lib.MixingConfig(
      mixing=("parallel_shared",), central_steps=3, merge_weight=0.9))
  assert (params.federated_share, params.central_steps) == (0.25, 3)
  # --merge_weight is not its flag: given with it alone, one error line.
  with pytest.raises(ConfigError, match="--merge_weight: .*only used with "
                     "--mixing=parallel"):
    config_lib.from_values({"mixing": ["parallel_shared"],
                            "merge_weight": 0.3}, ("merge_weight",))
  with pytest.raises(ConfigError, match="--mixing=parallel_shared and --fedvc"):
    config_lib.from_values({"mixing": ["parallel_shared"], "fedvc": True})
  with pytest.raises(ConfigError, match="--central_steps"):
    config_lib.from_values({"mixing": ["parallel_shared"], "central_steps": 0})


def test_train_main_trains_the_registered_strategy(parse, tmp_path):
  from experiments import train_main  # pylint: disable=g-import-not-at-top
  parse("--extra_modules=extra_mixing_strategy", "--dataset=digits",
        "--missing_classes=8,9", "--mixing=none,parallel,parallel_shared",
        "--merge_weight=0.25", "--central_steps=2", "--central_batch_size=8",
        "--methods=fedavgm", "--num_clients=6", "--clients_per_round=3",
        "--client_batch_size=20", "--total_rounds=2", "--rounds_per_eval=1",
        "--centralized_epochs=0", "--seed=3", f"--root_output_dir={tmp_path}",
        "--experiment_name=extra_mix")
  train_main.main(["train_main"])
  out = tmp_path / "extra_mix"
  summary = json.loads((out / "summary.json").read_text())
  assert list(summary["methods"]) == ["fedavgm+none", "fedavgm+parallel",
                                      "fedavgm+parallel_shared"]
  shared = summary["methods"]["fedavgm+parallel_shared"]
  assert shared["rounds"] == 2 and shared["status"] == "completed"
  settings = shared["settings"]
  assert (settings["mixing"], settings["federated_share"],
          settings["central_steps"], settings["central_batch_size"],
          settings["own_builder"], settings["server_optimizer"]) == (
              "parallel_shared", 0.25, 2, 8, True, "sgdm")
  assert "merge_weight" not in settings
  assert summary["methods"]["fedavgm+parallel"]["settings"][
      "merge_weight"] == 0.25
  ours = _rows(out / "fedavgm+parallel_shared" / "metrics.csv")
  builtin = _rows(out / "fedavgm+parallel" / "metrics.csv")
  plain = _rows(out / "fedavgm+none" / "metrics.csv")
  assert [r["round"] for r in ours] == ["1", "2"]
  for a, b in zip(ours, builtin):
    assert [a[k] for k in VALUES] == [b[k] for k in VALUES]  # Bit-identical.
  # ... and not FedAvgM alone: the centralized steps changed the model.
  assert [ours[-1][k] for k in VALUES] != [plain[-1][k] for k in VALUES]
