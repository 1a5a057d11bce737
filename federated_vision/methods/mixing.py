"""Mixing strategies (Augenstein et al.) as registered method components.

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews): no
mixing and the oracle (baselines), parallel training (Algorithm 2), example
transfer (Algorithm 3) and gradient transfer (Algorithm 4). Each is a
`MixingStrategy`, registered like algorithms and variants
(`method_components`): it owns its hyper-parameter dataclass (fields named as
the `MixingSettings` fields == flags they are read from), checks it once
(`validate`), says which algorithms / variants it composes with
(`check_combination`) and builds its part of a method (`build`), whose
settings summary.json records. `methods.build_method` is the one builder.

A strategy registered from a module passed with --extra_modules is reachable
from --mixing. Its hyper-parameter dataclass may hold fields that are no
`MixingSettings` field: they keep the value of the instance given at
registration (`MixingStrategy.params`); fields named as `MixingSettings`
fields are read from the run's settings (their flags).

Importing this module does not import TensorFlow; the built-in builders
import `algorithms.mixing` when called. It imports `method_builtins` so the
combination rules see the built-in algorithms and variants.
"""

import dataclasses
import functools
import math
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from federated_vision import method_builtins  # pylint: disable=unused-import
from federated_vision import method_components as components
from federated_vision.errors import ConfigError, bad
from federated_vision import mixing_settings
from federated_vision.mixing_settings import MixingSettings
from federated_vision.registry import Registry

SETTINGS_FIELDS = tuple(f.name for f in dataclasses.fields(MixingSettings))


@dataclasses.dataclass(frozen=True)
class NoParams:
  """Hyper-parameters of a strategy that has none (no mixing, the oracle)."""

  def validate(self) -> None:
    pass


@dataclasses.dataclass(frozen=True)
class ParallelParams:
  """Parallel training (Augenstein et al., Algorithm 2): a, K, B_c and the
  learning rate of the K centralized steps (None: the client's)."""
  merge_weight: float = MixingSettings.merge_weight
  central_steps: int = MixingSettings.central_steps
  central_batch_size: int = MixingSettings.central_batch_size
  central_learning_rate: Optional[float] = MixingSettings.central_learning_rate

  def validate(self) -> None:
    if not 0 <= self.merge_weight <= 1:
      raise bad("merge_weight", self.merge_weight, "must be in [0, 1]")
    _at_least_one("central_steps", self.central_steps)
    _at_least_one("central_batch_size", self.central_batch_size)
    if self.central_learning_rate is not None:
      components.check_positive("central_learning_rate",
                                self.central_learning_rate)


@dataclasses.dataclass(frozen=True)
class ExampleTransferParams:
  """Example transfer (Augenstein et al., Algorithm 3): M examples sent to
  each selected client per round."""
  central_examples_per_client: int = MixingSettings.central_examples_per_client

  def validate(self) -> None:
    if self.central_examples_per_client < 0:
      raise bad("central_examples_per_client",
                self.central_examples_per_client, "must be >= 0")


@dataclasses.dataclass(frozen=True)
class GradientTransferParams:
  """Gradient transfer (Augenstein et al., Algorithm 4): lambda and B_c."""
  gradient_weight: float = MixingSettings.gradient_weight
  central_batch_size: int = MixingSettings.central_batch_size

  def validate(self) -> None:
    # >= 0 as `mixing_gradient.build_gradient_transfer` requires (0 is
    # FedAvg); a negative lambda used to pass here and fail after the data
    # were loaded.
    if not (math.isfinite(self.gradient_weight) and self.gradient_weight >= 0):
      raise bad("gradient_weight", self.gradient_weight,
                "must be a finite number >= 0")
    _at_least_one("central_batch_size", self.central_batch_size)


def _at_least_one(name: str, value: int) -> None:
  if value < 1:
    raise bad(name, value, "must be >= 1")


def _no_data_side(data):
  raise TypeError("StrategyInputs.sampling was not given")


