"""Accuracy curves from metrics rows, and reading them at a round or batch.

TensorFlow-free (numpy only), so reports that read finished run directories
(`federated_vision.reproduction`) share the exact definitions the runner uses
(`evaluation.reporting`, `evaluation.metrics`).
"""

from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np


def curve(rows: Sequence[Mapping[str, object]], x_key: str = "round"
          ) -> Tuple[List[float], List[float]]:
  """(x, test accuracy) of the evaluated rows (metrics.csv rows or the
  training loop's dicts); rows without a test accuracy are skipped, NaN
  stays NaN."""
  xs, ys = [], []
  for r in rows:
    acc = r.get("test_accuracy")
    if acc not in (None, ""):
      xs.append(float(r[x_key]))
      ys.append(float(acc))
  return xs, ys


def accuracy_at(xs: Sequence[float], accuracies: Sequence[float],
                x: float) -> Optional[float]:
  """Accuracy of the last evaluation at or before `x` (None if none).

  With xs = rounds this is Acc@Round; with xs = cumulative batch budgets it is
  Acc@Batch (Hsu, Qi & Brown 2020).
  """
  xs = np.asarray(xs, np.float64)
  accuracies = np.asarray(accuracies, np.float64)
  if xs.shape != accuracies.shape:
    raise ValueError("xs and accuracies must have the same length")
  if xs.size and np.any(np.diff(xs) < 0):
    raise ValueError("xs must be non-decreasing")
  i = np.searchsorted(xs, x, side="right") - 1
  return None if i < 0 else float(accuracies[i])


def minibatch_gradients(rows: Sequence[Mapping[str, object]]) -> List[int]:
  """Minibatch gradient computations after each round of metrics.csv rows,
  summed over the round's clients (McMahan et al. 2017 §3 / Figure 9): the
  running sum of clients x batch budget, exact when every client of a round
  computes the round's batch budget (its largest client's local batches),
  i.e. clients of one size.

  Raises:
    ValueError: a row without an integer `clients` or `batch_budget` >= 0.
  """
  total, out = 0, []
  for r in rows:
    clients, budget = r.get("clients"), r.get("batch_budget")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for v in (clients, budget)):
      raise ValueError(f"round {r.get('round')}: clients={clients!r}, "
                       f"batch_budget={budget!r}: integers >= 0 needed")
    total += clients * budget
    out.append(total)
  return out
