"""FedNova (Wang, Liu, Liang, Joshi & Poor 2020, "Tackling the Objective
Inconsistency Problem in Heterogeneous Federated Optimization"), with
vanilla local SGD.

Clients take different numbers of local steps tau_i (E epochs of their own
data, batch B). Averaging their model deltas as FedAvg does weights the
clients that take more steps more, and optimises another objective.
FedNova normalises: client i sends its normalised update
d_i = (x - y_i) / tau_i (vanilla SGD: a_i = [1, ..., 1], ||a_i||_1 = tau_i)
and the server steps

    x <- x - tau_eff sum_i p_i d_i,   tau_eff = sum_i p_i tau_i

with p_i = n_i / n, the clients' shares of the examples. Ours: over a
round's sampled clients S, p_i = n_i / sum_{j in S} n_j (the package's
FedAvg weighting); the server step is the method's server optimizer
applied to tau_eff sum_i p_i d_i (SGD(1.0), the default, is the step above).
Each client sends n_i d_i, n_i tau_i and n_i beside nothing else; tau_eff
is recorded every round (metrics.csv and TensorBoard column `tau_eff`).
"""

from federated_vision import methods


def finish(end):
  """n_i d_i (d_i = (y_i - x) / tau_i, the sign of a delta), n_i tau_i, n_i."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tau = tf.cast(end.steps, tf.float32)
  n = end.examples
  return ({"normalized": [n * (y - x) / tau
                          for y, x in zip(end.weights, end.start)],
           "tau": n * tau, "examples": n}, {})


def server_update(server):
  """tau_eff and the pseudo-gradient -tau_eff sum_i p_i d_i."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  n = server.sums["examples"]
  tau_eff = tf.math.divide_no_nan(server.sums["tau"], n)
  update = [-tau_eff * tf.math.divide_no_nan(d, n)
            for d in server.sums["normalized"]]
  return update, {}, {"tau_eff": tau_eff}


def fednova_round():
  """FedNova as a `stateful.Round` (no client or server state)."""
  from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
  from federated_vision.learning import stateful  # pylint: disable=g-import-not-at-top
  return stateful.Round(local.model_loss, finish, server_update)


def build(config, inputs, parts):
  """FedNova's `stateful.Method`."""
  del config
  from federated_vision.learning import stateful  # pylint: disable=g-import-not-at-top
  return stateful.Method(inputs.model_fn, fednova_round(),
                         parts.client_optimizer, parts.server_optimizer), {}


methods.register(methods.Algorithm(
    name="fednova", label="FedNova", build=build,
    reads=("client_epochs", "client_batch_size", "client_learning_rate"),
    refuses=((methods.CLIENT_WORK, "its clients' update is vanilla SGD"),
             (methods.DATA_SIDE, "its weights p_i are the clients' sizes"),
             (methods.MIXING, "the mixing strategies compose FedAvg's round")),
    citation="Wang et al. 2020, Tackling the Objective Inconsistency Problem "
             "in Heterogeneous Federated Optimization (FedNova, vanilla "
             "local SGD)",
    summary="normalized averaging: each client's update divided by its "
            "local steps, the mean scaled by tau_eff"))
