"""FedVC: federated virtual clients (Hsu, Qi & Brown 2020, Sec. 5.3).

FedVC changes only the data side of FedAvg: each round, clients are drawn
with probability proportional to their size n_k (with replacement,
`sampling.SizeProportionalSampler`), and each selected client trains on
exactly N_VC examples resampled from its data (without replacement when
n_k >= N_VC, with replacement otherwise; `TrainingSpec.virtual_client_size`),
so every virtual client takes the same number of steps. The learning process
is the algorithm's own (FedAvg's, FedAvgM's, FedIR's ...), unchanged.
Importing this module does not import TensorFlow.
"""

import dataclasses
from typing import Any, NamedTuple, Sequence

from federated_vision import config_fields
from federated_vision import methods


@dataclasses.dataclass(frozen=True)
class FedVCOptions:
  """FedVC's virtual client size."""
  virtual_client_size: int = config_fields.option(
      64, "FedVC's N_VC.", lower_bound=1)


def virtual_clients(spec, client_ids: Sequence[str],
                    client_sizes: Sequence[int], clients_per_round: int,
                    virtual_client_size: int, seed: int = 0):
  """FedVC's data side for any process: (spec with N_VC, size sampler).

  Args:
    spec: the client `TrainingSpec` (B, E, seed) to extend.
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
  from federated_vision.learning import sampling  # pylint: disable=g-import-not-at-top
  sampler = sampling.SizeProportionalSampler(client_ids, client_sizes,
                                             clients_per_round, seed)
  return spec._replace(virtual_client_size=virtual_client_size), sampler


class FedVC(NamedTuple):
  """A FedVC run: the algorithm's process + the virtual-client data side."""
  process: Any
  spec: Any
  sampler: Any


def build_fedvc(model_fn, client_optimizer, server_optimizer=None, *,
                client_ids: Sequence[str], client_sizes: Sequence[int],
                clients_per_round: int, virtual_client_size: int, spec=None,
                seed: int = 0, **fedavg_kwargs) -> FedVC:
  """FedVC (Hsu, Qi & Brown 2020): FedAvg (`fedavg.build_fedavg`, with
  `fedavg_kwargs`) on resampled virtual clients; train with
  `training_loop.run_federated_training(name, process, data, spec,
  sampler, ...)`. `spec`: local B, E, shuffle and seed (default
  `TrainingSpec()`); N_VC is set on it."""
  from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data  # pylint: disable=g-import-not-at-top
  spec, sampler = virtual_clients(spec or client_data.TrainingSpec(),
                                  client_ids, client_sizes, clients_per_round,
                                  virtual_client_size, seed)
  process = fedavg.build_fedavg(model_fn, client_optimizer, server_optimizer,
                                **fedavg_kwargs)
  return FedVC(process, spec, sampler)


def _build(config, inputs, spec, sampler):
  del sampler
  return virtual_clients(spec, inputs.client_ids, inputs.client_sizes,
                         inputs.clients_per_round,
                         config.virtual_client_size, inputs.seed) + ({},)


methods.register(methods.DataSide(
    name="fedvc", label="FedVC", options=FedVCOptions, build=_build,
    citation="Hsu, Qi & Brown 2020, Sec. 5.3",
    summary="virtual clients: size-proportional selection, N_VC examples "
            "resampled per round",
    shorthand="Also run each algorithm (and client-work variant) with FedVC "
              "virtual clients (size-proportional sampling, N_VC examples "
              "per client per round).",
    refuses=(("example_transfer", "FedVC: FedVC fixes each client's "
              "examples to N_VC, example transfer adds M to them"),)))
