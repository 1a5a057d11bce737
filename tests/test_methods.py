"""The methods registry: validation, resolved settings, FedVC, FedProx."""

import dataclasses

import numpy as np
import pytest
import tensorflow_federated as tff

from federated_vision import methods
from federated_vision import training_loop
from federated_vision.algorithms import fedvc
from federated_vision.algorithms import sampling
from federated_vision.errors import ConfigError
from test_algorithms import IMBALANCED, _client_datasets, _sgd, _train, model_fn

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
    methods.validate_method_config(dataclasses.replace(methods.MethodConfig(),
                                                       **change))
  assert message in str(e.value)


def test_two_client_work_variants_are_a_clear_value_error():
  config = methods.MethodConfig("fedavgm", ("fedir", "fedprox"))
  with pytest.raises(ValueError, match="fedavgm\\+fedir\\+fedprox: fedir and "
                     "fedprox both replace the client work"):
    methods.build_method(config, _inputs())
  # Client work + data side is fine (validation only, no TFF here).
  methods.validate_method_config(methods.MethodConfig("fedavg",
                                                      ("fedprox", "fedvc")))
  # The package's own variants (other test modules register theirs at
  # import, e.g. tests/test_method_list.py's 'halfbatch').
  def builtin(kind):
    return tuple(n for n in methods.variant_names(kind)
                 if methods._VARIANTS.get(n).build.__module__.startswith(  # pylint: disable=protected-access
                     "federated_vision."))
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


def test_fedprox_matches_tff_fed_prox_and_mu_zero_is_fedavg(context):
  del context
  data = _client_datasets(IMBALANCED)
  cfg = methods.MethodConfig("fedavg", ("fedprox",), client_learning_rate=0.1,
                             server_learning_rate=1.0, fedprox_mu=0.5)
  ours, _ = _train(_method_process(cfg), data)
  theirs, _ = _train(tff.learning.algorithms.build_weighted_fed_prox(
      model_fn, proximal_strength=0.5, client_optimizer_fn=_sgd(0.1),
      server_optimizer_fn=_sgd(1.0)), data)
  for a, b in zip(ours, theirs):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  prox0, _ = _train(_method_process(dataclasses.replace(cfg, fedprox_mu=0.0)),
                    data)
  avg, _ = _train(_method_process(dataclasses.replace(cfg, variants=())), data)
  for a, b in zip(prox0, avg):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  assert max(np.abs(a - b).max() for a, b in zip(ours, avg)) > 1e-4
