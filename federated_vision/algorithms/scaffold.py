"""SCAFFOLD (Karimireddy, Kale, Mohri, Reddi, Stich & Suresh 2020).

"SCAFFOLD: Stochastic Controlled Averaging for Federated Learning",
Algorithm 1 with option II control variates (Section 3: "all our
experiments use option II"), as a `stateful.Round`. Server: x, the control
variate c. Each round, for the sampled clients S (line 4): client k gets
(x, c) and its own c_k (lines 5-7) and from y = x takes K steps
y <- y - eta_l (g_k(y) - c_k + c) over its batches (lines 8-10; K: the
steps it took, E x its batches). Option II (line 12):
    c_k+ = c_k - c + (x - y) / (K eta_l)
It returns (dy_k, dc_k) = (y - x, c_k+ - c_k) and keeps c_k+ (13-14).
Server (16-17): (dx, dc) = the *uniform* means over S of (dy_k, dc_k), as
the paper averages; x <- x + eta_g dx, here the method's server optimizer
applied to the pseudo-gradient -dx (SGD(eta_g), the default, is line 17
exactly); c <- c + (|S| / N) dc, N the population (c stays the mean of all
c_k, Section 3: "c = 1/N sum c_i").

Ours: c = c_k = 0 at first (Algorithm 1 leaves them as inputs; this keeps
c the mean of the c_k from the start); clients outside the assumptions as
`stateful` says (a non-finite client keeps its c_k).
"""

from federated_vision import methods


def objective(output, batch, client):
  """Line 10's step direction: g_k(y) + (c - c_k)."""
  del batch
  return output.loss, [c - ck for c, ck in zip(client.message["control"],
                                               client.state["control"])]


def finish(end):
  """Lines 12-13: option II's c_k+, and (dy_k, dc_k)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  c_k, c = end.state["control"], end.message["control"]
  k_eta = tf.cast(end.steps, tf.float32) * end.learning_rate
  c_plus = [ck - ci + (xi - yi) / k_eta
            for ck, ci, xi, yi in zip(c_k, c, end.start, end.weights)]
  return ({"delta": [y - x for y, x in zip(end.weights, end.start)],
           "control_delta": [cp - ck for cp, ck in zip(c_plus, c_k)]},
          {"control": c_plus})


def server_update(server):
  """Lines 16-17: the pseudo-gradient -dx and c + (|S| / N) dc."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  update = [-tf.math.divide_no_nan(d, server.clients)
            for d in server.sums["delta"]]
  control = [c + d / server.population for c, d in
             zip(server.state["control"], server.sums["control_delta"])]
  return update, {"control": control}, {}


def scaffold_round():
  """Algorithm 1 as a `stateful.Round`: c_k per client, c on the server."""
  from federated_vision.learning import stateful  # pylint: disable=g-import-not-at-top
  return stateful.Round(objective, finish, server_update,
                        client_state=("control",), server_state=("control",))


def build(config, inputs, parts):
  """SCAFFOLD's `stateful.Method`: the clients' plain SGD (option II divides
  by K eta_l), the method's server optimizer."""
  del config
  from federated_vision.learning import stateful  # pylint: disable=g-import-not-at-top
  return (stateful.Method(inputs.model_fn, scaffold_round(),
                          parts.client_optimizer, parts.server_optimizer),
          {"client_weighting": "uniform", "client_state": "control_variate"})


methods.register(methods.Algorithm(
    name="scaffold", label="SCAFFOLD", build=build,
    reads=("client_epochs", "client_batch_size", "client_learning_rate"),
    refuses=((methods.CLIENT_WORK, "its client update and state are its own"),
             (methods.DATA_SIDE, "a client keeps one control variate"),
             (methods.MIXING, "the mixing strategies compose FedAvg's round")),
    citation="Karimireddy et al. 2020, SCAFFOLD, Algorithm 1 (option II "
             "control variates)",
    summary="local SGD corrected by control variates kept per client "
            "(per-client state, on disk)"))