class StrategyInputs(NamedTuple):
  """What a strategy's `build` gets: the method's other components, built
  once by `methods.build_method` (a strategy builds none of them again).

  Attributes:
    inputs: the `method_components.MethodInputs`.
    scenario: the task's `data.mixing_scenarios.MixingScenario`.
    spec: the algorithm's client `TrainingSpec` (B, E, seed) before the
      data-side variants.
    client_optimizer: the client SGD (`method_builtins.client_sgd`).
    server_optimizer: the algorithm's server optimizer.
    client_work: the client-work variant's process (FedIR's), or None
      (FedAvg's own).
    sampling: `fed_data -> (spec, sampler)`: the method's spec and sampler
      (uniform; FedVC's size-proportional virtual clients) over the clients
      of the data the strategy trains on.
    variants: the method's variants (e.g. ('fedir', 'fedvc')), for names.
  """
  inputs: Any
  scenario: Any
  spec: Any
  client_optimizer: Any
  server_optimizer: Any
  client_work: Any = None
  sampling: Callable[[Any], Tuple[Any, Any]] = _no_data_side
  variants: Tuple[str, ...] = ()


# build(name, params, StrategyInputs) -> algorithms.mixing.MixingMethod.
StrategyBuilder = Callable[[str, Any, StrategyInputs], Any]


@dataclasses.dataclass(frozen=True)
class MixingStrategy:
  """A registered mixing strategy.

  Attributes:
    name: registry name (a --mixing value); methods are '<method>+<name>'.
    build: `(name, params, StrategyInputs) -> algorithms.mixing.MixingMethod`
      (process, the data trained on, spec, sampler, extra broadcast bytes,
      settings).
    params: its hyper-parameters (a frozen dataclass with `validate()`);
      fields named as `MixingSettings` fields are read from the run's.
    refuses: ((variant, reason), ...) of variants it cannot be combined
      with (the reason completes '... cannot be combined with <reason>').
  """
  name: str
  build: StrategyBuilder
  params: Any = NoParams()
  refuses: Tuple[Tuple[str, str], ...] = ()

  def reads(self) -> Tuple[str, ...]:
    """The `MixingSettings` fields (== flags) this strategy reads."""
    return tuple(f.name for f in dataclasses.fields(self.params)
                 if f.name in SETTINGS_FIELDS)

  def settings(self, params) -> Dict[str, object]:
    """What summary.json records of its hyper-parameters: every field."""
    return dataclasses.asdict(params)

  def params_from(self, settings: MixingSettings):
    """Its hyper-parameters with the run's settings (not validated)."""
    return dataclasses.replace(
        self.params, **{n: getattr(settings, n) for n in self.reads()})


_STRATEGIES: Registry[MixingStrategy] = Registry("mixing strategy", "mixing")


def register_mixing_strategy(strategy: MixingStrategy) -> None:
  """Adds a strategy (ValueError if the name is taken or bad, also by an
  algorithm or variant: '<method>+<strategy>' must name one method)."""
  if strategy.name in components.algorithm_names() + \
      components.variant_names():
    raise ValueError(f"mixing strategy name {strategy.name!r} is already "
                     "registered as an algorithm or variant")
  if not dataclasses.is_dataclass(strategy.params) or not callable(
      getattr(strategy.params, "validate", None)):
    raise ValueError(f"mixing strategy {strategy.name!r}: params must be a "
                     "dataclass instance with a validate() method")
  _STRATEGIES.add(strategy.name, strategy)


def strategy_names() -> Tuple[str, ...]:
  return _STRATEGIES.names()


def get_strategy(name: str) -> MixingStrategy:
  """The strategy (ConfigError naming --mixing if unknown)."""
  if name not in _STRATEGIES:
    raise ConfigError(f"mixing strategy must be one of "
                      f"{', '.join(strategy_names())}; got {name!r}", "mixing")
  return _STRATEGIES.get(name)


def readers(field: str) -> Tuple[str, ...]:
  """Strategies reading `MixingSettings` field `field` (for messages)."""
  return tuple(n for n in _STRATEGIES if field in _STRATEGIES.get(n).reads())


