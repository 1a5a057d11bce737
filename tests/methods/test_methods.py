"""The methods registry: validation, resolved settings, FedVC, FedProx."""

import dataclasses

import numpy as np
import pytest
import tensorflow_federated as tff

from federated_vision import methods
from federated_vision import training_loop
from federated_vision.algorithms import fedvc
from federated_vision.learning import sampling
from federated_vision.errors import ConfigError
from tiny_model_runs import _sgd, model_fn
from federated_vision.learning import reference as linear_reference

IDS = ["a", "b", "c", "d"]
SIZES = [5, 1, 30, 4]


def _inputs(**kw):
  args = dict(model_fn=model_fn, num_classes=3, client_ids=IDS,
              client_sizes=SIZES, clients_per_round=2, seed=7)
  args.update(kw)
  return methods.MethodInputs(**args)


@pytest.mark.parametrize("change, message", [
    (dict(algorithm="fedfoo"), "--algorithm=fedfoo: each must be one of "
     "fedavg, fedavgm, fedsgd"),
    (dict(client_learning_rate=0.0), "--client_learning_rate=0.0: must be a "
     "finite number > 0"),
    (dict(server_learning_rate=float("inf")), "--server_learning_rate=inf"),
    (dict(server_momentum=1.0), "--server_momentum=1.0: must be in [0, 1)"),
    (dict(client_epochs=0), "--client_epochs=0: must be >= 1"),
    (dict(virtual_client_size=0), "--virtual_client_size=0: must be >= 1"),
    (dict(fedir_target="val"), "--fedir_target=val: must be one of uniform, "
     "test"),
    (dict(fedprox_mu=-1.0), "--fedprox_mu=-1.0: must be a finite number >= 0"),
    (dict(variants=("fedfoo",)), "unknown variant 'fedfoo'"),
])
def test_bad_settings_name_the_field(change, message):
  with pytest.raises(ConfigError) as e:
    methods.validate(dataclasses.replace(methods.MethodConfig(),
                                                       **change))
  assert message in str(e.value)


def test_two_client_work_variants_are_a_clear_value_error():
  config = methods.MethodConfig("fedavgm", ("fedir", "fedprox"))
  with pytest.raises(ValueError, match="fedavgm\\+fedir\\+fedprox: fedir and "
                     "fedprox both replace the client work"):
    methods.build_method(config, _inputs())
  # Client work + data side is fine (validation only, no TFF here).
  methods.validate(methods.MethodConfig("fedavg",
                                                      ("fedprox", "fedvc")))
  # The package's own variants (other test modules register theirs at
  # import, e.g. tests/methods/test_method_list.py's 'halfbatch').
  def builtin(kind):
    return tuple(n for n in methods.variant_names(kind)
                 if methods.get(n).module.startswith("federated_vision."))
  assert builtin(methods.CLIENT_WORK) == ("fedir", "fedprox")
  assert builtin(methods.DATA_SIDE) == ("fedvc",)


def test_resolved_settings_of_every_builtin_combination():
  base = methods.MethodConfig(client_batch_size=8, client_epochs=3,
                              client_learning_rate=0.2,
                              server_learning_rate=0.5, server_momentum=0.75,
                              virtual_client_size=12, fedprox_mu=0.3)
  m = methods.build_method(dataclasses.replace(base, algorithm="fedavgm",
                                               variants=("fedir", "fedvc")),
                           _inputs())
  assert m.name == "fedavgm+fedir+fedvc"
  assert m.settings == {
      "name": "fedavgm+fedir+fedvc", "algorithm": "fedavgm",
      "variants": ["fedir", "fedvc"], "client_work": "fedir",
      "data_side": "fedvc", "E": 3, "B": 8, "N_VC": 12,
      "virtual_client_size": 12,
      "client_optimizer": "sgd", "client_learning_rate": 0.2,
      "server_optimizer": "sgdm", "server_learning_rate": 0.5,
      "server_momentum": 0.75, "effective_server_learning_rate": 2.0,
      "fedir_target": "uniform", "fedprox_mu": None,
      "sampler": "size_proportional", "clients_per_round": 2}
  assert isinstance(m.sampler, sampling.SizeProportionalSampler)
  assert (m.spec.batch_size, m.spec.epochs, m.spec.virtual_client_size,
          m.spec.seed) == (8, 3, 12, 7)
  np.testing.assert_allclose(m.sampler.probabilities,
                             np.asarray(SIZES) / sum(SIZES))
  # FedIR's q_k is read from the client's whole-data class counts, which
  # the training loop adds to its batches (not counted over the resample).
  assert training_loop._wants_label_counts(m.process)  # pylint: disable=protected-access

  sgd = methods.build_method(dataclasses.replace(base, algorithm="fedsgd",
                                                 variants=("fedprox",)),
                             _inputs())
  assert (sgd.spec.batch_size, sgd.spec.epochs) == (None, 1)
  assert (sgd.settings["B"], sgd.settings["E"]) == (None, 1)
  assert sgd.settings["server_momentum"] == 0.0  # Only fedavgm has momentum.
  assert sgd.settings["effective_server_learning_rate"] == 0.5
  assert sgd.settings["fedprox_mu"] == 0.3
  assert sgd.settings["client_work"] == "fedprox"
  assert isinstance(sgd.sampler, sampling.UniformSampler)
  assert sgd.settings["N_VC"] is None


