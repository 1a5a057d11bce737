"""Method components: each declared once, with everything about it.

A method is a named composition of components (`methods.names`):

    <algorithm>[+<variant>...][@<server optimizer>][:<field>=<value>...]

  * an `Algorithm`: the round (fedavg, fedavgm, fedsgd: FedAvg's; scaffold,
    feddyn, fednova: their own, `learning.stateful`),
  * at most one `ClientWork` variant: a change of the clients' local step
    (fedir, fedprox), given as its local objective (`learning.local`),
  * any `DataSide` variants: what a client trains on and who is sampled
    (fedvc),
  * a `ServerOptimizer` (sgd, sgdm, nesterov, adagrad, adam, yogi; each
    algorithm names its default, each optimizer its default learning rate),
  * optionally a mixing strategy (`mixing.MixingStrategy`, Augenstein et
    al.), given with --mixing.

A declaration says what a researcher must say, once: its name, citation
and one-line summary (`--help`, docs), its own hyper-parameters (`options`:
a frozen dataclass of `config_fields.option` fields, whose flags, bounds
and `--help` lines are generated), the shared method hyper-parameters it
reads (`reads`), what it refuses to be combined with (`refuses`: a
component or a whole kind) and how it is built. Everything else (flags,
usage refusals, recorded settings, client-group and mixing coverage, plot
labels, the cost estimate, the method list in the docs) derives from the
declarations and the built method. The built-ins (`federated_vision.
algorithms.<name>`) are declared exactly as a user's module
(--extra_modules) declares its own: `methods.register(methods.ClientWork(
...))`.

Importing this module does not import TensorFlow: declarations are checked
before any data or TFF is loaded; builders import what they need when
called.
"""

import dataclasses
import math
import sys
from typing import (Any, Callable, ClassVar, Dict, NamedTuple, Optional,
                    Tuple)

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


