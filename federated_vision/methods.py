"""Methods: a learning process + the client data spec + the client sampler.

A `Method` is what one curve of an experiment needs: the TFF
`LearningProcess`, the `client_data.TrainingSpec` that builds each selected
client's batches inside the executor, the sampler choosing the clients of a
round, and `settings`, the fully resolved description recorded in
hparams.json / summary.json (report_main reads it; nothing parses names).

A method = an *algorithm* (server side + local B, E: fedavg, fedavgm, fedsgd)
plus *variants* of two kinds, after FedJAX's "an algorithm owns its data-side
settings":
  * client-work variants replace the client work of the process: fedir
    (Hsu, Qi & Brown 2020, importance reweighting), fedprox (Li et al. 2020,
    TFF's proximal client work). At most one per method: both replace the
    same component, so combining them is a ValueError.
  * data-side variants change the spec / sampler only: fedvc (virtual
    clients, `algorithms.fedvc`).

Mixing (Augenstein et al., `algorithms.mixing`): with `MixingSettings.mixing`
each method runs once per strategy (none, parallel, example_transfer,
gradient_transfer, oracle) on the task's `MixingScenario`
(`build_mixing_method`); the `Method` then carries the data it trains on
(`fed_data`: the oracle's / example transfer's client data) and its
`extra_broadcast_bytes` per round. `check_mixing_combination` says which
algorithm / variant combinations are refused.

Extending: `register_algorithm(Algorithm(...))` or `register_variant(Variant(
...))` from any module (e.g. one passed to the binaries' --extra_modules).

Importing this module does not import TensorFlow (validation runs before any
data or TFF is loaded); builders import the algorithms when called.
"""

import dataclasses
import math
from typing import (Callable, Dict, Mapping, NamedTuple, Optional, Sequence,
                    Tuple)

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad
from federated_vision.mixing_settings import (  # pylint: disable=unused-import
    MIXING_STRATEGIES, MixingSettings, check_mixing_combination)
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
  """
  name: str
  build: AlgorithmBuilder
  client_spec: Callable = default_client_spec


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
    options: the variant's own hyper-parameter section (a frozen dataclass
      of `config_fields.option` fields: generated flags, recorded in the
      method's settings; `config.options.section(name)` reads it), or None.
  """
  name: str
  kind: str
  build: Callable
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


def _positive(name: str, value: float) -> None:
  if not (value > 0 and math.isfinite(value)):
    raise bad(name, value, "must be a finite number > 0")


def validate_method_config(config: MethodConfig) -> None:
  """Checks one method's settings (before any data or TFF is loaded).

  Raises:
    ConfigError: naming the field (== flag).
    ValueError: two client-work variants in one method.
  """
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
  work = [v for v in config.variants if _VARIANTS.get(v).kind == CLIENT_WORK]
  if len(work) > 1:
    raise ValueError(f"method {config.name}: {' and '.join(work)} both replace "
                     "the client work; a method takes at most one client-work "
                     "variant (plus any data-side ones)")
  _positive("client_learning_rate", config.client_learning_rate)
  _positive("server_learning_rate", config.server_learning_rate)
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


def build_method(config: MethodConfig, inputs: MethodInputs) -> Method:
  """Builds the method's process, spec, sampler and resolved settings.

  Raises:
    ConfigError / ValueError: see `validate_method_config`.
  """
  validate_method_config(config)
  from federated_vision.algorithms import sampling  # pylint: disable=g-import-not-at-top
  variants = [_VARIANTS.get(v) for v in config.variants]
  client_work = None
  settings = {"client_work": "plain", "data_side": "plain",
              "fedir_target": None, "fedprox_mu": None}
  for v in variants:
    if v.kind == CLIENT_WORK:
      client_work, extra = v.build(config, inputs)
      settings.update(extra, client_work=v.name)
    own = config.options.section(v.name)  # Its declared hyper-parameters.
    settings.update(dataclasses.asdict(own) if own is not None else {})
  process, algo_settings = _ALGORITHMS.get(config.algorithm).build(
      config, inputs, client_work)
  spec = client_spec(config, inputs.seed)
  settings.update(algo_settings)
  sampler = sampling.UniformSampler(inputs.client_ids,
                                    inputs.clients_per_round, inputs.seed)
  settings.update(sampler="uniform", N_VC=None)
  for v in variants:
    if v.kind == DATA_SIDE:
      spec, sampler, extra = v.build(config, inputs, spec, sampler)
      settings.update(extra, data_side=v.name)
  settings.update(name=config.name, algorithm=config.algorithm,
                  variants=list(config.variants),
                  E=spec.epochs, B=spec.batch_size,
                  clients_per_round=inputs.clients_per_round)
  return Method(config.name, process, spec, sampler, settings)


