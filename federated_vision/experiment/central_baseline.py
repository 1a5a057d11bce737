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
trained with (`run_record.recorded_settings` without `total_rounds`); any
difference, an unreadable file or a diverged baseline means training anew.
`--overwrite` clears the directory, the file with it.
"""

import json
import os
from typing import Optional

from federated_vision.experiment import config as config_lib
from federated_vision.experiment import run_record

BASELINE_FILE = "centralized.json"
RESULT_FIELDS = ("accuracy", "loss", "epochs", "history", "seconds")


def baseline_settings(config: config_lib.ExperimentConfig) -> dict:
  """The recorded settings the baseline was trained under, JSON-normal
  (lists, not tuples), without `total_rounds` (a rerun may extend it)."""
  settings = dict(run_record.recorded_settings(config))
  settings.pop("total_rounds", None)
  return json.loads(json.dumps(settings, sort_keys=True))


def recorded(directory: str, config: config_lib.ExperimentConfig
             ) -> Optional[dict]:
  """{field: value} (`RESULT_FIELDS`) of the baseline an earlier invocation
  trained in `directory` under `config`'s settings, or None."""
  try:
    with open(os.path.join(directory, BASELINE_FILE)) as f:
      saved = json.load(f)
  except (OSError, ValueError):
    return None
  if not isinstance(saved, dict):
    return None
  result = saved.get("result")
  if (saved.get("settings") != baseline_settings(config)
      or not isinstance(result, dict)
      or any(k not in result for k in RESULT_FIELDS)
      or result["epochs"] != config.training.centralized_epochs):
    return None
  return {k: result[k] for k in RESULT_FIELDS}


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
  saved = recorded(exp.output_dir, config)
  if saved is not None:
    print(f"[centralized] {epochs} epochs: reusing the baseline an earlier "
          f"invocation trained ({BASELINE_FILE}: accuracy "
          f"{saved['accuracy']:.4f}), not training it again")
    return centralized.CentralizedResult(**saved), True
  print(f"[centralized] training {epochs} epochs on the pooled client data")
  m = config.methods
  result = centralized.train_centralized(
      exp.keras_model_fn, exp.fed_data, eval_ds, m.client_learning_rate,
      m.client_batch_size or 32, epochs, seed=config.training.seed)
  if finite(result):
    reporting.write_json(os.path.join(exp.output_dir, BASELINE_FILE), {
        "settings": baseline_settings(config), "result": result._asdict()})
  return result, False