def check_combination(strategy: str, algorithm: str = "fedavg",
                      variants=()) -> None:
  """Refuses a strategy x algorithm / variant combination with no single
  meaning (ConfigError naming both flags).

  * an algorithm without a `server_optimizer` (fedsgd) or a variant without
    a `mixing` part (fedprox): the strategies compose the server optimizer
    of fedavg / fedavgm and FedIR's client work only.
  * the strategy's own `refuses`: gradient transfer + FedIR (both replace
    FedAvg's client work), example transfer + FedVC (FedVC fixes what a
    client trains on to N_VC examples while example transfer adds M).
  Everything else composes: FedIR's client work runs on whatever data the
  strategy gives the client (its q_k then counts transferred examples), FedVC
  resamples the strategy's client data, FedAvgM's server optimizer works with
  all five.
  """
  s = get_strategy(strategy)
  if components.get_algorithm(algorithm).server_optimizer is None:
    mixable = [a for a in components.algorithm_names()
               if components.get_algorithm(a).server_optimizer is not None]
    raise ConfigError(f"--mixing={strategy} and --algorithm={algorithm}: the "
                      f"mixing strategies compose {' and '.join(mixable)} "
                      "only", "algorithm")
  for v in variants:
    if components.get_variant(v).mixing is None:
      raise ConfigError(f"--mixing={strategy} and --{v}: the mixing "
                        "strategies compose FedIR's client work only", v)
    reason = dict(s.refuses).get(v)
    if reason:
      raise ConfigError(mixing_settings.refusal(strategy, v, reason), v)


def validate(settings: MixingSettings, methods=(),
             given=()) -> None:
  """Checks the mixing settings and their combination with `methods`
  (`method_components.MethodConfig`s): each strategy's hyper-parameters
  once, every strategy x method combination.

  Raises:
    ConfigError: naming the flag (both flags for a refused combination).
  """
  if not settings.mixing:
    defaults = MixingSettings()
    for n in SETTINGS_FIELDS:
      if n != "mixing" and (n in given or getattr(settings, n) != getattr(
          defaults, n)):
        raise ConfigError(f"--{n}: only used with --mixing", n)
    return
  if len(set(settings.mixing)) != len(settings.mixing):
    raise bad("mixing", list(settings.mixing), "a strategy is repeated")
  for name in settings.mixing:
    for method in methods or (components.MethodConfig(),):
      checked_params(name, settings, method.algorithm, tuple(method.variants))


def checked_params(strategy: str, settings: MixingSettings,
                   algorithm: str = "fedavg", variants: Tuple[str, ...] = ()):
  """The strategy's hyper-parameters from `settings`, validated, and its
  combination with the method checked; a combination that passed is
  remembered, so `validate` (the config) and `methods.build_method` check
  it once per run.

  Raises:
    ConfigError: naming the flag (both flags for a refused combination).
  """
  key = (strategy, settings, algorithm, tuple(variants))
  try:
    hash(key)
  except TypeError:  # Unhashable settings (e.g. a list): not remembered.
    return _checked.__wrapped__(*key)
  return _checked(*key)


@functools.lru_cache(maxsize=None)  # Successes only: errors are not cached.
def _checked(strategy, settings, algorithm, variants):
  params = get_strategy(strategy).params_from(settings)
  params.validate()
  check_combination(strategy, algorithm, variants)
  return params


# --- Built-in strategies: each registers its own builder (`algorithms.mixing`).

def _builder(function: str) -> StrategyBuilder:
  """`algorithms.mixing.<function>`, imported when called (this module does
  not import TensorFlow)."""
  def build(name: str, params, strategy_inputs: StrategyInputs):
    from federated_vision.algorithms import mixing  # pylint: disable=g-import-not-at-top
    return getattr(mixing, function)(name, params, strategy_inputs)
  build.__name__ = build.__qualname__ = function
  return build


_BUILTINS = {"none": (_builder("build_none"), NoParams()),
             "parallel": (_builder("build_parallel"), ParallelParams()),
             "example_transfer": (_builder("build_example_transfer"),
                                  ExampleTransferParams()),
             "gradient_transfer": (_builder("build_gradient_transfer"),
                                   GradientTransferParams()),
             "oracle": (_builder("build_oracle"), NoParams())}
assert tuple(_BUILTINS) == mixing_settings.MIXING_STRATEGIES
for _name, (_build, _params) in _BUILTINS.items():
  register_mixing_strategy(MixingStrategy(
      _name, _build, _params, mixing_settings.REFUSED_VARIANTS.get(_name, ())))
