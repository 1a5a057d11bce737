"""FedProx's client work (Li et al. 2020, eq. 2): each client minimises its
loss plus (mu / 2) ||w - w_server||^2, i.e. steps along
gradient + mu (w - w_server) (`algorithms.fedprox`; TFF 0.87's own
proximal client work has the opposite sign, see there). Client groups train
it with the same proximal term added to each client's gradients
(`algorithms.fedprox.grouped_update`).
"""

import dataclasses

from federated_vision import config_fields
from federated_vision.methods import components as comp
from federated_vision.methods.builtins import fedavg

NAME = "fedprox"


@dataclasses.dataclass(frozen=True)
class FedProxOptions:
  """FedProx's proximal strength."""
  fedprox_mu: float = config_fields.option(
      0.01, "FedProx's proximal strength mu (Li et al. 2020, eq. 2).",
      lower_bound=0)


def _settings(config):
  """What FedProx's client work records, per client or grouped alike."""
  return {"fedprox_mu": config.fedprox_mu}


def _build(config, inputs):
  from federated_vision.algorithms import fedprox  # pylint: disable=g-import-not-at-top
  work = fedprox.build_fedprox_client_work(
      inputs.model_fn, fedavg.client_sgd(config), config.fedprox_mu)
  return work, _settings(config)


def _grouped(config, inputs):
  """The grouped update and the settings `_build` records."""
  del inputs
  from federated_vision.algorithms import fedprox  # pylint: disable=g-import-not-at-top
  return fedprox.grouped_update(config.fedprox_mu), _settings(config)


comp.register(comp.ClientWork(
    name=NAME, label="FedProx", options=FedProxOptions,
    reads=("client_learning_rate",), build=_build, grouped_update=_grouped,
    citation="Li et al. 2020, Federated Optimization in Heterogeneous "
             "Networks, eq. 2",
    summary="proximal client work: gradient + mu (w - w_server)",
    shorthand="Also run each algorithm with FedProx's proximal client work "
              "(Li et al. 2020, eq. 2).",
    off_settings={"fedprox_mu": None}))
