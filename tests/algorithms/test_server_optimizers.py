"""Server optimizers as components (issue 27): exact values against numpy.

FedAdam, FedYogi and FedAdagrad are Reddi et al. 2021, "Adaptive Federated
Optimization", Algorithm 2, written below in numpy; Nesterov is
TensorFlow's `MomentumOptimizer(use_nesterov=True)`. Each is run through
`methods.build_method` (`fedavg@<optimizer>`) for 3 rounds in which 2 of 4
clients take part (partial participation), on the linear model of
federated_vision.learning.reference. The clients have equal sizes, so the package's
example-weighted mean of the deltas is Algorithm 2's plain mean
Delta_t = (1/|S|) sum_i Delta_i.
"""

import numpy as np
import pytest
import tensorflow as tf

from federated_vision import methods
from federated_vision.learning import reference as ref

N = 6  # Examples per client (equal sizes).
ROUNDS = [["a", "b"], ["c", "a"], ["d", "b"]]  # 2 of 4 clients per round.
ETA, BETA_1, BETA_2, TAU = 0.1, 0.9, 0.99, 0.01


def _clients():
  rng = np.random.default_rng(21)
  return {c: (rng.normal(size=(N, ref.F)).astype(np.float32),
              rng.integers(0, ref.C, N)) for c in "abcd"}


def _np_deltas(x, selected, clients):
  """Algorithm 2's Delta_t: the mean of the selected clients' y - x."""
  return sum(ref.np_local_sgd(x, clients[c][0].astype(np.float64),
                              clients[c][1]) - x
             for c in selected) / len(selected)


def np_server(rule, x, clients, rounds=ROUNDS, eta=ETA, b1=BETA_1, b2=BETA_2,
              tau=TAU, momentum=0.9):
  """The server side of Reddi et al. 2021, Algorithm 2 (and Nesterov)."""
  m, v = np.zeros_like(x), np.full_like(x, tau * tau)
  for selected in rounds:
    delta = _np_deltas(x, selected, clients)
    if rule == "nesterov":  # accumulator <- beta a + u; x <- x - eta (u + beta a)
      m = momentum * m - delta
      x = x - eta * (-delta + momentum * m)
      continue
    m = b1 * m + (1 - b1) * delta
    if rule == "adagrad":
      v = v + delta ** 2
    elif rule == "adam":
      v = b2 * v + (1 - b2) * delta ** 2
    else:  # yogi
      v = v - (1 - b2) * delta ** 2 * np.sign(v - delta ** 2)
    x = x + eta * m / (np.sqrt(v) + tau)
  return x


def _run(method_name, clients, rounds=ROUNDS, **values):
  from federated_vision.methods import method_config  # pylint: disable=g-import-not-at-top
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  config = method_config.from_spec(names.parse(method_name),
                                   methods.MethodConfig(**values).options)
  inputs = methods.MethodInputs(ref.model_fn, ref.C, list(clients),
                                [N] * len(clients), 2)
  process = methods.build_method(config, inputs).process
  state = process.initialize()
  x0 = np.array(process.get_model_weights(state).trainable[0], np.float64)
  for selected in rounds:
    data = [tf.data.Dataset.from_tensor_slices(
        {"x": clients[c][0], "y": clients[c][1]}).batch(ref.B)
            for c in selected]
    state = process.next(state, data).state
  return x0, np.array(process.get_model_weights(state).trainable[0])


@pytest.fixture(scope="module")
def context():
  from federated_vision.runtime import contexts  # pylint: disable=g-import-not-at-top
  with contexts.managed_execution_context() as worker:
    yield worker


@pytest.mark.parametrize("rule", ["adam", "yogi", "adagrad"])
def test_reddi_algorithm_2_over_3_rounds_with_partial_participation(
    context, rule):
  del context
  clients = _clients()
  own = {f"{rule}_beta_1": BETA_1, f"{rule}_tau": TAU}
  if rule != "adagrad":
    own[f"{rule}_beta_2"] = BETA_2
  x0, got = _run(f"fedavg@{rule}", clients, client_learning_rate=ref.LR,
                 server_learning_rate=ETA, **own)
  want = np_server(rule, x0, clients)
  np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
  assert np.abs(want - x0).max() > 0.02  # The server moved.


def test_nesterov_is_tensorflows_use_nesterov(context):
  del context
  clients = _clients()
  x0, got = _run("fedavg@nesterov", clients, client_learning_rate=ref.LR,
                 server_learning_rate=ETA, server_momentum=0.9)
  np.testing.assert_allclose(got, np_server("nesterov", x0, clients),
                             rtol=0, atol=1e-6)


def test_fedavgm_is_fedavg_with_sgdm_and_sgd_is_its_default(context):
  """FedAvgM is FedAvg with the heavy-ball `sgdm` optimizer (its default:
  `fedavgm@sgdm` is `fedavgm`); FedAvg's default is plain `sgd`."""
  del context
  clients = _clients()
  values = dict(client_learning_rate=ref.LR, server_momentum=0.5)
  _, fedavgm = _run("fedavgm", clients, **values)
  _, via_optimizer = _run("fedavg@sgdm", clients, **values)
  np.testing.assert_array_equal(fedavgm, via_optimizer)
  _, fedavg = _run("fedavg", clients, **values)
  _, sgd = _run("fedavgm@sgd", clients, **values)
  np.testing.assert_array_equal(fedavg, sgd)
  assert methods.MethodConfig("fedavgm", (), "sgdm").name == "fedavgm@sgdm"
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  assert names.canonical_names(["fedavgm@sgdm", "fedavg@adam"]) == (
      "fedavgm", "fedavg@adam")


def test_recorded_settings_are_each_optimizers_own():
  config = methods.MethodConfig("fedavg", (), "adam", adam_beta_2=0.9)
  record = methods.get("adam").record(config)
  # No rate given: FedAdam's own default (0.01), not SGD's 1.
  assert record == {"server_optimizer": "adam", "server_learning_rate": 0.01,
                    "adam_beta_1": 0.9, "adam_beta_2": 0.9,
                    "adam_tau": 1e-3}
  given = methods.MethodConfig("fedavg", (), "adam", server_learning_rate=1.0)
  assert methods.get("adam").record(given)["server_learning_rate"] == 1.0
  assert methods.get("sgdm").record(methods.MethodConfig(
      "fedavgm", server_momentum=0.75)) == {
          "server_optimizer": "sgdm", "server_learning_rate": 1.0,
          "server_momentum": 0.75, "effective_server_learning_rate": 4.0}


@pytest.mark.parametrize("values, message", [
    ({"adam_beta_1": 1.0}, "--adam_beta_1=1.0: must be in [0, 1)"),
    ({"yogi_tau": 0.0}, "--yogi_tau=0.0: must be a finite number > 0"),
    ({"server_momentum": -0.1}, "--server_momentum=-0.1: must be in [0, 1)"),
])
def test_bad_optimizer_settings_name_the_flag(values, message):
  from federated_vision.errors import ConfigError  # pylint: disable=g-import-not-at-top
  with pytest.raises(ConfigError) as e:
    methods.validate(methods.MethodConfig("fedavg", (), "adam", **values))
  assert str(e.value) == message
