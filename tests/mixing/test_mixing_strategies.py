"""The mixing-strategy registry (issue 17 item 1): each strategy owns its
hyper-parameter dataclass, validation and combination rules; the config is
validated once per run (issue 27: counted by test_validate_once.py, no
memoisation). No TensorFlow."""

import dataclasses

import pytest

from federated_vision.methods import method_config as method_components
from federated_vision import methods
from federated_vision.mixing import strategy as ms
from federated_vision.errors import ConfigError
from federated_vision.mixing.strategy import MixingSettings
from federated_vision.methods import components as comp
from federated_vision.mixing import strategies as builtin
from federated_vision.registry import Registry


def test_builtin_strategies_read_the_flags_of_their_algorithms():
  # Augenstein et al., Algorithms 2-4 (the table usage.py held before).
  assert {n: ms.get_strategy(n).flags_read() for n in ms.strategy_names()
          if n in ("none", "parallel", "example_transfer",
                   "gradient_transfer", "oracle")} == {
      "none": (), "oracle": (),
      "parallel": ("merge_weight", "central_steps", "central_batch_size",
                   "central_learning_rate"),
      "example_transfer": ("central_examples_per_client",),
      "gradient_transfer": ("gradient_weight", "central_batch_size")}
  assert ms.readers("central_batch_size")[:2] == ("parallel",
                                                  "gradient_transfer")
  settings = MixingSettings(mixing=("parallel",), merge_weight=0.3,
                            central_steps=4, gradient_weight=2.0)
  params = ms.checked_params("parallel", settings, "fedavgm", ("fedir",))
  assert params == builtin.ParallelParams(0.3, 4, 32, None)
  assert ms.get_strategy("parallel").settings(params) == {
      "merge_weight": 0.3, "central_steps": 4, "central_batch_size": 32,
      "central_learning_rate": None}


@pytest.mark.parametrize("strategy, algorithm, variants, flag, words", [
    ("gradient_transfer", "fedavg", ("fedir",), "fedir",
     "--mixing=gradient_transfer and --fedir: mixing strategy "
     "'gradient_transfer' cannot be combined with FedIR"),
    ("example_transfer", "fedavgm", ("fedvc",), "fedvc",
     "--mixing=example_transfer and --fedvc: mixing strategy "
     "'example_transfer' cannot be combined with FedVC"),
    ("parallel", "fedsgd", (), "algorithm",
     "--mixing=parallel and --algorithm=fedsgd: the mixing strategies "
     "compose fedavg and fedavgm only"),
    ("oracle", "scaffold", (), "algorithm",
     "--mixing=oracle and --algorithm=scaffold: the mixing strategies "
     "compose fedavg and fedavgm only"),
    ("sideways", "fedavg", (), "mixing", "mixing strategy must be one of"),
])
def test_refused_combinations_name_both_flags(strategy, algorithm, variants,
                                              flag, words):
  with pytest.raises(ConfigError) as e:
    ms.check_combination(strategy, algorithm, variants)
  assert e.value.field == flag and str(e.value).startswith(words)


@pytest.mark.parametrize("field, value, words", [
    ("merge_weight", 1.5, "must be in [0, 1]"),
    ("central_steps", 0, "must be >= 1"),
    ("central_learning_rate", 0.0, "must be a finite number > 0"),
    ("central_examples_per_client", -1, "must be >= 0"),
    # Negative lambda: refused here, before any data (it used to pass
    # validation and fail in mixing_gradient after the data were loaded).
    ("gradient_weight", -1.0, "must be a finite number >= 0"),
])
def test_each_strategy_validates_its_own_fields(field, value, words):
  strategy = ms.readers(field)[0]
  settings = dataclasses.replace(MixingSettings(mixing=(strategy,)),
                                 **{field: value})
  with pytest.raises(ConfigError) as e:
    ms.validate(settings)
  assert e.value.field == field
  assert str(e.value) == f"--{field}={value}: {words}"


_CALLS = []


@dataclasses.dataclass(frozen=True)
class _CountingParams:
  central_steps: int = 1
  own: str = "kept"

  def validate(self):
    _CALLS.append(self)


def test_own_fields_keep_their_value_and_names_are_unique(monkeypatch):
  # A registry of this test's own: the strategy does not outlive it.
  registry = Registry("method component", "methods")
  for c in comp.components():
    registry.add(c.name, c)
  monkeypatch.setattr(comp, "_REGISTRY", registry)
  ms.register_mixing_strategy(ms.MixingStrategy(
      name="counting_test", build=lambda *a: None, params=_CountingParams(),
      citation="ours: a test strategy"))
  settings = MixingSettings(mixing=("counting_test",), central_steps=5)
  first = ms.checked_params("counting_test", settings, "fedavg", ())
  ms.validate(settings, [methods.MethodConfig("fedavg")])
  # Each call validates (no memoisation, issue 27); the own field keeps its
  # registered value, the flag-named one takes the run's.
  assert first == _CountingParams(5, "kept") and _CALLS == [first, first]
  ms.checked_params("counting_test", settings, "fedavgm", ())  # New method.
  assert len(_CALLS) == 3
  with pytest.raises(ValueError, match="already registered"):
    ms.register_mixing_strategy(ms.get_strategy("counting_test"))
  with pytest.raises(ValueError, match="already registered as an algorithm "
                     "or variant"):
    ms.register_mixing_strategy(ms.MixingStrategy(
        name="fedvc", build=lambda *a: None, citation="ours"))
  with pytest.raises(ValueError, match="validate"):
    ms.register_mixing_strategy(ms.MixingStrategy(
        name="no_validate", build=lambda *a: None, params=object(),
        citation="ours"))


def test_fedprox_composes_with_the_mixing_strategies():
  # Its client work is generated from its local objective, as FedIR's.
  for strategy in ("none", "parallel", "example_transfer", "oracle"):
    ms.check_combination(strategy, "fedavg", ("fedprox",))
  with pytest.raises(ConfigError, match="both replace FedAvg's client work"):
    ms.check_combination("gradient_transfer", "fedavg", ("fedprox",))


def test_method_validation_refuses_and_passes_every_time():
  bad = methods.MethodConfig("fedavg", ("fedir", "fedprox"))
  for _ in range(2):  # Refused each time.
    with pytest.raises(ValueError, match="both replace the client work"):
      methods.validate(bad)
  good = methods.MethodConfig("fedavgm", ("fedvc",), virtual_client_size=7)
  methods.validate(good)
  methods.validate(good)
  with pytest.raises(ConfigError, match="unknown variant"):
    methods.validate(methods.MethodConfig("fedavg", ["nope"]))