@dataclasses.dataclass(frozen=True)
class HyperParameters:
  """The method hyper-parameters several components read (flag names).

  Attributes:
    client_epochs: local epochs E (McMahan et al. 2017; fedsgd: 1).
    client_batch_size: local batch size B; 0 = B = inf (fedsgd: inf).
    client_learning_rate: the clients' SGD learning rate.
    server_learning_rate: eta_s of the server optimizer (None: the
      optimizer's own default, `ServerOptimizer.learning_rate`).
    client_learning_rate_decay, server_learning_rate_decay: gamma of the
      rates' schedules, round t's rate eta * gamma^(t-1)
      (`learning.schedule`; McMahan et al. 2017 §3), 1 = constant; read by
      whatever reads the rate.
  """
  client_epochs: int = config_fields.option(1, "Local epochs E.",
                                            lower_bound=1)
  client_batch_size: int = config_fields.option(
      10, "Local batch size B; 0 means the whole local data set as one batch "
      "(B = inf).", lower_bound=0)
  client_learning_rate: float = config_fields.option(
      0.05, "Client SGD learning rate.")
  server_learning_rate: Optional[float] = config_fields.option(
      None, "Server learning rate eta_s of every method's server optimizer "
      "(default: each optimizer's own, e.g. sgd 1.0, adam 0.01; one "
      "method's own: <method>:server_learning_rate=...).")
  client_learning_rate_decay: float = config_fields.option(
      1.0, "Per-round decay gamma of the client learning rate: round t's is "
      "--client_learning_rate * gamma^(t-1) (McMahan et al. 2017 Sec. 3, "
      "CIFAR: 'we tuned a learning-rate decay parameter'); 1 = constant.")
  server_learning_rate_decay: float = config_fields.option(
      1.0, "Per-round decay gamma of the server learning rate: round t's is "
      "eta_s * gamma^(t-1); 1 = constant.")

  def validate(self) -> None:
    _check_positive("client_learning_rate", self.client_learning_rate)
    if self.server_learning_rate is not None:
      _check_positive("server_learning_rate", self.server_learning_rate)
    _check_positive("client_learning_rate_decay",
                    self.client_learning_rate_decay)
    _check_positive("server_learning_rate_decay",
                    self.server_learning_rate_decay)


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
    label: display name in plots and reports (default: the name).
    options: its own hyper-parameter section (a frozen dataclass of
      `config_fields.option` fields), or None. Flags, bounds and help are
      generated; values are recorded in the method's settings; a method
      reads them as attributes of its `MethodConfig` (`config.fedprox_mu`).
    reads: the shared method hyper-parameters it reads (`SHARED_FIELDS`:
      client_epochs, client_batch_size, client_learning_rate,
      server_learning_rate). A flag no method of a run reads is refused
      (`methods.usage`).
    refuses: ((component name or kind, reason), ...): what it cannot be
      combined with in one method; a kind (`CLIENT_WORK`, `DATA_SIDE`,
      `MIXING`) refuses every component of it. The reason completes
      "... cannot be combined with <reason>".
    module: the declaring module (set by `register`).
  """
  kind: ClassVar[str] = ""
  name: str
  citation: str
  summary: str = ""
  label: str = ""
  options: Optional[type] = None
  reads: Tuple[str, ...] = ()
  refuses: Tuple[Tuple[str, str], ...] = ()
  module: str = ""

  @property
  def display(self) -> str:
    return self.label or self.name

  def option_names(self) -> Tuple[str, ...]:
    """Its own hyper-parameters (flag names)."""
    return (tuple(f.name for f in dataclasses.fields(self.options))
            if self.options is not None else ())

  def recorded(self, config) -> Dict[str, object]:
    """Its own hyper-parameters' values in `config` (a `MethodConfig`)."""
    return {n: getattr(config, n) for n in self.option_names()}

  def refusal(self, other: "Component") -> Optional[str]:
    """Why it cannot be combined with component `other`, or None."""
    refused = dict(self.refuses)
    if other.name in refused:
      return refused[other.name]
    if other.kind in refused:
      return f"{other.display}: {refused[other.kind]}"
    return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Algorithm(Component):
  """A registered algorithm.

  Attributes:
    build: `(config, inputs, parts: methods.BuildParts) -> (process,
      settings)`: a `tff.learning.templates.LearningProcess` (or an object
      with `build_training_process(fed_data, spec)`, e.g. a
      `stateful.Method`) using `parts` (the client work, the server and
      client optimizers), and what it records beside its options. An
      algorithm whose round is FedAvg's declares `algorithms.fedavg.build`:
      client groups and the mixing strategies then cover it.
    server_optimizer: its default server optimizer (a registered
      `ServerOptimizer`; `@<optimizer>` in a method name replaces it), or
      None: it has no server-optimizer slot.
  """
  kind: ClassVar[str] = ALGORITHM
  build: Callable
  server_optimizer: Optional[str] = "sgd"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Variant(Component):
  """A variant: a `ClientWork` or `DataSide` component.

  Attributes:
    shorthand: help of its `--<name>` flag ("also run each algorithm with
      it", `MethodsConfig.expand`), or "" for none.
  """
  shorthand: str = ""


