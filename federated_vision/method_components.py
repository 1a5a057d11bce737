"""The parts a method is composed of, and their registries.

A method (`methods.build_method`) is an explicit, named composition:
an *algorithm* (server side + its local B, E) + at most one *client-work
variant* + any *data-side variants* [+ a *mixing strategy*,
`federated_vision.mixing_strategies`]. Each part is a registered component
(`register_algorithm`, `register_variant`, `mixing_strategies.
register_mixing_strategy`) whose hyper-parameters are fields named as the
binaries' flags, checked once (`validate_method_config`), and whose builder
returns the settings summary.json records.

Importing this module does not import TensorFlow (validation runs before any
data or TFF is loaded).
"""

import dataclasses
import functools
import math
from typing import (Callable, Dict, Mapping, NamedTuple, Optional, Sequence,
                    Tuple)

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad
from federated_vision.registry import Registry

FEDIR_TARGETS = ("uniform", "test")
CLIENT_WORK = "client_work"
DATA_SIDE = "data_side"


@dataclasses.dataclass(frozen=True, kw_only=True)
class HyperParameters:
  """Local and server hyper-parameters of a method (keyword-only fields;
  names are the binaries' flags).

  Attributes:
    client_epochs: local epochs E (fedsgd: 1).
    client_batch_size: local batch size B; 0 = B = inf (fedsgd: inf).
    client_learning_rate: client SGD learning rate.
    server_learning_rate: eta_s.
    server_momentum: beta of fedavgm (Hsu et al. 2019); others use none.
    virtual_client_size: fedvc's N_VC.
    fedir_target: fedir's p(y): 'uniform' or 'test' (server test labels).
    fedprox_mu: fedprox's proximal strength mu (Li et al. 2020, eq. 2).
  """
  client_epochs: int = 1
  client_batch_size: int = 10
  client_learning_rate: float = 0.05
  server_learning_rate: float = 1.0
  server_momentum: float = 0.9
  virtual_client_size: int = 64
  fedir_target: str = "uniform"
  fedprox_mu: float = 0.01


@dataclasses.dataclass(frozen=True)
class MethodConfig(HyperParameters):
  """One method: `MethodConfig(algorithm, variants, **hyper_parameters)`.

  Attributes:
    algorithm: registered algorithm (fedavg, fedavgm, fedsgd, ...).
    variants: registered variants applied to it, e.g. ("fedir", "fedvc").
    options: values of the variants' own hyper-parameters
      (`Variant.options`, `config_fields`).
    (and the keyword-only `HyperParameters`)
  """
  algorithm: str = "fedavg"
  variants: Tuple[str, ...] = ()
  options: config_fields.Options = config_fields.Options(config_fields.VARIANT)

  @property
  def name(self) -> str:
    """'<algorithm>[+<variant>...]', e.g. 'fedavgm+fedir+fedvc'."""
    return "+".join((self.algorithm,) + tuple(self.variants))


class MethodInputs(NamedTuple):
  """The plain arguments every method builder gets.

  Attributes:
    model_fn: no-arg `tff.learning.models.VariableModel` builder.
    num_classes: C.
    client_ids: all client ids.
    client_sizes: n_k, aligned with `client_ids`.
    clients_per_round: clients (or virtual clients) per round.
    seed: seed of sampling and local shuffling.
    test_labels_fn: no-arg function returning the server's test labels
      (fedir_target='test'), or None.
  """
  model_fn: Callable
  num_classes: int
  client_ids: Sequence[str]
  client_sizes: Sequence[int]
  clients_per_round: int
  seed: int = 0
  test_labels_fn: Optional[Callable[[], Sequence[int]]] = None


class Method(NamedTuple):
  """One method of an experiment, ready for `training_loop`.

  `fed_data` is the data the method trains on when it is not the
  experiment's (mixing's oracle and example transfer), else None;
  `extra_broadcast_bytes` what the server broadcasts per round beyond the
  model (mixing; 0 otherwise).
  """
  name: str
  process: object
  spec: object
  sampler: object
  settings: Mapping[str, object]
  fed_data: Optional[object] = None
  extra_broadcast_bytes: int = 0


