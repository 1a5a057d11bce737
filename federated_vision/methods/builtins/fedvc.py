"""FedVC: virtual clients (Hsu, Qi & Brown 2020, Sec. 5.3).

Clients are selected with probability proportional to their size, and each
selected client trains on N_VC examples resampled from its data every round
(`algorithms.fedvc.virtual_clients`): a data-side variant, the learning
process is the algorithm's own.
"""

import dataclasses

from federated_vision import config_fields
from federated_vision.methods import components as comp

NAME = "fedvc"


@dataclasses.dataclass(frozen=True)
class FedVCOptions:
  """FedVC's virtual client size."""
  virtual_client_size: int = config_fields.option(
      64, "FedVC's N_VC.", lower_bound=1)


def _settings(config):
  return {"sampler": "size_proportional", "N_VC": config.virtual_client_size}


def _build(config, inputs, spec, sampler):
  del sampler
  from federated_vision.algorithms import fedvc  # pylint: disable=g-import-not-at-top
  spec, sampler = fedvc.virtual_clients(
      spec, inputs.client_ids, inputs.client_sizes, inputs.clients_per_round,
      config.virtual_client_size, inputs.seed)
  return spec, sampler, _settings(config)


comp.register(comp.DataSide(
    name=NAME, label="FedVC", options=FedVCOptions, build=_build,
    # Nothing beyond its data side, which `build_method` applies to the
    # clients of a mixing strategy's data.
    mixing=lambda config, inputs: ({}, _settings(config)),
    examples_per_client=lambda config, n: config.virtual_client_size,
    citation="Hsu, Qi & Brown 2020, Sec. 5.3",
    summary="virtual clients: size-proportional selection, N_VC examples "
            "resampled per round",
    shorthand="Also run each algorithm (and client-work variant) with FedVC "
              "virtual clients (size-proportional sampling, N_VC examples "
              "per client per round).",
    refuses=(("example_transfer", "FedVC: FedVC fixes each client's "
              "examples to N_VC, example transfer adds M to them"),),
    off_settings={"sampler": "uniform", "N_VC": None},
    recorded_as={"virtual_client_size": "N_VC"}))
