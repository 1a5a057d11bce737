"""A run's centralized baseline: trained once per run directory, then reused.

The baseline (`federated_vision.centralized.train_centralized`: the pooled
client data, `--centralized_epochs`, the clients' learning rate and batch
size, the run's seed) is what relative accuracy divides by (Hsu, Qi & Brown
2020, Sec. 6.0.1: "We evaluate the relative accuracy ... The centralized
training baseline uses the same configurations and hyperparameters").
It depends on none of the federated settings that a rerun of the same
directory may change (`run_record`: only `--total_rounds` may grow), so a
rerun -- the same command again, or an extension to more rounds -- reuses
the one an earlier invocation trained (`centralized.json`, written once it
completed with finite numbers) instead of training it again (ours: it can
cost hours on CIFAR or iNaturalist). The file holds the settings it was
trained with (`run_record.recorded_settings` without `total_rounds`) and a
sha256 checksum (`training.run_files.seal`): another setting, a damaged,
edited or half-written file (checksum, strict JSON, every number finite,
accuracy = the last epoch's, one per epoch) means training anew, said in one
line; it is never trusted. `--overwrite` clears the directory, the file with
it.
"""

import json
import os
from typing import Optional, Tuple

from federated_vision.experiment import config as config_lib
from federated_vision.experiment import run_record
from federated_vision.training import run_files

BASELINE_FILE = "centralized.json"
RESULT_FIELDS = ("accuracy", "loss", "epochs", "history", "seconds")


def batch_size(config: config_lib.ExperimentConfig) -> int:
  """The baseline's minibatch size: --client_batch_size (32 for B = inf)."""
  return config.methods.client_batch_size or 32


def baseline_settings(config: config_lib.ExperimentConfig) -> dict:
  """The recorded settings the baseline was trained under, JSON-normal
  (lists, not tuples), without `total_rounds` (a rerun may extend it)."""
  settings = dict(run_record.recorded_settings(config))
  settings.pop("total_rounds", None)
  return json.loads(json.dumps(settings, sort_keys=True))


def _result_problem(result, epochs: int) -> Optional[str]:
  """What makes a recorded result unusable (None: nothing)."""
  if not isinstance(result, dict) or any(k not in result
                                         for k in RESULT_FIELDS):
    return f"its result lacks one of {', '.join(RESULT_FIELDS)}"
  if result["epochs"] != epochs:
    return f"it holds {result['epochs']!r} epochs, not {epochs}"
  history = result["history"]
  if not (isinstance(history, list) and len(history) == epochs
          and all(run_files.is_number(a) and 0 <= a <= 1 for a in history)):
    return "its history is not one accuracy in [0, 1] per epoch"
  if result["accuracy"] != history[-1]:
    return "its accuracy is not the last epoch's"
  if not (run_files.is_number(result["loss"])
          and run_files.is_number(result["seconds"])):
    return "its loss or seconds is not a finite number"
  return None


def check_recorded(directory: str, config: config_lib.ExperimentConfig
                   ) -> Tuple[Optional[dict], Optional[str]]:
  """({field: value} (`RESULT_FIELDS`), None) of the baseline an earlier
  invocation trained in `directory` under `config`'s settings, else (None,
  why it cannot be reused; None when there is no file)."""
  path = os.path.join(directory, BASELINE_FILE)
  try:
    saved = run_files.read_json(path, "training it again", sealed=True,
                                missing_ok=True)
  except run_files.RunFileError as e:
    return None, e.problem
  if saved is None:
    return None, None
  if saved.get("settings") != baseline_settings(config):
    return None, "it was trained under other settings"
  problem = _result_problem(saved.get("result"),
                            config.training.centralized_epochs)
  if problem:
    return None, problem
  return {k: saved["result"][k] for k in RESULT_FIELDS}, None


def recorded(directory: str, config: config_lib.ExperimentConfig
             ) -> Optional[dict]:
  """`check_recorded`'s result fields, or None."""
  return check_recorded(directory, config)[0]


def train_or_reuse(exp, eval_ds, finite):
  """(the run's `centralized.CentralizedResult`, whether it was reused):
  the recorded one if `recorded` finds it, else trained now and, if
  `finite(result)`, recorded for the next invocation; (None, False) with
  --centralized_epochs=0."""
  # Local: both import TensorFlow; only when a run gets here.
  from federated_vision import centralized  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  config = exp.config
  epochs = config.training.centralized_epochs
  if epochs <= 0:
    return None, False
  saved, problem = check_recorded(exp.output_dir, config)
  if problem:
    print(f"[centralized] {os.path.join(exp.output_dir, BASELINE_FILE)} "
          f"cannot be reused ({problem}); training the baseline again")
  if saved is not None:
    print(f"[centralized] {epochs} epochs: reusing the baseline an earlier "
          f"invocation trained ({BASELINE_FILE}: accuracy "
          f"{saved['accuracy']:.4f}), not training it again")
    return centralized.CentralizedResult(**saved), True
  print(f"[centralized] training {epochs} epochs on the pooled client data")
  m = config.methods
  result = centralized.train_centralized(
      exp.keras_model_fn, exp.fed_data, eval_ds, m.client_learning_rate,
      batch_size(config), epochs, seed=config.training.seed)
  if finite(result):
    reporting.write_json(os.path.join(exp.output_dir, BASELINE_FILE), {
        "settings": baseline_settings(config), "result": result._asdict()},
                         sealed=True)
  return result, False