# build(config, inputs, client_work or None) -> (process, settings).
AlgorithmBuilder = Callable[[MethodConfig, MethodInputs, Optional[object]],
                            Tuple[object, Dict[str, object]]]


def default_client_spec(config: MethodConfig, seed: int):
  """`TrainingSpec` of local B (0 = inf) and E, shuffled, seeded."""
  from federated_vision.data import client_data  # pylint: disable=g-import-not-at-top
  return client_data.TrainingSpec(
      batch_size=config.client_batch_size or None, epochs=config.client_epochs,
      shuffle_buffer=10_000, seed=seed)


def fedsgd_client_spec(config: MethodConfig, seed: int):
  """McMahan et al. 2017's FedSGD: B = inf, E = 1 whatever the config says."""
  return default_client_spec(
      dataclasses.replace(config, client_batch_size=0, client_epochs=1), seed)


@dataclasses.dataclass(frozen=True)
class Algorithm:
  """A registered algorithm.

  Attributes:
    name: registry name (an --algorithm value).
    build: `(config, inputs, client_work) -> (process, settings)`; it must
      compose `client_work` when not None (a client-work variant's).
    client_spec: `(config, seed) -> client_data.TrainingSpec`, the local
      data side (B, E) the algorithm owns.
    server_optimizer: `config -> (tff optimizer, settings)`, the server
      optimizer alone, or None; an algorithm with one composes with the
      mixing strategies (`mixing_strategies`), which bring their own process.
    check: `config -> None`, raising ConfigError for a combination the
      algorithm refuses (e.g. a variant), at config validation; or None.
    client_state_models: model-sized float32 values kept per client across
      rounds (`training.client_states`; SCAFFOLD: 1), 0 for none.
  """
  name: str
  build: AlgorithmBuilder
  client_spec: Callable = default_client_spec
  server_optimizer: Optional[Callable] = None
  check: Optional[Callable[[MethodConfig], None]] = None
  client_state_models: int = 0


@dataclasses.dataclass(frozen=True)
class Variant:
  """A registered variant.

  Attributes:
    name: registry name (and the binaries' --<name> flag).
    kind: CLIENT_WORK (`build` returns `(client work process, settings)`) or
      DATA_SIDE (`build` returns `(spec, sampler, settings)` from the
      algorithm's spec and sampler).
    build: see `kind`; called as `build(config, inputs)` for CLIENT_WORK and
      `build(config, inputs, spec, sampler)` for DATA_SIDE.
    mixing: `(config, inputs) -> (StrategyInputs fields, settings)`: what the
      variant changes in a mixing strategy's method, or None (the variant
      does not compose with the mixing strategies).
    options: the variant's own hyper-parameter section (a frozen dataclass
      of `config_fields.option` fields: generated flags, recorded in the
      method's settings; `config.options.section(name)` reads it), or None.
  """
  name: str
  kind: str
  build: Callable
  mixing: Optional[Callable] = None
  options: Optional[type] = None


_ALGORITHMS: Registry[Algorithm] = Registry("algorithm", "algorithm")
_VARIANTS: Registry[Variant] = Registry("variant", "variants")


def register_algorithm(algorithm: Algorithm) -> None:
  """Adds an algorithm (see `Algorithm`); names are unique across algorithms
  and variants."""
  if algorithm.name in _VARIANTS:
    raise ValueError(f"algorithm name {algorithm.name!r} is already "
                     "registered as a variant")
  _ALGORITHMS.add(algorithm.name, algorithm)


