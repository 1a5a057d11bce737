"""Method components: each declared once, with everything about it.

A method is a named composition of components (`methods.names`):

    <algorithm>[+<variant>...][@<server optimizer>][:<field>=<value>...]

  * an `Algorithm` (the round: server side, local B and E; fedavg, fedavgm,
    fedsgd, scaffold),
  * at most one `ClientWork` variant (replaces the clients' update: fedir,
    fedprox),
  * any `DataSide` variants (change what a client trains on and who is
    sampled: fedvc),
  * a `ServerOptimizer` (sgd, sgdm, nesterov, adam, yogi, adagrad; each
    algorithm names its default),
  * optionally a mixing strategy (`methods.mixing.MixingStrategy`, Augenstein
    et al.), given with --mixing.

A component's declaration says, in one place: its name, citation and
one-line summary (`--help`, docs), its own hyper-parameters (`options`: a
frozen dataclass of `config_fields.option` fields, whose flags, bounds and
`--help` lines are generated), the shared method hyper-parameters it reads
(`reads`, fields of `methods.method_config.HyperParameters`), what it
refuses to be combined with (`refuses`), whether client groups cover it
(`grouped`), the settings it records and its builder. Everything else
(flags, usage refusals, recorded settings, client-group coverage, plot
labels, the cost estimate, the method list in the docs) derives from the
registry; nothing parses method names. The built-ins
(`methods.builtins`) are declared exactly as a user's module
(--extra_modules) declares its own: `methods.register(ClientWork(...))`.

Importing this module does not import TensorFlow: declarations are checked
before any data or TFF is loaded; builders import what they need when
called.
"""

import dataclasses
import math
import sys
from typing import (Any, Callable, ClassVar, Dict, Mapping, Optional, Tuple)

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad
from federated_vision.registry import Registry

ALGORITHM = "algorithm"
CLIENT_WORK = "client_work"
DATA_SIDE = "data_side"
SERVER_OPTIMIZER = "server_optimizer"
MIXING = "mixing"
KINDS = (ALGORITHM, CLIENT_WORK, DATA_SIDE, SERVER_OPTIMIZER, MIXING)
# Characters of the method-name grammar (`methods.names`).
RESERVED = "+@:=,/ "
SHARED_OWNER = "methods"


def _check_positive(name: str, value: float) -> None:
  if not (value > 0 and math.isfinite(value)):
    raise bad(name, value, "must be a finite number > 0")




def _check_positive(name: str, value: float) -> None:
  if not (value > 0 and math.isfinite(value)):
    raise bad(name, value, "must be a finite number > 0")


@dataclasses.dataclass(frozen=True)
class HyperParameters:
  """The method hyper-parameters several components read (flag names).

  Attributes:
    client_epochs: local epochs E (McMahan et al. 2017; fedsgd: 1).
    client_batch_size: local batch size B; 0 = B = inf (fedsgd: inf).
    client_learning_rate: the clients' SGD learning rate.
    server_learning_rate: eta_s of the server optimizer.
  """
  client_epochs: int = config_fields.option(1, "Local epochs E.",
                                            lower_bound=1)
  client_batch_size: int = config_fields.option(
      10, "Local batch size B; 0 means the whole local data set as one batch "
      "(B = inf).", lower_bound=0)
  client_learning_rate: float = config_fields.option(
      0.05, "Client SGD learning rate.")
  server_learning_rate: float = config_fields.option(
      1.0, "Server learning rate eta_s (of every method's server "
      "optimizer; one method's own: <method>:server_learning_rate=...).")

  def validate(self) -> None:
    _check_positive("client_learning_rate", self.client_learning_rate)
    _check_positive("server_learning_rate", self.server_learning_rate)


