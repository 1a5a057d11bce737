"""FedVC: federated virtual clients (Hsu, Qi & Brown 2020, Sec. 5.3).

FedVC changes only the data side of FedAvg: each round, clients are drawn
with probability proportional to their size n_k (with replacement,
`sampling.SizeProportionalSampler`), and each selected client trains on
exactly N_VC examples resampled from its data (without replacement when
n_k >= N_VC, with replacement otherwise; `TrainingSpec.virtual_client_size`),
so every virtual client takes the same number of steps. The learning process
is FedAvg's (or FedAvgM's, FedIR's ...) unchanged.
"""

from typing import NamedTuple, Optional, Sequence, Tuple

import tensorflow_federated as tff

from federated_vision.algorithms import fedavg
from federated_vision.algorithms import sampling
from federated_vision.data import client_data


class FedVC(NamedTuple):
  """A FedVC run: FedAvg's process + the virtual-client data side."""
  process: tff.learning.templates.LearningProcess
  spec: client_data.TrainingSpec
  sampler: sampling.SizeProportionalSampler


def virtual_clients(spec: client_data.TrainingSpec,
                    client_ids: Sequence[str], client_sizes: Sequence[int],
                    clients_per_round: int, virtual_client_size: int,
                    seed: int = 0
                    ) -> Tuple[client_data.TrainingSpec,
                               sampling.SizeProportionalSampler]:
  """FedVC's data side for any process: (spec with N_VC, size sampler).

  Args:
    spec: the client training spec (B, E, seed) to extend.
    client_ids: all client ids.
    client_sizes: n_k, aligned with `client_ids`.
    clients_per_round: virtual clients per round.
    virtual_client_size: N_VC >= 1.
    seed: sampler seed.

  Returns:
    (`spec._replace(virtual_client_size=N_VC)`, a `SizeProportionalSampler`).
  """
  if isinstance(virtual_client_size, bool) or not (
      isinstance(virtual_client_size, int) and virtual_client_size >= 1):
    raise ValueError(f"virtual_client_size must be an integer >= 1, got "
                     f"{virtual_client_size!r}")
  sampler = sampling.SizeProportionalSampler(client_ids, client_sizes,
                                             clients_per_round, seed)
  return spec._replace(virtual_client_size=virtual_client_size), sampler


def build_fedvc(
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    client_ids: Sequence[str],
    client_sizes: Sequence[int],
    clients_per_round: int,
    virtual_client_size: int,
    spec: client_data.TrainingSpec = client_data.TrainingSpec(),
    seed: int = 0,
    **fedavg_kwargs,
) -> FedVC:
  """FedVC (Hsu, Qi & Brown 2020): FedAvg on resampled virtual clients.

  Args:
    model_fn: see `fedavg.build_fedavg`.
    client_optimizer: local optimizer.
    server_optimizer: server optimizer (momentum for FedVC + FedAvgM).
    client_ids: all client ids.
    client_sizes: n_k per client id.
    clients_per_round: virtual clients per round.
    virtual_client_size: N_VC.
    spec: local B, E, shuffle and seed; N_VC is set on it.
    seed: sampler seed.
    **fedavg_kwargs: passed to `fedavg.build_fedavg` (client_work, ...).

  Returns:
    `FedVC(process, spec, sampler)`; train with
    `training_loop.run_federated_training(name, process, data, spec,
    sampler, ...)`.
  """
  spec, sampler = virtual_clients(spec, client_ids, client_sizes,
                                  clients_per_round, virtual_client_size, seed)
  process = fedavg.build_fedavg(model_fn, client_optimizer, server_optimizer,
                                **fedavg_kwargs)
  return FedVC(process, spec, sampler)
