"""The configuration is validated once per train_main process (issue 27,
acceptance 5): `check_config` validates the command line before
TensorFlow's import (`config.checked_flags`) and `main` runs that validated
config (`runner.run(config, resolved)`); nothing validates it again and no
cache hides repeated checks."""

import pytest

from federated_vision.experiment import config as config_lib
from federated_vision.methods import method_config
from tests.fixtures import in_process


@pytest.fixture
def counted(monkeypatch):
  """Counts experiment-config and method validations."""
  calls = {"config": 0, "method": 0}
  config_validate, method_validate = config_lib.validate, method_config.validate

  def count_config(*args, **kwargs):
    calls["config"] += 1
    return config_validate(*args, **kwargs)

  def count_method(*args, **kwargs):
    calls["method"] += 1
    return method_validate(*args, **kwargs)

  monkeypatch.setattr(config_lib, "validate", count_config)
  monkeypatch.setattr(method_config, "validate", count_method)
  from federated_vision import methods  # pylint: disable=g-import-not-at-top
  from federated_vision.methods import build  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(methods, "validate", count_method)
  monkeypatch.setattr(build, "validate", count_method)
  return calls


def test_train_main_validates_its_config_exactly_once(counted, tmp_path):
  proc = in_process.run(
      "experiments.train_main", "--total_rounds=1", "--centralized_epochs=0",
      "--methods=fedavg,fedavg@adam:server_learning_rate=0.01",
      f"--root_output_dir={tmp_path}", "--experiment_name=once")
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert counted["config"] == 1
  # Each method once, in config validation: the run builds its validated
  # methods (`build_method(..., validated=True)`; a method built by hand is
  # validated when built, with the same one-line errors).
  assert counted["method"] == 2


def test_a_refused_flag_is_validated_once_too(counted, tmp_path):
  proc = in_process.run("experiments.train_main", "--adam_beta_1=1.5",
                        f"--root_output_dir={tmp_path}")
  assert proc.returncode == 2
  assert proc.stderr.strip().endswith("--adam_beta_1=1.5: must be in [0, 1)")
  assert counted["config"] == 1
