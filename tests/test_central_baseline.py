"""federated_vision.experiment.central_baseline: when a recorded centralized baseline is
reused (the same settings, any --total_rounds) and when it is not."""

import json

from federated_vision.experiment import central_baseline
from federated_vision.experiment import config as config_lib

RESULT = {"accuracy": 0.875, "loss": 0.4, "epochs": 2,
          "history": [0.5, 0.875], "seconds": 3.25}


def _config(**values):
  return config_lib.from_values(dict({"centralized_epochs": 2}, **values))


def _write(directory, config, result=RESULT):
  (directory / central_baseline.BASELINE_FILE).write_text(json.dumps({
      "settings": central_baseline.baseline_settings(config),
      "result": result}))


def test_reused_under_the_same_settings_whatever_the_rounds(tmp_path):
  _write(tmp_path, _config(total_rounds=4))
  assert central_baseline.recorded(str(tmp_path), _config(total_rounds=4)) == (
      RESULT)
  assert central_baseline.recorded(str(tmp_path), _config(total_rounds=9)) == (
      RESULT)
  assert "total_rounds" not in central_baseline.baseline_settings(_config())


def test_not_reused_when_anything_else_differs(tmp_path):
  _write(tmp_path, _config())
  for other in (_config(seed=1), _config(client_learning_rate=0.5),
                _config(client_batch_size=7), _config(centralized_epochs=3),
                _config(alpha=0.1)):
    assert central_baseline.recorded(str(tmp_path), other) is None, other


def test_not_reused_from_a_missing_broken_or_incomplete_file(tmp_path):
  config = _config()
  assert central_baseline.recorded(str(tmp_path), config) is None
  path = tmp_path / central_baseline.BASELINE_FILE
  path.write_text("{not json")
  assert central_baseline.recorded(str(tmp_path), config) is None
  path.write_text("[1, 2]")
  assert central_baseline.recorded(str(tmp_path), config) is None
  _write(tmp_path, config, {k: v for k, v in RESULT.items() if k != "loss"})
  assert central_baseline.recorded(str(tmp_path), config) is None
  _write(tmp_path, config, dict(RESULT, epochs=1))  # Not --centralized_epochs.
  assert central_baseline.recorded(str(tmp_path), config) is None
