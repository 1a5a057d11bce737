"""FedProx (Li, Sahu, Zaheer, Sanjabi, Talwalkar & Smith 2020, "Federated
Optimization in Heterogeneous Networks", eq. 2).

Client k minimises h_k(w; w^t) = F_k(w) + (mu / 2) ||w - w^t||^2 from the
global weights w^t, so each local step's gradient is
grad F_k(w) + mu (w - w^t): the model's loss and the gradient term
mu (w - w^t) (`objective`). FedAvg's round runs it per client, through
client groups and in the mixing strategies.

Why not TFF's: TFF 0.87's `proximal_client_work` (what
`tff.learning.algorithms.build_weighted_fed_prox` composes) adds
mu (w^t - w), the opposite sign, which pushes the client away from the
global model (`tensorflow_federated/python/learning/templates/
proximal_client_work.py`, `lambda x, y: delta_l2_regularizer * (y - x)`
over (current, initial) weights; tests/methods/test_methods.py shows both
against a numpy reference of eq. 2).
"""

import dataclasses

from federated_vision import config_fields
from federated_vision import methods


@dataclasses.dataclass(frozen=True)
class FedProxOptions:
  """FedProx's proximal strength."""
  fedprox_mu: float = config_fields.option(
      0.01, "FedProx's proximal strength mu (Li et al. 2020, eq. 2).",
      lower_bound=0)


def proximal(mu: float):
  """Eq. 2's local objective: F_k(w), with the gradient term mu (w - w^t)."""
  if not mu >= 0:
    raise ValueError(f"mu must be >= 0, got {mu}")

  def objective(output, batch, client):
    del batch
    return output.loss, [mu * (w - w0)
                         for w, w0 in zip(client.weights, client.start)]
  return objective


def build_fedprox_client_work(model_fn, client_optimizer, mu: float,
                              client_weighting=None,
                              loop_implementation=None):
  """FedProx's per-client client work (`local.build_client_work` of eq. 2)."""
  from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
  return local.build_client_work(
      model_fn, client_optimizer, proximal(mu),
      client_weighting=client_weighting,
      loop_implementation=loop_implementation)


methods.register(methods.ClientWork(
    name="fedprox", label="FedProx", options=FedProxOptions,
    reads=("client_learning_rate",),
    objective=lambda config, inputs: proximal(config.fedprox_mu),
    citation="Li et al. 2020, Federated Optimization in Heterogeneous "
             "Networks, eq. 2",
    summary="proximal client work: gradient + mu (w - w_server)",
    shorthand="Also run each algorithm with FedProx's proximal client work "
              "(Li et al. 2020, eq. 2)."))