def register_variant(variant: Variant) -> None:
  """Adds a client-work or data-side variant."""
  if variant.kind not in (CLIENT_WORK, DATA_SIDE):
    raise ValueError(f"variant kind must be {CLIENT_WORK!r} or {DATA_SIDE!r}, "
                     f"got {variant.kind!r}")
  if variant.name in _ALGORITHMS:
    raise ValueError(f"variant name {variant.name!r} is already registered as "
                     "an algorithm")
  if variant.options is not None and variant.name not in _VARIANTS:
    config_fields.declare(config_fields.VARIANT, variant.name, variant.options)
  _VARIANTS.add(variant.name, variant)


def algorithm_names() -> Tuple[str, ...]:
  return _ALGORITHMS.names()


def variant_names(kind: Optional[str] = None) -> Tuple[str, ...]:
  return _VARIANTS.names(lambda v: kind in (None, v.kind))


def check_positive(name: str, value: float) -> None:
  """ConfigError naming `name` unless `value` is a finite number > 0."""
  if not (value > 0 and math.isfinite(value)):
    raise bad(name, value, "must be a finite number > 0")


def validate_method_config(config: MethodConfig) -> None:
  """Checks one method's settings (before any data or TFF is loaded).

  A config that passed is remembered (`_valid`): the checks run once per
  method and run (config validation, then the builders), and a later
  registration can only make more configs valid (ours: issue 17, "validated
  five times per run").

  Raises:
    ConfigError: naming the field (== flag).
    ValueError: two client-work variants in one method.
  """
  try:
    hash(config)
  except TypeError:  # e.g. variants given as a list: not remembered.
    _valid.__wrapped__(config)
    return
  _valid(config)


@functools.lru_cache(maxsize=None)  # Successes only: errors are not cached.
def _valid(config: MethodConfig) -> bool:
  """`validate_method_config`'s checks (True, or raises)."""
  if config.algorithm not in _ALGORITHMS:
    raise bad("algorithm", config.algorithm,
              f"each must be one of {', '.join(algorithm_names())}")
  for v in config.variants:
    if v not in _VARIANTS:
      raise ConfigError(f"method {config.name}: unknown variant {v!r} (one of "
                        f"{', '.join(variant_names())})", "variants")
  if len(set(config.variants)) != len(config.variants):
    raise ValueError(f"method {config.name}: a variant is repeated")
  config.options.validate(config.variants)
  if _ALGORITHMS.get(config.algorithm).check is not None:
    _ALGORITHMS.get(config.algorithm).check(config)
  work = [v for v in config.variants if _VARIANTS.get(v).kind == CLIENT_WORK]
  if len(work) > 1:
    raise ValueError(f"method {config.name}: {' and '.join(work)} both replace "
                     "the client work; a method takes at most one client-work "
                     "variant (plus any data-side ones)")
  check_positive("client_learning_rate", config.client_learning_rate)
  check_positive("server_learning_rate", config.server_learning_rate)
  if not 0 <= config.server_momentum < 1:
    raise bad("server_momentum", config.server_momentum, "must be in [0, 1)")
  if config.client_epochs < 1:
    raise bad("client_epochs", config.client_epochs, "must be >= 1")
  if config.client_batch_size < 0:
    raise bad("client_batch_size", config.client_batch_size,
              "must be >= 0 (0 = B = inf)")
  if config.virtual_client_size < 1:
    raise bad("virtual_client_size", config.virtual_client_size, "must be >= 1")
  if config.fedir_target not in FEDIR_TARGETS:
    raise bad("fedir_target", config.fedir_target,
              f"must be one of {', '.join(FEDIR_TARGETS)}")
  if not (config.fedprox_mu >= 0 and math.isfinite(config.fedprox_mu)):
    raise bad("fedprox_mu", config.fedprox_mu, "must be a finite number >= 0")
  return True


def get_algorithm(name: str) -> Algorithm:
  """The registered algorithm (ConfigError naming --algorithm if unknown)."""
  return _ALGORITHMS.get(name)


def get_variant(name: str) -> Variant:
  """The registered variant (ConfigError naming --variants if unknown)."""
  return _VARIANTS.get(name)


