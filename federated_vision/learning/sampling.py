"""Seeded, reproducible per-round client sampling.

The clients of round r depend only on (seed, r): a generator is seeded with
the pair, so a resumed run samples exactly what an uninterrupted one did.
(`tff.simulation.build_uniform_sampling_fn` silently ignores numpy integer
seeds; these samplers take any integer.)
"""

from typing import List, Optional, Sequence

import numpy as np

from federated_vision.data import round_keys


def _rng(seed: int, round_num: int) -> np.random.Generator:
  return np.random.default_rng([int(seed), int(round_num)])


class UniformSampler:
  """FedAvg: `clients_per_round` distinct clients, uniformly at random."""
  name = "uniform"

  def __init__(self, client_ids: Sequence[str], clients_per_round: int,
               seed: int = 0):
    if not 0 < clients_per_round <= len(client_ids):
      raise ValueError(f"clients_per_round must be in [1, {len(client_ids)}] "
                       f"(the number of clients), got {clients_per_round}")
    self.client_ids = list(client_ids)
    self.clients_per_round = clients_per_round
    self.seed = seed

  def select(self, round_num: int) -> List[str]:
    idx = _rng(self.seed, round_num).choice(
        len(self.client_ids), self.clients_per_round, replace=False)
    return [self.client_ids[i] for i in idx]

  def round_keys(self, round_num: int) -> List[str]:
    return [round_keys.round_key(c, round_num)
            for c in self.select(round_num)]


class SizeProportionalSampler:
  """FedVC (Hsu, Qi & Brown 2020): P(select client k) proportional to n_k.

  Each of the `clients_per_round` virtual clients is an independent draw (with
  replacement), so selection frequencies are exactly proportional to client
  size; a client drawn twice in a round yields two virtual clients with
  independent resamples (slots 0, 1, ... in their round keys).
  """
  name = "size_proportional"

  def __init__(self, client_ids: Sequence[str], client_sizes: Sequence[int],
               clients_per_round: int, seed: int = 0):
    sizes = np.asarray(client_sizes, np.float64)
    if sizes.shape != (len(client_ids),) or np.any(sizes < 0) or sizes.sum() <= 0:
      raise ValueError("client_sizes must give a non-negative size per client "
                       "with a positive total")
    if clients_per_round <= 0:
      raise ValueError(f"clients_per_round must be > 0, got {clients_per_round}")
    self.client_ids = list(client_ids)
    self.probabilities = sizes / sizes.sum()
    self.clients_per_round = clients_per_round
    self.seed = seed
    self._cdf = np.cumsum(self.probabilities)
    self._cdf[-1] = 1.0

  def select(self, round_num: int) -> List[str]:
    u = _rng(self.seed, round_num).random(self.clients_per_round)
    idx = np.searchsorted(self._cdf, u, side="right")
    return [self.client_ids[i] for i in idx]

  def round_keys(self, round_num: int) -> List[str]:
    return [round_keys.round_key(c, round_num, slot)
            for slot, c in enumerate(self.select(round_num))]