class LocalObjective(NamedTuple):
  """A client work given as its local objective (`learning.local`).

  Attributes:
    fn: `(output, batch, client) -> (loss, gradient term or None)`.
    message: values the server broadcasts to every client
      (`client.message`), e.g. FedIR's target p.
    label_counts: its batches carry the client's class counts
      (`client_data.LABEL_COUNTS_KEY`, FedIR's q_k).
  """
  fn: Callable
  message: Any = ()
  label_counts: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClientWork(Variant):
  """Replaces the clients' update; give exactly one of:

  Attributes:
    objective: `(config, inputs) -> LocalObjective` (or its function): the
      local step's objective. The per-client process, the client-group
      slot and the mixing strategies' client work are generated from it.
    build: `(config, inputs) -> (ClientWorkProcess, settings)`: a client
      work of one's own (per client only: client groups and the mixing
      strategies do not cover it).
  """
  kind: ClassVar[str] = CLIENT_WORK
  objective: Optional[Callable] = None
  build: Optional[Callable] = None

  def __post_init__(self):
    if (self.objective is None) == (self.build is None):
      raise ValueError(f"client work {self.name!r}: give exactly one of "
                       "objective (a local objective) and build (a client "
                       "work process)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataSide(Variant):
  """Changes what clients train on and who is sampled: `build(config,
  inputs, spec, sampler) -> (spec, sampler, settings)` (a
  `client_data.TrainingSpec`, a sampler with `round_keys(round)` and a
  `name`, and what it records beside its options)."""
  kind: ClassVar[str] = DATA_SIDE
  build: Callable


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerOptimizer(Component):
  """Applies the aggregated update on the server.

  Attributes:
    build: `config -> tff.learning.optimizers.Optimizer`; it reads
      `config.server_learning_rate`, the run's flag, the method's own or,
      when neither is given, `learning_rate`.
    learning_rate: its own default eta_s.
    settings: `config -> dict` it records (default: `server_optimizer`
      name, the shared hyper-parameters it reads, its own options).
  """
  kind: ClassVar[str] = SERVER_OPTIMIZER
  build: Callable
  learning_rate: float = 1.0
  settings: Optional[Callable] = None

  def record(self, config) -> Dict[str, object]:
    if self.settings is not None:
      return dict(self.settings(config))
    out = {"server_optimizer": self.name}
    out.update({n: getattr(config, n) for n in self.reads})
    out.update(self.recorded(config))
    return out


class BuildParts:
  """What `build_method` hands an algorithm's builder.

  Attributes:
    client_optimizer: the clients' SGD of --client_learning_rate.
    server_optimizer: the method's server optimizer (a
      `tff.learning.optimizers.Optimizer`), or None for an algorithm
      without one.
    objective: the client-work variant's `LocalObjective`, or None (the
      model's loss).
    group_size: clients per client-group slot (1: per client).
    client_work: the client-work process (built when first read): the
      variant's own, or the per-client work of `objective`.
  """

  def __init__(self, model_fn, client_optimizer=None, server_optimizer=None,
               objective: Optional[LocalObjective] = None,
               client_work_fn: Optional[Callable[[], Any]] = None,
               group_size: int = 1, num_classes: Optional[int] = None):
    self._model_fn, self._num_classes = model_fn, num_classes
    self.client_optimizer = client_optimizer
    self.server_optimizer = server_optimizer
    self.objective = objective
    self.group_size = group_size
    self._client_work_fn = client_work_fn
    self._client_work = None

  @property
  def client_work(self):
    if self._client_work is None:
      if self._client_work_fn is not None:
        self._client_work = self._client_work_fn()
      else:
        from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
        objective = self.objective or LocalObjective(local.model_loss)
        self._client_work = local.build_client_work(
            self._model_fn, self.client_optimizer, objective.fn,
            message=objective.message,
            label_counts=(local.COUNTS_IN_BATCHES if objective.label_counts
                          else None),
            num_classes=self._num_classes)
    return self._client_work


FEDAVG_ROUND = "federated_vision.algorithms.fedavg.build"


def fedavg_round(algorithm: Algorithm) -> bool:
  """Its round is FedAvg's (its build is `algorithms.fedavg.build`): client
  groups and the mixing strategies, which implement FedAvg's round, cover
  it."""
  build = algorithm.build
  return (f"{getattr(build, '__module__', '')}."
          f"{getattr(build, '__qualname__', '')}" == FEDAVG_ROUND)


def refuses_kind(component: Component, kind: str) -> Optional[str]:
  """Its reason for refusing every component of `kind`, or None."""
  return dict(component.refuses).get(kind)


def client_spec(config, seed: int):
  """The method's local `client_data.TrainingSpec` before its data-side
  variants: B and E from the config when its algorithm reads them, else
  B = inf and E = 1 (McMahan et al. 2017's FedSGD, which reads neither);
  shuffled, seeded."""
  from federated_vision.data import client_data  # pylint: disable=g-import-not-at-top
  reads = get(config.algorithm, ALGORITHM).reads
  return client_data.TrainingSpec(
      batch_size=((config.client_batch_size or None)
                  if "client_batch_size" in reads else None),
      epochs=config.client_epochs if "client_epochs" in reads else 1,
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