def client_spec(config: MethodConfig, seed: int = 0):
  """The method's local `client_data.TrainingSpec` before data-side variants
  (its algorithm's B, E; e.g. B = inf, E = 1 for fedsgd).

  Raises:
    ConfigError: see `validate_method_config`.
  """
  validate_method_config(config)
  return _ALGORITHMS.get(config.algorithm).client_spec(config, seed)


def server_settings(optimizer: str, learning_rate: float,
                    momentum: float = 0.0) -> Dict[str, object]:
  """Recorded server-optimizer settings, with the effective learning rate
  eta_s / (1 - beta) of SGD with momentum (Hsu et al. 2019)."""
  return {"server_optimizer": optimizer, "server_learning_rate": learning_rate,
          "server_momentum": momentum,
          "effective_server_learning_rate": learning_rate / (1.0 - momentum)}


# --- Built-in algorithms and variants. ---------------------------------------

def _fedavg_family(momentum: bool, fedsgd: bool = False) -> AlgorithmBuilder:
  """FedAvg (McMahan et al. 2017), FedAvgM (Hsu et al. 2019), FedSGD."""
  def builder(config, inputs, client_work):
    import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
    from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
    lr, beta = config.server_learning_rate, config.server_momentum
    if momentum:
      server = fedavg.build_server_momentum_optimizer(lr, beta)
      settings = server_settings("sgdm", lr, beta)
    else:
      server = tff.learning.optimizers.build_sgdm(lr)
      settings = server_settings("sgd", lr)
    if fedsgd:
      process = fedavg.build_fedsgd(inputs.model_fn,
                                    config.client_learning_rate, server,
                                    client_work=client_work)
    else:
      process = fedavg.build_fedavg(
          inputs.model_fn,
          tff.learning.optimizers.build_sgdm(config.client_learning_rate),
          server, client_work=client_work)
    settings.update(client_optimizer="sgd",
                    client_learning_rate=config.client_learning_rate)
    return process, settings
  return builder


def _fedir(config: MethodConfig, inputs: MethodInputs):
  """FedIR's importance-weighted client work (Hsu, Qi & Brown 2020).

  q_k is client k's class distribution over its whole local data, as in the
  paper, read once per client from the counts `training_loop.
  build_training_process` adds to its batches (`client_label_counts=True`):
  not counted over the round's batches, which under FedVC are a resample of
  N_VC examples (a noisy estimate of q_k) and would need a second pass. The
  mixing strategies' FedIR (`algorithms.mixing`) counts the round's batches,
  which there include the transferred centralized examples.
  """
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision.algorithms import fedir  # pylint: disable=g-import-not-at-top
  target = None
  if config.fedir_target == "test":
    if inputs.test_labels_fn is None:
      raise bad("fedir_target", "test", "needs the server's test labels")
    target = fedir.estimate_target_distribution(inputs.test_labels_fn(),
                                                inputs.num_classes)
  work = fedir.build_fedir_client_work(
      inputs.model_fn,
      tff.learning.optimizers.build_sgdm(config.client_learning_rate),
      inputs.num_classes, target_distribution=target,
      client_label_counts=True)
  return work, {"fedir_target": config.fedir_target}


def _fedprox(config: MethodConfig, inputs: MethodInputs):
  """FedProx (Li et al. 2020): gradient + mu (w - w_server), TFF 0.87's
  `proximal_client_work` (what `tff.learning.algorithms.
  build_weighted_fed_prox` composes)."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision.runtime import learning_internals  # pylint: disable=g-import-not-at-top
  work = learning_internals.build_proximal_client_work(
      inputs.model_fn,
      tff.learning.optimizers.build_sgdm(config.client_learning_rate),
      config.fedprox_mu)
  return work, {"fedprox_mu": config.fedprox_mu}


def _fedvc(config: MethodConfig, inputs: MethodInputs, spec, sampler):
  """FedVC's virtual clients (`algorithms.fedvc.virtual_clients`)."""
  del sampler
  from federated_vision.algorithms import fedvc  # pylint: disable=g-import-not-at-top
  spec, sampler = fedvc.virtual_clients(
      spec, inputs.client_ids, inputs.client_sizes, inputs.clients_per_round,
      config.virtual_client_size, inputs.seed)
  return spec, sampler, {"sampler": "size_proportional",
                         "N_VC": config.virtual_client_size}


register_algorithm(Algorithm("fedavg", _fedavg_family(momentum=False)))
register_algorithm(Algorithm("fedavgm", _fedavg_family(momentum=True)))
register_algorithm(Algorithm("fedsgd", _fedavg_family(False, fedsgd=True),
                             fedsgd_client_spec))
register_variant(Variant("fedir", CLIENT_WORK, _fedir))
register_variant(Variant("fedprox", CLIENT_WORK, _fedprox))
register_variant(Variant("fedvc", DATA_SIDE, _fedvc))


# --- Mixing federated and centralized data (Augenstein et al.). -------------

