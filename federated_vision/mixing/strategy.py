"""Mixing strategies (Augenstein et al.) as method components.

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews): no
mixing and the oracle (baselines), parallel training (Algorithm 2), example
transfer (Algorithm 3) and gradient transfer (Algorithm 4); the built-ins
are declared in `mixing.strategies`. A `MixingStrategy` owns its
hyper-parameter dataclass (`params`: fields named as the `MixingSettings`
fields == flags they are read from; other fields keep the value of the
registered instance), checks it (`validate`), says what it refuses and
builds its part of a method (`build` -> `MixingMethod`), whose settings
summary.json records. `methods.build_method` is the one builder.

`MixingSettings` is the run's mixing section: the strategies trained side
by side and the flag-named hyper-parameters they read.

Importing this module does not import TensorFlow.
"""

import dataclasses
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from federated_vision import config_fields
from federated_vision.errors import ConfigError
from federated_vision.methods import components as comp


@dataclasses.dataclass(frozen=True)
class MixingSettings:
  """The mixing strategies to run and their hyper-parameters (flag names).

  Attributes:
    mixing: strategies run side by side (registered `MixingStrategy`s); ()
      = no mixing scenario, the methods run on the task's plain data.
    merge_weight: parallel training's a in [0, 1] (Algorithm 2).
    central_steps: parallel training's K centralized SGD steps per round.
    central_batch_size: centralized batch size (parallel, gradient transfer).
    central_learning_rate: SGD learning rate of the K centralized steps; None
      = --client_learning_rate.
    central_examples_per_client: example transfer's M (Algorithm 3).
    gradient_weight: gradient transfer's lambda (Algorithm 4).
    missing_classes: e.g. '8,9': classes the clients lose to the server
      (tasks whose scenario lets you choose; None = the task's default).
  """
  mixing: Tuple[str, ...] = config_fields.option((), lambda: (
      "Mixing federated and centralized data (Augenstein et al.), "
      f"strategies run side by side: {','.join(strategy_names())} (and any "
      "registered from --extra_modules). Each method runs once per strategy "
      "as '<method>+<strategy>'. Needs a task with a mixing scenario "
      "(--dataset=digits with --missing_classes, celeba). Empty = no "
      "mixing."))
  merge_weight: float = config_fields.option(
      0.5, "parallel: weight a of the federated model in w = a w_fed + (1 - "
      "a) w_central.", lower_bound=0.0, upper_bound=1.0)
  central_steps: int = config_fields.option(
      1, "parallel: K SGD steps on centralized batches per round.",
      lower_bound=1)
  central_batch_size: int = config_fields.option(
      32, "parallel / gradient_transfer: centralized batch size.",
      lower_bound=1)
  central_learning_rate: Optional[float] = config_fields.option(
      None, "parallel: learning rate of the K centralized steps (default: "
      "--client_learning_rate).")
  central_examples_per_client: int = config_fields.option(
      10, "example_transfer: M centralized examples sent to each selected "
      "client per round.", lower_bound=0)
  gradient_weight: float = config_fields.option(
      1.0, "gradient_transfer: lambda, local steps use g_k + lambda g_c.")
  missing_classes: Optional[str] = config_fields.option(
      None, "--dataset=digits with --mixing: classes every client loses to "
      "the server, e.g. 8,9 (the default).")


SETTINGS_FIELDS = tuple(f.name for f in dataclasses.fields(MixingSettings))


@dataclasses.dataclass(frozen=True)
class NoParams:
  """Hyper-parameters of a strategy that has none (no mixing, the oracle)."""

  def validate(self) -> None:
    pass


def _no_data_side(data):
  raise TypeError("StrategyInputs.sampling was not given")


