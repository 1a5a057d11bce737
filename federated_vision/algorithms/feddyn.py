"""FedDyn (Acar, Zhao, Matas, Mattina, Whatmough & Saligrama 2021,
"Federated Learning Based on Dynamic Regularization", Algorithm 1).

Each device k keeps the gradient of its last local solution,
grad L_k(theta_k^{t-1}) (zero before its first round). In round t, an
active device k in P_t solves

    theta_k^t = argmin_theta L_k(theta) - <grad L_k(theta_k^{t-1}), theta>
                + (alpha / 2) ||theta - theta^{t-1}||^2

(here by E epochs of local SGD: the model's loss with the gradient term
alpha (theta - theta^{t-1}) - grad L_k(theta_k^{t-1}), `objective`), then
sets grad L_k(theta_k^t) = grad L_k(theta_k^{t-1})
- alpha (theta_k^t - theta^{t-1}). The server keeps h (zero at first):

    h^t = h^{t-1} - alpha (1 / m) sum_{k in P_t} (theta_k^t - theta^{t-1})
    theta^t = (1 / |P_t|) sum_{k in P_t} theta_k^t - (1 / alpha) h^t

with m the number of devices (the population). The server step is the
method's server optimizer applied to theta^{t-1} - theta^t (SGD(1.0), the
default, is the line above exactly). Ours: a round with no device kept
leaves theta and h as they are (the mean over an empty P_t is undefined);
devices outside the assumptions as `stateful` says. --feddyn_alpha's
default 0.01 is ours (the paper tunes alpha per data set).
"""

import dataclasses
import math

from federated_vision import config_fields
from federated_vision import methods
from federated_vision.errors import bad


@dataclasses.dataclass(frozen=True)
class FedDynOptions:
  """FedDyn's regularisation strength."""
  feddyn_alpha: float = config_fields.option(
      0.01, "FedDyn's alpha: the dynamic regulariser's strength (Acar et al. "
      "2021, Algorithm 1).")

  def validate(self) -> None:
    if not (self.feddyn_alpha > 0 and math.isfinite(self.feddyn_alpha)):
      raise bad("feddyn_alpha", self.feddyn_alpha,
                "must be a finite number > 0")


def local_objective(alpha: float):
  """The local problem's gradient: grad L_k(theta) - grad L_k(theta_k^{t-1})
  + alpha (theta - theta^{t-1})."""
  def objective(output, batch, client):
    del batch
    return output.loss, [alpha * (w - w0) - g for w, w0, g in zip(
        client.weights, client.start, client.state["gradient"])]
  return objective


def finish(alpha: float):
  """The device's new gradient, and theta_k^t - theta^{t-1} it sends."""
  def fn(end):
    delta = [y - x for y, x in zip(end.weights, end.start)]
    return ({"delta": delta},
            {"gradient": [g - alpha * d
                          for g, d in zip(end.state["gradient"], delta)]})
  return fn


def server_update(alpha: float):
  """h^t, and the pseudo-gradient theta^{t-1} - theta^t."""
  def fn(server):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    any_kept = server.clients > 0
    h = [h - alpha / server.population * d
         for h, d in zip(server.state["h"], server.sums["delta"])]
    update = [tf.where(any_kept, hi / alpha - d / server.clients, 0.0)
              for hi, d in zip(h, server.sums["delta"])]
    return update, {"h": h}, {}
  return fn


def feddyn_round(alpha: float):
  """Algorithm 1 as a `stateful.Round`: each device's gradient, the
  server's h."""
  from federated_vision.learning import stateful  # pylint: disable=g-import-not-at-top
  return stateful.Round(local_objective(alpha), finish(alpha),
                        server_update(alpha), client_state=("gradient",),
                        server_state=("h",))


def build(config, inputs, parts):
  """FedDyn's `stateful.Method`."""
  from federated_vision.learning import stateful  # pylint: disable=g-import-not-at-top
  return (stateful.Method(inputs.model_fn, feddyn_round(config.feddyn_alpha),
                          parts.client_optimizer, parts.server_optimizer),
          {"client_weighting": "uniform", "client_state": "gradient"})


methods.register(methods.Algorithm(
    name="feddyn", label="FedDyn", build=build, options=FedDynOptions,
    reads=("client_epochs", "client_batch_size", "client_learning_rate"),
    refuses=((methods.CLIENT_WORK, "its local problem is its own"),
             (methods.DATA_SIDE, "a device keeps one gradient"),
             (methods.MIXING, "the mixing strategies compose FedAvg's round")),
    citation="Acar et al. 2021, Federated Learning Based on Dynamic "
             "Regularization, Algorithm 1",
    summary="dynamic regularisation: each device's local problem is "
            "corrected by its last gradient (per-client state, on disk)"))