def validate_mixing(mixing: MixingSettings,
                    methods: Sequence[MethodConfig] = (),
                    given: Sequence[str] = ()) -> None:
  """Checks the mixing settings and their combination with `methods`.

  Raises:
    ConfigError: naming the flag (both flags for a refused combination).
  """
  defaults = MixingSettings()
  if not mixing.mixing:
    for f in dataclasses.fields(MixingSettings):
      if f.name != "mixing" and (f.name in given or getattr(
          mixing, f.name) != getattr(defaults, f.name)):
        raise ConfigError(f"--{f.name}: only used with --mixing", f.name)
    return
  if len(set(mixing.mixing)) != len(mixing.mixing):
    raise bad("mixing", list(mixing.mixing), "a strategy is repeated")
  if not 0 <= mixing.merge_weight <= 1:
    raise bad("merge_weight", mixing.merge_weight, "must be in [0, 1]")
  for name in ("central_steps", "central_batch_size"):
    if getattr(mixing, name) < 1:
      raise bad(name, getattr(mixing, name), "must be >= 1")
  if mixing.central_examples_per_client < 0:
    raise bad("central_examples_per_client",
              mixing.central_examples_per_client, "must be >= 0")
  if mixing.central_learning_rate is not None:
    _positive("central_learning_rate", mixing.central_learning_rate)
  if not math.isfinite(mixing.gradient_weight):
    raise bad("gradient_weight", mixing.gradient_weight, "must be finite")
  for strategy in mixing.mixing:
    for method in methods or (MethodConfig(),):
      check_mixing_combination(strategy, method.algorithm, method.variants)


def build_mixing_method(config: MethodConfig, strategy: str,
                        mixing: MixingSettings, inputs: MethodInputs,
                        scenario) -> Method:
  """One method x one mixing strategy on `scenario` (a
  `data.mixing_scenarios.MixingScenario`), named '<method>+<strategy>'.

  The process, data, spec, sampler and payload come from
  `algorithms.mixing.build_mixing_method`: fedavgm gives it FedAvgM's server
  optimizer, fedir FedIR's client work, fedvc virtual clients.

  Raises:
    ConfigError: see `validate_method_config`, `check_mixing_combination`.
  """
  validate_method_config(config)
  check_mixing_combination(strategy, config.algorithm, config.variants)
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
  from federated_vision.algorithms import fedir  # pylint: disable=g-import-not-at-top
  from federated_vision.algorithms import mixing as mixing_lib  # pylint: disable=g-import-not-at-top
  lr, beta = config.server_learning_rate, config.server_momentum
  if config.algorithm == "fedavgm":
    server = fedavg.build_server_momentum_optimizer(lr, beta)
    settings = server_settings("sgdm", lr, beta)
  else:
    server = tff.learning.optimizers.build_sgdm(lr)
    settings = server_settings("sgd", lr)
  use_fedir = "fedir" in config.variants
  target = None
  if use_fedir and config.fedir_target == "test":
    if inputs.test_labels_fn is None:
      raise bad("fedir_target", "test", "needs the server's test labels")
    target = fedir.estimate_target_distribution(inputs.test_labels_fn(),
                                                inputs.num_classes)
  built = mixing_lib.build_mixing_method(
      strategy, fed_data=scenario.federated, central=scenario.central,
      model_fn=inputs.model_fn,
      client_optimizer=tff.learning.optimizers.build_sgdm(
          config.client_learning_rate),
      spec=client_spec(config, inputs.seed),
      clients_per_round=inputs.clients_per_round, server_optimizer=server,
      config=mixing_lib.MixingConfig(
          merge_weight=mixing.merge_weight,
          central_steps=mixing.central_steps,
          central_batch_size=mixing.central_batch_size,
          central_learning_rate=mixing.central_learning_rate,
          examples_per_client=mixing.central_examples_per_client,
          gradient_weight=mixing.gradient_weight),
      fedir=use_fedir, fedir_target_distribution=target,
      virtual_client_size=(config.virtual_client_size
                           if "fedvc" in config.variants else None))
  name = f"{config.name}+{strategy}"
  settings.update(built.settings, name=name, algorithm=config.algorithm,
                  variants=list(config.variants), mixing=strategy,
                  client_work="fedir" if use_fedir else "plain",
                  data_side="fedvc" if "fedvc" in config.variants else "plain",
                  fedir_target=config.fedir_target if use_fedir else None,
                  fedprox_mu=None, client_optimizer="sgd",
                  client_learning_rate=config.client_learning_rate,
                  sampler=("size_proportional" if "fedvc" in config.variants
                           else "uniform"),
                  N_VC=built.spec.virtual_client_size,
                  E=built.spec.epochs, B=built.spec.batch_size,
                  clients_per_round=inputs.clients_per_round)
  return Method(name, built.process, built.spec, built.sampler, settings,
                built.fed_data, built.extra_broadcast_bytes)