SHARED_FIELDS = tuple(f.name for f in dataclasses.fields(HyperParameters))
config_fields.declare(config_fields.METHOD, SHARED_OWNER, HyperParameters)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Component:
  """What every method component declares.

  Attributes:
    name: registry name, unique over all kinds (a part of a method name).
    citation: the paper, section and equation it implements, or
      "ours: <why>".
    summary: one line saying what it is (`--help`, docs/algorithms.md).
    options: its own hyper-parameter section (a frozen dataclass of
      `config_fields.option` fields), or None. Flags, bounds and help are
      generated; values are recorded in the method's settings; a method
      reads them as attributes of its `MethodConfig` (`config.fedprox_mu`).
    reads: the shared method hyper-parameters it reads
      (`SHARED_FIELDS`, of `HyperParameters`: client_epochs, client_batch_size,
      client_learning_rate, server_learning_rate). A flag no method of a
      run reads is refused (`methods.usage`).
    refuses: ((component name, reason), ...): components it cannot be
      combined with in one method; the reason completes "... cannot be
      combined with <reason>".
    grouped: client groups (`algorithms.client_groups`: one TFF slot trains
      several clients) can train methods using it.
    label: display name in plots and reports (default: the name).
    off_settings: settings recorded by every method that does not use it
      (so the built-ins' summary.json keys are the same for every method).
    recorded_as: {option: settings key} for options its settings record
      under another name (FedVC's virtual_client_size is N_VC).
    module: the declaring module (set by `register`).
  """
  kind: ClassVar[str] = ""
  name: str
  citation: str
  summary: str = ""
  options: Optional[type] = None
  reads: Tuple[str, ...] = ()
  refuses: Tuple[Tuple[str, str], ...] = ()
  grouped: bool = False
  label: str = ""
  off_settings: Mapping[str, object] = dataclasses.field(
      default_factory=dict)
  recorded_as: Mapping[str, str] = dataclasses.field(default_factory=dict)
  module: str = ""

  @property
  def display(self) -> str:
    return self.label or self.name

  def option_names(self) -> Tuple[str, ...]:
    """Its own hyper-parameters (flag names)."""
    return (tuple(f.name for f in dataclasses.fields(self.options))
            if self.options is not None else ())

  def recorded(self, config) -> Dict[str, object]:
    """Its own hyper-parameters' values in `config` (a `MethodConfig`), as
    the method's settings record them (`recorded_as`)."""
    return {self.recorded_as.get(n, n): getattr(config, n)
            for n in self.option_names()}

  def refusal(self, other: str) -> Optional[str]:
    """Why it cannot be combined with component `other`, or None."""
    return dict(self.refuses).get(other)


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildParts:
  """What `build_method` builds once and hands an algorithm's builder.

  Attributes:
    client_work: the client-work variant's process, or None (the
      algorithm's own client update).
    server_optimizer: the method's server optimizer (a
      `tff.learning.optimizers.Optimizer`), or None for an algorithm
      without one.
    client_optimizer: the clients' SGD of --client_learning_rate.
  """
  client_work: Any = None
  server_optimizer: Any = None
  client_optimizer: Any = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Algorithm(Component):
  """A registered algorithm.

  Attributes:
    build: `(config, inputs, parts: BuildParts) -> (process, settings)`: a
      `tff.learning.templates.LearningProcess` (or an object with
      `build_training_process(fed_data, spec)`, e.g. a stateful process)
      that must compose `parts.client_work` when not None and use
      `parts.server_optimizer`.
    client_spec: `(config, seed) -> client_data.TrainingSpec`, the local
      data side (B, E) it owns.
    server_optimizer: its default server optimizer (a registered
      `ServerOptimizer`; `@<optimizer>` in a method name replaces it), or
      None: it has no server-optimizer slot.
    grouped_build: `(config, inputs, parts: BuildParts, update, group_size)
      -> (process, settings)`: the same round trained through client groups
      (`update`: the client work's `client_groups.ClientUpdate` or None),
      recording the settings `build` records (`build_method` builds a
      grouped method with it alone), or None: client groups do not cover
      it. FedAvg's composition has one
      (`methods.builtins.fedavg.grouped_fedavg`), which an algorithm whose
      round is FedAvg's may reuse; `grouped` follows it.
    client_state_models: model-sized float32 values it keeps per client
      across rounds (`training.client_states`; SCAFFOLD: 1), 0 for none;
      the estimate prints the store's size.
    takes_variants: variants may compose with it (SCAFFOLD: no, its client
      update is its own and a client keeps one control variate).
    calibrates_as: the algorithm whose client side it shares, so the cost
      estimate calibrates them once (FedAvgM: fedavg).
    mixable: the mixing strategies can compose its server optimizer and
      client SGD (`methods.mixing`).
  """
  kind: ClassVar[str] = ALGORITHM
  build: Callable
  client_spec: Callable = None  # Default set in __post_init__.
  grouped_build: Optional[Callable] = None
  server_optimizer: Optional[str] = "sgd"
  client_state_models: int = 0
  takes_variants: bool = True
  calibrates_as: Optional[str] = None
  mixable: bool = False

  def __post_init__(self):
    if self.client_spec is None:
      object.__setattr__(self, "client_spec", default_client_spec)
    object.__setattr__(self, "grouped", self.grouped_build is not None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Variant(Component):
  """A variant: a `ClientWork` or `DataSide` component.

  Attributes:
    build: see the subclasses.
    mixing: `(config, inputs) -> (StrategyInputs fields, settings)`: what it
      changes in a mixing strategy's method, or None (it does not compose
      with the mixing strategies).
    shorthand: help of its `--<name>` flag ("also run each algorithm with
      it", `MethodsConfig.expand`), or "" for none.
  """
  build: Callable
  mixing: Optional[Callable] = None
  shorthand: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClientWork(Variant):
  """Replaces the clients' update: `build(config, inputs) -> (client work
  process, settings)` (a `tff.learning.templates.ClientWorkProcess`).

  Attributes:
    grouped_update: `(config, inputs) -> (algorithms.client_groups.
      ClientUpdate, settings)` (the per-client pieces client groups need;
      the settings `build` records), or None: client groups do not cover
      it.
  """
  kind: ClassVar[str] = CLIENT_WORK
  grouped_update: Optional[Callable] = None

  def __post_init__(self):
    object.__setattr__(self, "grouped", self.grouped_update is not None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataSide(Variant):
  """Changes what clients train on and who is sampled: `build(config,
  inputs, spec, sampler) -> (spec, sampler, settings)`.

  Attributes:
    examples_per_client: `(config, n) -> examples a selected client trains
      on per epoch` for a client of n examples (cost estimate), or None
      (n).
  """
  kind: ClassVar[str] = DATA_SIDE
  grouped: bool = True
  examples_per_client: Optional[Callable] = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerOptimizer(Component):
  """Applies the aggregated update on the server.

  Attributes:
    build: `config -> tff.learning.optimizers.Optimizer`.
    settings: `config -> dict` it records (default: `server_optimizer`
      name, the shared hyper-parameters it reads, its own options).
  """
  kind: ClassVar[str] = SERVER_OPTIMIZER
  build: Callable
  settings: Optional[Callable] = None
  grouped: bool = True

  def record(self, config) -> Dict[str, object]:
    if self.settings is not None:
      return dict(self.settings(config))
    out = {"server_optimizer": self.name}
    out.update({n: getattr(config, n) for n in self.reads})
    out.update(self.recorded(config))
    return out


def default_client_spec(config, seed: int):
  """`TrainingSpec` of local B (0 = inf) and E, shuffled, seeded."""
  from federated_vision.data import client_data  # pylint: disable=g-import-not-at-top
  return client_data.TrainingSpec(
      batch_size=config.client_batch_size or None, epochs=config.client_epochs,
      shuffle_buffer=10_000, seed=seed)


_REGISTRY: Registry[Component] = Registry("method component", "methods")


def caller_module(depth: int = 1) -> str:
  """The `__name__` of the module whose code called the function that
  calls this (`depth` = 1), e.g. the module that declares a component.

  `sys._getframe`, not `inspect.stack()`: the latter reads every frame's
  source and, with TensorFlow imported, scans all of `sys.modules` per
  frame (measured: ~1 s per `register` under pytest, 20 s of a 45 s test
  collection).
  """
  return sys._getframe(depth + 1).f_globals.get("__name__", "")  # pylint: disable=protected-access


def register(component: Component) -> Component:
  """Adds a component; declares its options (their flags).

  Raises:
    ValueError: a bad or taken name (over all kinds), no citation, reads of
      a field that is not a shared hyper-parameter, or bad options.
  """
  if not isinstance(component, Component) or component.kind not in KINDS:
    raise ValueError(f"{component!r} is not a method component (Algorithm, "
                     "ClientWork, DataSide, ServerOptimizer, MixingStrategy)")
  name = component.name
  if not name or any(ch in name for ch in RESERVED) or name != name.lower():
    raise ValueError(f"component name {name!r} must be non-empty lower case "
                     f"without any of {RESERVED!r}")
  if name in _REGISTRY:
    other = _REGISTRY.get(name).kind
    as_what = ("an algorithm or variant" if other in (ALGORITHM, CLIENT_WORK,
                                                      DATA_SIDE)
               else f"a {other.replace('_', ' ')}")
    raise ValueError(f"method component name {name!r} is already registered "
                     f"as {as_what} ({other})")
  if not component.citation or not component.citation.strip():
    raise ValueError(f"{name}: give a citation (paper, section, equation) "
                     "or 'ours: <why>'")
  unknown = set(component.reads) - set(SHARED_FIELDS)
  if unknown:
    raise ValueError(f"{name}: reads {sorted(unknown)}, which are not shared "
                     f"hyper-parameters ({', '.join(SHARED_FIELDS)}"
                     "); declare its own in `options`")
  if not component.module:
    component = dataclasses.replace(component, module=caller_module())
  if component.options is not None:
    config_fields.declare(config_fields.METHOD, name, component.options)
  if isinstance(component, Variant) and component.shorthand:
    config_fields.declare(config_fields.SHORTHAND, name,
                          _shorthand_section(name, component.shorthand))
  return _REGISTRY.add(name, component)


def _shorthand_section(name: str, help_text: str) -> type:
  """The one-field section of a variant's `--<name>` shorthand flag."""
  return dataclasses.make_dataclass(
      f"{name.capitalize()}Shorthand",
      [(name, bool, config_fields.option(False, help_text))], frozen=True)


def components(kind: Optional[str] = None) -> Tuple[Component, ...]:
  """Registered components (of `kind`), in registration order."""
  return tuple(_REGISTRY.get(n) for n in _REGISTRY
               if kind in (None, _REGISTRY.get(n).kind))


def names(kind: Optional[str] = None) -> Tuple[str, ...]:
  return tuple(c.name for c in components(kind))


def get(name: str, kind: Optional[str] = None) -> Component:
  """The component (of `kind`).

  Raises:
    ConfigError: unknown (naming --methods, or the kind's flag).
  """
  if name in _REGISTRY and kind in (None, _REGISTRY.get(name).kind):
    return _REGISTRY.get(name)
  field = {ALGORITHM: "algorithm", MIXING: "mixing"}.get(kind, "methods")
  what = (kind or "method component").replace("_", " ")
  raise ConfigError(f"unknown {what} {name!r}: one of "
                    f"{', '.join(names(kind))}", field)


def shorthands(kind: Optional[str] = None) -> Tuple[str, ...]:
  """Variants with a `--<name>` shorthand flag (of `kind`), in order."""
  return tuple(c.name for c in components(kind)
               if isinstance(c, Variant) and c.shorthand)
