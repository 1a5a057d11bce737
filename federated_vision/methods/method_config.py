"""One method's configuration, the inputs of its builder, and what it builds.

`MethodConfig` is a method's components (algorithm, variants, server
optimizer) and the values of every method hyper-parameter: the shared ones
(`HyperParameters`: local E and B, the client and server learning rates)
and every component's own (`Component.options`), held in one
`config_fields.Options` of kind "method" and read as attributes
(`config.virtual_client_size`). `validate` is the one check of a method's
configuration: each field's declared bounds, each used component's own
`validate()`, the combination rules; config validation calls it once per
method before any data or TFF is loaded.

Importing this module does not import TensorFlow.
"""

import dataclasses
from typing import Callable, Mapping, NamedTuple, Optional, Sequence, Tuple

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad
from federated_vision.methods import components as comp

from federated_vision.methods.components import (  # pylint: disable=unused-import
    SHARED_FIELDS, SHARED_OWNER, HyperParameters)


@dataclasses.dataclass(frozen=True, init=False)
class MethodConfig:
  """One method: `MethodConfig(algorithm, variants, server_optimizer,
  **hyper_parameters)`.

  Attributes:
    algorithm: a registered `Algorithm`.
    variants: registered variants, e.g. ("fedir", "fedvc").
    server_optimizer: a registered `ServerOptimizer`, or None: the
      algorithm's default.
    options: every method hyper-parameter's value (`config_fields.Options`
      of kind "method"); any declared field is also an attribute and a
      keyword argument (`MethodConfig("fedavg", client_epochs=2)`).
    overrides: the fields this method sets itself (its name's
      `:<field>=<value>` parts, `methods.names`), sorted.
  """
  algorithm: str
  variants: Tuple[str, ...]
  server_optimizer: Optional[str]
  options: config_fields.Options
  overrides: Tuple[str, ...]

  def __init__(self, algorithm: str = "fedavg", variants=(),
               server_optimizer: Optional[str] = None,
               options: Optional[config_fields.Options] = None,
               overrides=(), **values):
    options = options or config_fields.Options(config_fields.METHOD)
    if values:
      options = options.replace(values)
    object.__setattr__(self, "algorithm", algorithm)
    object.__setattr__(self, "variants", tuple(variants))
    object.__setattr__(self, "server_optimizer", server_optimizer)
    object.__setattr__(self, "options", options)
    object.__setattr__(self, "overrides", tuple(sorted(overrides)))

  def __getattr__(self, name: str):
    if name.startswith("__"):
      raise AttributeError(name)
    try:
      value = self.options.get(name)
    except AttributeError:
      raise AttributeError(f"MethodConfig has no field {name!r}") from None
    if name == "server_learning_rate" and value is None and self.optimizer:
      # Not given: the server optimizer's own default.
      return comp.get(self.optimizer, comp.SERVER_OPTIMIZER).learning_rate
    return value

  @property
  def optimizer(self) -> Optional[str]:
    """The server optimizer it uses: its own, else its algorithm's."""
    if self.server_optimizer is not None:
      return self.server_optimizer
    return comp.get(self.algorithm, comp.ALGORITHM).server_optimizer

  @property
  def name(self) -> str:
    """Its canonical name (`methods.names.method_name`)."""
    from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
    return names.method_name(self)

  def used(self) -> Tuple[comp.Component, ...]:
    """Its components: algorithm, variants, server optimizer (if any)."""
    out = [comp.get(self.algorithm, comp.ALGORITHM)]
    out += [comp.get(v) for v in self.variants]
    if self.optimizer is not None:
      out.append(comp.get(self.optimizer, comp.SERVER_OPTIMIZER))
    return tuple(out)


def from_spec(spec, shared: config_fields.Options) -> MethodConfig:
  """The `MethodConfig` of a parsed method name (`names.parse`), with the
  run's values `shared` and the name's own settings over them."""
  options = shared.replace(dict(spec.overrides)) if spec.overrides else shared
  return MethodConfig(spec.algorithm, spec.variants, spec.server_optimizer,
                      options, overrides=tuple(k for k, _ in spec.overrides))


class MethodInputs(NamedTuple):
  """The plain arguments every method builder gets.

  Attributes:
    model_fn: no-arg `tff.learning.models.VariableModel` builder.
    num_classes: C.
    client_ids: all client ids.
    client_sizes: n_k, aligned with `client_ids`.
    clients_per_round: clients (or virtual clients) per round.
    seed: seed of sampling and local shuffling.
    test_labels_fn: no-arg function returning the server's test labels, or
      None.
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


def validate(config: MethodConfig) -> None:
  """Checks one method's configuration (before any data or TFF is loaded).

  The algorithm, variants and server optimizer are registered and of their
  kinds; at most one client-work variant; no component refuses another;
  every field it reads is within its declared bounds and passes its
  section's `validate()` (`config_fields.Options.validate`).

  Raises:
    ConfigError: naming the field (== flag).
    ValueError: two client-work variants in one method.
  """
  if config.algorithm not in comp.names(comp.ALGORITHM):
    raise bad("algorithm", config.algorithm,
              f"each must be one of {', '.join(comp.names(comp.ALGORITHM))}")
  for v in config.variants:
    if v not in comp.names(comp.CLIENT_WORK) + comp.names(comp.DATA_SIDE):
      raise ConfigError(f"method {config.name}: unknown variant {v!r} (one "
                        f"of {', '.join(comp.names(comp.CLIENT_WORK) + comp.names(comp.DATA_SIDE))})",
                        "variants")
  algorithm = comp.get(config.algorithm)
  for v in config.variants:
    reason = comp.refuses_kind(algorithm, comp.get(v).kind)
    if reason:
      raise ConfigError(f"--methods: {config.name}: {config.algorithm} takes "
                        f"no variant {v} ({reason})", "methods")
  if len(set(config.variants)) != len(config.variants):
    raise ValueError(f"method {config.name}: a variant is repeated")
  work = [v for v in config.variants if comp.get(v).kind == comp.CLIENT_WORK]
  if len(work) > 1:
    raise ValueError(f"method {config.name}: {' and '.join(work)} both replace "
                     "the client work; a method takes at most one client-work "
                     "variant (plus any data-side ones)")
  if config.server_optimizer is not None:
    comp.get(config.server_optimizer, comp.SERVER_OPTIMIZER)
    if comp.get(config.algorithm).server_optimizer is None:
      raise ConfigError(f"method {config.name}: {config.algorithm} has no "
                        "server optimizer to replace", "methods")
  used = config.used()
  for a in used:
    for b in used:
      reason = a.refusal(b)
      if reason:
        raise ConfigError(f"method {config.name}: {a.name} cannot be combined "
                          f"with {reason}", "methods")
  # Every method field's bounds and its section's checks, used or not (a
  # value out of range is an error wherever it is set).
  config.options.validate((SHARED_OWNER,) + comp.names())