class StrategyInputs(NamedTuple):
  """What a strategy's `build` gets: the method's other components, built
  once by `methods.build_method` (a strategy builds none of them again).

  Attributes:
    inputs: the `MethodInputs`.
    scenario: the task's `mixing.scenarios.MixingScenario`.
    spec: the algorithm's client `TrainingSpec` (B, E, seed) before the
      data-side variants.
    client_optimizer: the clients' SGD.
    server_optimizer: the method's server optimizer.
    client_work: the per-client work of the client-work variant's local
      objective (FedIR's, FedProx's), or None (FedAvg's own).
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class MixingStrategy(comp.Component):
  """A registered mixing strategy.

  Attributes:
    build: `(name, params, StrategyInputs) -> MixingMethod` (process, the
      data trained on, spec, sampler, extra broadcast bytes, settings).
    params: its hyper-parameters (a frozen dataclass instance with
      `validate()`); fields named as `MixingSettings` fields are read from
      the run's.
    grouped: its process is the algorithm's FedAvg round on other data
      (no mixing, the oracle, example transfer), which client groups can
      train with the plain client work.
    (and `Component`'s `refuses`: a variant, or `CLIENT_WORK` for a round
    that replaces FedAvg's client update, gradient transfer.)
  """
  kind = comp.MIXING
  build: Callable
  params: Any = NoParams()
  grouped: bool = False

  def flags_read(self) -> Tuple[str, ...]:
    """The `MixingSettings` fields (== flags) this strategy reads (its
    `params` fields named as them; `reads`, the shared method
    hyper-parameters, is () for a strategy)."""
    return tuple(f.name for f in dataclasses.fields(self.params)
                 if f.name in SETTINGS_FIELDS)

  def settings(self, params) -> Dict[str, object]:
    """What summary.json records of its hyper-parameters: every field."""
    return dataclasses.asdict(params)

  def params_from(self, settings: MixingSettings):
    """Its hyper-parameters with the run's settings (not validated)."""
    return dataclasses.replace(
        self.params, **{n: getattr(settings, n) for n in self.flags_read()})


class MixingMethod(NamedTuple):
  """Everything the training loop needs to run one strategy.

  Attributes:
    name: the strategy + the method's variants, e.g. 'parallel' or
      'gradient_transfer+fedvc'.
    process: the learning process.
    fed_data: the data the loop trains on (the oracle's recombined data,
      example transfer's mixed data, or the federated data unchanged).
    spec: client training spec (FedVC's N_VC set when used).
    sampler: has `round_keys(round_num)`.
    extra_broadcast_bytes: per round, beyond the model.
    settings: resolved settings for hparams/summary files (the strategy's
      hyper-parameters are added by `methods.build_method`).
  """
  name: str
  process: Any
  fed_data: Any
  spec: Any
  sampler: Any
  extra_broadcast_bytes: int
  settings: Dict[str, object]


def register_mixing_strategy(strategy: MixingStrategy) -> MixingStrategy:
  """Adds a strategy (ValueError if the name is taken, also by another
  component: '<method>+<strategy>' must name one method)."""
  if not dataclasses.is_dataclass(strategy.params) or not callable(
      getattr(strategy.params, "validate", None)):
    raise ValueError(f"mixing strategy {strategy.name!r}: params must be a "
                     "dataclass instance with a validate() method")
  if not strategy.module:  # The declaring module, not this one.
    strategy = dataclasses.replace(strategy, module=comp.caller_module())
  return comp.register(strategy)


def strategy_names() -> Tuple[str, ...]:
  return comp.names(comp.MIXING)


def get_strategy(name: str) -> MixingStrategy:
  """The strategy (ConfigError naming --mixing if unknown)."""
  if name not in strategy_names():
    raise ConfigError(f"mixing strategy must be one of "
                      f"{', '.join(strategy_names())}; got {name!r}", "mixing")
  return comp.get(name, comp.MIXING)


def readers(field: str) -> Tuple[str, ...]:
  """Strategies reading `MixingSettings` field `field` (for messages)."""
  return tuple(n for n in strategy_names() if field in get_strategy(n).flags_read())


def refusal(strategy: str, variant: str, why: str) -> str:
  """The one-line refusal of a strategy x variant combination."""
  return (f"--mixing={strategy} and --{variant}: mixing strategy "
          f"{strategy!r} cannot be combined with {why}")


def check_combination(strategy: str, algorithm: str = "fedavg",
                      variants=()) -> None:
  """Refuses a strategy x algorithm / variant combination with no single
  meaning (ConfigError naming both flags).

  * an algorithm whose round is not FedAvg's (`components.fedavg_round`)
    or that refuses the mixing strategies (fedsgd), and a client work not
    given as a local objective: the strategies compose FedAvg's round, its
    server optimizer and the per-client work of a local objective;
  * the strategy's or the variant's own `refuses` (example transfer +
    FedVC: FedVC fixes what a client trains on to N_VC examples while
    example transfer adds M; gradient transfer + any client work: both
    replace FedAvg's client work).
  Everything else composes: FedIR's and FedProx's objectives run on
  whatever data the strategy gives the client, FedVC resamples the
  strategy's client data, any server optimizer works with all of them.
  """
  s = get_strategy(strategy)
  mixable = lambda a: (comp.fedavg_round(a)
                       and not comp.refuses_kind(a, comp.MIXING))
  if not mixable(comp.get(algorithm, comp.ALGORITHM)):
    names = [a.name for a in comp.components(comp.ALGORITHM) if mixable(a)]
    raise ConfigError(f"--mixing={strategy} and --algorithm={algorithm}: the "
                      f"mixing strategies compose {' and '.join(names)} "
                      "only", "algorithm")
  for v in variants:
    variant = comp.get(v)
    if variant.kind == comp.CLIENT_WORK and variant.objective is None:
      works = [f"{c.display}'s" for c in comp.components(comp.CLIENT_WORK)
               if c.objective is not None]
      raise ConfigError(f"--mixing={strategy} and --{v}: the mixing "
                        f"strategies compose {' and '.join(works)} client "
                        "work only (a local objective)", v)
    reason = s.refusal(variant) or variant.refusal(s)
    if reason:
      raise ConfigError(refusal(strategy, v, reason), v)


def validate(settings: MixingSettings, methods=(), given=()) -> None:
  """Checks the mixing settings and their combination with `methods`
  (`MethodConfig`s): each strategy's hyper-parameters, every strategy x
  method combination.

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
    raise ConfigError(f"--mixing={','.join(settings.mixing)}: a strategy is "
                      "repeated", "mixing")
  for name in settings.mixing:
    checked_params(name, settings)
    for method in methods:
      check_combination(name, method.algorithm, tuple(method.variants))


def checked_params(strategy: str, settings: MixingSettings,
                   algorithm: Optional[str] = None, variants=()):
  """The strategy's hyper-parameters from `settings`, validated (and, given
  an algorithm, its combination with the method checked).

  Raises:
    ConfigError: naming the flag.
  """
  params = get_strategy(strategy).params_from(settings)
  params.validate()
  if algorithm is not None:
    check_combination(strategy, algorithm, tuple(variants))
  return params
