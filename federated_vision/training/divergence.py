"""Non-finite values in a round: what `on_divergence` acts on."""

import math
from typing import List, Mapping, Optional

import numpy as np
import tensorflow as tf

from federated_vision.training import run_files


def all_finite(structure) -> bool:
  """Whether every float/complex value of a nested structure is finite."""
  return all(np.all(np.isfinite(np.asarray(t)))
             for t in tf.nest.flatten(structure)
             if np.asarray(t).dtype.kind in "fc")


def non_finite_reasons(metrics: Mapping[str, object], model_weights,
                       evaluation: Optional[Mapping[str, float]] = None
                       ) -> List[str]:
  """What was non-finite in one round (empty when nothing was).

  Args:
    metrics: the learning process output's metrics: `client_work` holds
      `train` ({'loss', ...}) and, for processes built by
      `federated_vision.algorithms`, `clients_dropped_non_finite`; the finalizer
      of `build_apply_optimizer_finalizer` reports `update_non_finite` (1 when
      the averaged update was non-finite and not applied).
    model_weights: the global model weights after the round.
    evaluation: {'loss', 'accuracy'} if evaluated this round.

  Returns:
    One phrase per finding, in a fixed order.
  """
  reasons = []
  work = metrics.get("client_work", {})
  dropped = int(work.get(run_files.DROPPED_NON_FINITE, 0) or 0)
  if dropped:
    reasons.append(f"{dropped} client update(s) non-finite and dropped")
  if int(metrics.get("finalizer", {}).get("update_non_finite", 0) or 0):
    reasons.append("the aggregated update was non-finite and not applied")
  loss = float(work.get("train", {}).get("loss", 0.0))
  if not math.isfinite(loss):
    reasons.append(f"training loss {loss}")
  if not all_finite(model_weights):
    reasons.append("the model weights are non-finite")
  for key, value in (evaluation or {}).items():
    if not math.isfinite(float(value)):
      reasons.append(f"test {key} {float(value)}")
  return reasons