def test_build_fedvc_is_fedavg_on_virtual_clients():
  out = fedvc.build_fedvc(model_fn, _sgd(0.1), client_ids=IDS,
                          client_sizes=SIZES, clients_per_round=3,
                          virtual_client_size=6, seed=1)
  assert out.spec.virtual_client_size == 6
  assert out.sampler.select(4) == sampling.SizeProportionalSampler(
      IDS, SIZES, 3, 1).select(4)
  plain = methods.build_method(methods.MethodConfig("fedavg"), _inputs())
  assert (out.process.next.type_signature.compact_representation() ==
          plain.process.next.type_signature.compact_representation())
  with pytest.raises(ValueError, match="virtual_client_size"):
    fedvc.virtual_clients(out.spec, IDS, SIZES, 3, 0)


@pytest.fixture(scope="module")
def context():
  from federated_vision.runtime import contexts  # pylint: disable=g-import-not-at-top
  with contexts.managed_execution_context() as worker:
    yield worker


def _method_process(config):
  return methods.build_method(config, _inputs(
      client_ids=["0", "1", "2"], client_sizes=[7, 5, 4])).process


def _np_fedprox_round(w, clients, mu, sign=1.0):
  """One FedProx round (Li et al. 2020, eq. 2) in numpy: each client steps
  along grad + sign * mu (w - w_server) over its batches in order; deltas
  weighted by examples. sign=-1 is TFF 0.87's proximal client work."""
  deltas = []
  for x, y in clients:
    v = w.copy()
    for i in range(0, len(y), linear_reference.B):
      g = linear_reference.np_grad(v, x[i:i + linear_reference.B],
                                   y[i:i + linear_reference.B])
      v = v - linear_reference.LR * (g + sign * mu * (v - w))
    deltas.append(w - v)
  n = np.array([len(y) for _, y in clients], np.float64)
  return w - sum(d * k for d, k in zip(deltas, n)) / n.sum()


def test_fedprox_is_li_et_al_eq_2_and_mu_zero_is_fedavg(context):
  """Ours steps along g + mu (w - w_server) (Li et al. 2020, eq. 2); TFF
  0.87's `build_weighted_fed_prox` adds mu (w_server - w), the opposite
  sign (`algorithms.fedprox`), which is why the package has its own."""
  del context
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(4)
  clients = [(rng.normal(size=(n, linear_reference.F)).astype(np.float32),
              rng.integers(0, linear_reference.C, n)) for n in (7, 5, 4)]
  data = [tf.data.Dataset.from_tensor_slices({"x": x, "y": y}).batch(
      linear_reference.B) for x, y in clients]
  mu = 0.5
  cfg = methods.MethodConfig("fedavg", ("fedprox",),
                             client_learning_rate=linear_reference.LR,
                             fedprox_mu=mu)
  inputs = _inputs(model_fn=linear_reference.model_fn,
                   num_classes=linear_reference.C, client_ids=["0", "1", "2"],
                   client_sizes=[7, 5, 4])
  process = methods.build_method(cfg, inputs).process
  state = process.initialize()
  w0 = np.array(process.get_model_weights(state).trainable[0], np.float64)
  ours = np.array(process.get_model_weights(
      process.next(state, data).state).trainable[0])
  want = _np_fedprox_round(w0, [(x.astype(np.float64), y)
                                for x, y in clients], mu)
  np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-6)
  tff_prox = tff.learning.algorithms.build_weighted_fed_prox(
      linear_reference.model_fn, proximal_strength=mu,
      client_optimizer_fn=linear_reference.sgd(),
      server_optimizer_fn=linear_reference.sgd(1.0))
  tff_state = tff_prox.initialize()
  theirs = np.array(tff_prox.get_model_weights(
      tff_prox.next(tff_state, data).state).trainable[0])
  np.testing.assert_allclose(theirs, _np_fedprox_round(
      w0, [(x.astype(np.float64), y) for x, y in clients], mu, sign=-1.0),
                             rtol=1e-5, atol=1e-6)
  assert np.abs(ours - theirs).max() > 1e-3
  # mu = 0 is FedAvg's client work.
  prox0 = methods.build_method(dataclasses.replace(cfg, fedprox_mu=0.0),
                               inputs).process
  avg = methods.build_method(dataclasses.replace(cfg, variants=()),
                             inputs).process
  a = prox0.get_model_weights(prox0.next(prox0.initialize(), data).state)
  b = avg.get_model_weights(avg.next(avg.initialize(), data).state)
  np.testing.assert_allclose(a.trainable[0], b.trainable[0], rtol=1e-6,
                             atol=1e-7)
