"""Rounds-to-target-accuracy, speedups and McMahan et al.'s FedAvg knobs.

Plain Python / numpy; importing this module does not import TensorFlow.

McMahan et al. (Communication-Efficient Learning of Deep Networks from
Decentralized Data, AISTATS 2017) report the number of communication rounds
needed to first reach a target test accuracy, "taking the best accuracy
achieved so far" (the curve is made monotone) and interpolating linearly
between evaluated rounds; speedups are ratios of such round counts against a
reference run (FedSGD). Hsu, Qi & Brown 2019 use the same measure across
Dirichlet concentrations alpha.

McMahan's knobs: C, the fraction of the K clients selected each round; B, the
local batch size (B = inf means the full local data set as one batch); E,
local epochs. FedSGD is FedAvg with B = inf and E = 1 (the "fedsgd"
algorithm of `federated_vision.methods` owns that data side).
"""

import math
from typing import Optional, Sequence

import numpy as np


def best_so_far(accuracies: Sequence[float]) -> np.ndarray:
  """The monotone (running-maximum) version of an accuracy curve.

  NaN entries (e.g. a diverged evaluation) never raise the running maximum.

  Args:
    accuracies: accuracy at each evaluated round, in round order.

  Returns:
    float64 array, element i = max(accuracies[:i + 1]) ignoring NaNs.
  """
  acc = np.asarray(accuracies, dtype=np.float64)
  if acc.ndim != 1:
    raise ValueError(f"accuracies must be 1-D, got shape {acc.shape}")
  return np.fmax.accumulate(acc) if acc.size else acc


def _check_curve(rounds, accuracies):
  r = np.asarray(rounds, dtype=np.float64)
  a = np.asarray(accuracies, dtype=np.float64)
  if r.ndim != 1 or a.ndim != 1 or r.shape != a.shape:
    raise ValueError(f"rounds and accuracies must be 1-D of equal length, got "
                     f"shapes {r.shape} and {a.shape}")
  if r.size and (not np.all(np.isfinite(r)) or np.any(np.diff(r) <= 0)):
    raise ValueError("rounds must be finite and strictly increasing")
  return r, a


def rounds_to_target(rounds: Sequence[float], accuracies: Sequence[float],
                     target: float) -> Optional[float]:
  """Rounds needed to first reach `target` accuracy (McMahan et al. 2017).

  The curve is made monotone with `best_so_far`; the answer is the first
  evaluated round whose best-so-far accuracy equals the target, or otherwise
  the linear interpolation between the last evaluated round below the target
  and the first one above it. Rounds may be unevenly spaced. If the first
  evaluated round is already at or above the target, that round is returned
  (nothing earlier was measured).

  Args:
    rounds: evaluated round numbers, strictly increasing.
    accuracies: test accuracy at those rounds.
    target: the target accuracy.

  Returns:
    The (fractional) round number, or None if the target is never reached.

  Raises:
    ValueError: if `rounds`/`accuracies` are malformed or `target` is NaN.
  """
  r, a = _check_curve(rounds, accuracies)
  if not isinstance(target, (int, float, np.floating, np.integer)) or math.isnan(target):
    raise ValueError(f"target must be a number, got {target!r}")
  best = best_so_far(a)
  hit = np.flatnonzero(best >= target)
  if hit.size == 0:
    return None
  i = int(hit[0])
  if i == 0 or best[i] == target:
    return float(r[i])
  # best[i - 1] < target < best[i]; best[i] == a[i] since it just rose.
  r0, r1, a0, a1 = r[i - 1], r[i], best[i - 1], best[i]
  if math.isnan(a0):  # Nothing finite before: no segment to interpolate on.
    return float(r1)
  return float(r0 + (target - a0) / (a1 - a0) * (r1 - r0))


def speedup(reference_rounds: Optional[float],
            rounds: Optional[float]) -> Optional[float]:
  """Speedup of a run over a reference run: reference_rounds / rounds.

  McMahan et al. 2017 Tables 2 and 4 report e.g. FedAvg's rounds to target
  relative to FedSGD's. Either being None (target never reached) gives None.

  Args:
    reference_rounds: rounds the reference (e.g. FedSGD) needed.
    rounds: rounds the run needed.

  Returns:
    The ratio (> 1 means the run is faster), or None.
  """
  if reference_rounds is None or rounds is None:
    return None
  for name, value in (("reference_rounds", reference_rounds), ("rounds", rounds)):
    if not value > 0 or math.isinf(value):
      raise ValueError(f"{name} must be a positive finite number, got {value}")
  return float(reference_rounds) / float(rounds)


def speedup_to_target(reference_curve, curve, target: float) -> Optional[float]:
  """`speedup` of two (rounds, accuracies) curves at `target` accuracy."""
  return speedup(rounds_to_target(*reference_curve, target),
                 rounds_to_target(*curve, target))


def clients_per_round(client_fraction: float, num_clients: int) -> int:
  """m = max(round(C * K), 1) clients selected per round (McMahan et al.).

  Rounding: C * K is first rounded to 9 decimals (so 0.1 * 30 is exactly 3,
  not 3.0000000000000004), then halves round *up* (C = 0.05, K = 50 gives
  2.5 -> 3), unlike Python's round-half-to-even. C = 0 selects one client per
  round, McMahan's "C = 0" rows.

  Args:
    client_fraction: C in [0, 1].
    num_clients: K >= 1.

  Returns:
    The number of clients per round, in [1, K].
  """
  if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)) \
      or num_clients < 1:
    raise ValueError(f"num_clients must be an integer >= 1, got {num_clients!r}")
  if not 0 <= client_fraction <= 1:  # Also rejects NaN.
    raise ValueError(f"client_fraction must be in [0, 1], got {client_fraction!r}")
  m = math.floor(round(client_fraction * num_clients, 9) + 0.5)
  return int(min(max(m, 1), num_clients))


def local_updates_per_round(num_examples: int, batch_size: Optional[int],
                            epochs: int) -> float:
  """McMahan et al.'s u = E * n / B expected local updates per round.

  B = None stands for B = inf (full-batch): u = E. This is McMahan's
  *expected* count (Table 2's u column); `client_data.num_local_batches` gives
  the exact number of batches the pipeline produces.
  """
  if num_examples < 0:
    raise ValueError(f"num_examples must be >= 0, got {num_examples}")
  if epochs < 1:
    raise ValueError(f"epochs must be >= 1, got {epochs}")
  if batch_size is None or math.isinf(batch_size):
    return float(epochs)
  if batch_size <= 0:
    raise ValueError(f"batch_size must be > 0 or None, got {batch_size}")
  return epochs * num_examples / batch_size


def is_fedsgd(batch_size: Optional[int], epochs: int) -> bool:
  """FedSGD is FedAvg with B = inf (batch_size None) and E = 1."""
  return batch_size is None and epochs == 1
