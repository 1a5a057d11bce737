"""federated_vision.experiment.central_baseline: when a recorded centralized baseline is
reused (the same settings, any --total_rounds) and when it is not (another
setting; a damaged, edited or half-written file: issue 29)."""

import json

import pytest

from federated_vision.experiment import central_baseline
from federated_vision.experiment import config as config_lib
from federated_vision.evaluation import reporting

RESULT = {"accuracy": 0.875, "loss": 0.4, "epochs": 2,
          "history": [0.5, 0.875], "seconds": 3.25}


def _config(**values):
  return config_lib.from_values(dict({"centralized_epochs": 2}, **values))


def _write(directory, config, result=RESULT, sealed=True):
  """centralized.json as `train_or_reuse` writes it (sealed: with its
  checksum)."""
  reporting.write_json(str(directory / central_baseline.BASELINE_FILE), {
      "settings": central_baseline.baseline_settings(config),
      "result": result}, sealed=sealed)


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
    assert central_baseline.check_recorded(str(tmp_path), other) == (
        None, "it was trained under other settings"), other


def test_not_reused_from_a_missing_broken_or_incomplete_file(tmp_path):
  config = _config()
  assert central_baseline.check_recorded(str(tmp_path), config) == (None, None)
  path = tmp_path / central_baseline.BASELINE_FILE
  path.write_text("{not json")
  assert central_baseline.recorded(str(tmp_path), config) is None
  path.write_text("[1, 2]")
  assert central_baseline.recorded(str(tmp_path), config) is None
  _write(tmp_path, config, {k: v for k, v in RESULT.items() if k != "loss"})
  assert central_baseline.recorded(str(tmp_path), config) is None
  _write(tmp_path, config, dict(RESULT, epochs=1))  # Not --centralized_epochs.
  assert central_baseline.recorded(str(tmp_path), config) is None


def _edit(path, **result):
  """centralized.json with `result` fields replaced, its checksum kept."""
  saved = json.loads(path.read_text())
  saved["result"].update(result)
  path.write_text(json.dumps(saved))


@pytest.mark.parametrize("edit, why", [
    ({"accuracy": 0.9}, "does not match its sha256 checksum"),
    ({"accuracy": None}, "does not match its sha256 checksum"),
    ({"accuracy": "0.875"}, "does not match its sha256 checksum"),
    ({"history": [0.5]}, "does not match its sha256 checksum"),
])
def test_an_edited_baseline_is_never_trusted(tmp_path, edit, why):
  # Acceptance 2 (issue 29): an edited accuracy (or a null, a string: a
  # traceback before) is noticed by the checksum, then trained again.
  config = _config()
  _write(tmp_path, config)
  _edit(tmp_path / central_baseline.BASELINE_FILE, **edit)
  result, problem = central_baseline.check_recorded(str(tmp_path), config)
  assert result is None and why in problem


@pytest.mark.parametrize("result, why", [
    (dict(RESULT, accuracy=None), "its accuracy is not the last epoch's"),
    (dict(RESULT, accuracy=0.9), "its accuracy is not the last epoch's"),
    (dict(RESULT, history=[0.5, "0.875"]), "its history is not one accuracy in [0, 1] per epoch"),
    (dict(RESULT, history=[0.5]), "its history is not one accuracy in [0, 1] per epoch"),
    (dict(RESULT, loss=None), "its loss or seconds is not a finite number"),
    (dict(RESULT, loss="inf"), "its loss or seconds is not a finite number"),
])
def test_a_sealed_but_inconsistent_result_is_not_reused(tmp_path, result, why):
  config = _config()
  _write(tmp_path, config, result)  # Sealed as written: the fields are checked.
  assert central_baseline.check_recorded(str(tmp_path), config) == (None, why)


def test_no_checksum_or_cut_short_is_not_reused(tmp_path):
  config = _config()
  _write(tmp_path, config, sealed=False)
  assert central_baseline.check_recorded(str(tmp_path), config) == (
      None, "has no sha256 checksum")
  _write(tmp_path, config)
  path = tmp_path / central_baseline.BASELINE_FILE
  whole = path.read_bytes()
  for cut in (1, len(whole) // 2, len(whole) - 3):
    path.write_bytes(whole[:cut])
    result, problem = central_baseline.check_recorded(str(tmp_path), config)
    assert result is None and problem.startswith("not valid JSON"), cut
