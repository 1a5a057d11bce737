"""Method names: the one grammar of `--methods` and of results' method keys.

    <algorithm>[+<variant>...][@<server optimizer>][:<field>=<value>...]

e.g. `fedavg+fedvc`, `fedavgm+fedir+fedvc`, `fedavg+fedvc@adam`,
`fedavg@adam:server_learning_rate=0.01:adam_beta_2=0.99`. A method trained
with a mixing strategy (--mixing) is named with the strategy as its last
'+' part (`fedavg+fedir+parallel@adam`). Each part is
parsed against the component registries (`methods.components`), so anything
registered (also from a module passed with --extra_modules) is reachable.

* Variants: client-work variants first, then data-side ones, each kind in
  the order given (`fedavgm+fedvc+fedir` is `fedavgm+fedir+fedvc`, the name
  the shorthand flags `--fedir --fedvc` give).
* `@<server optimizer>` replaces the algorithm's default server optimizer;
  naming the default (`fedavgm@sgdm`) is the plain name (`fedavgm`).
* `:<field>=<value>` sets one of the method's own hyper-parameters (any
  field it reads: shared ones such as server_learning_rate, or its
  components' options), overriding the run's flag for this method only:
  methods with different settings run side by side. Values are parsed by
  the field's declared type; overrides are sorted by field and their values
  written canonically (`repr` of a float), and a value equal to the run's
  is still part of the name (the name says what the method set itself).

So one method has one name: results of one method line up across runs
whichever spelling was used. Plain Python: no TensorFlow, no absl.
"""

import typing
from typing import NamedTuple, Optional, Sequence, Tuple

from federated_vision import config_fields
from federated_vision.errors import ConfigError, show
from federated_vision.methods import components as comp

FLAG = "methods"


class Spec(NamedTuple):
  """A parsed method name (`parse`); `mixing` is the mixing strategy a
  run's method trains with ('<method>+<strategy>', from --mixing)."""
  algorithm: str
  variants: Tuple[str, ...]
  server_optimizer: Optional[str] = None
  overrides: Tuple[Tuple[str, object], ...] = ()
  mixing: Optional[str] = None


def _error(names: Sequence[str], part: str, reason: str) -> ConfigError:
  return ConfigError(f"--{FLAG}={show(tuple(names))}: {part!r}: {reason}",
                     FLAG)


def parse_method(name: str, names: Sequence[str] = ()
                 ) -> Tuple[str, Tuple[str, ...]]:
  """(algorithm, variants in canonical order) of a composition
  '<algorithm>[+<variant>...]' (no `@` or `:` part; see `parse`).

  Raises:
    ConfigError: naming --methods and the bad part (empty name, unknown
      algorithm or variant, a repeated variant, two client-work variants).
  """
  names = tuple(names) or (name,)
  parts = [p.strip() for p in str(name).split("+")]
  if not name or not all(parts):
    raise _error(names, name, "empty method or variant name (a method is "
                 "<algorithm>[+<variant>...][@<server optimizer>])")
  algorithm, variants = parts[0], parts[1:]
  algorithms = comp.names(comp.ALGORITHM)
  variant_names = comp.names(comp.CLIENT_WORK) + comp.names(comp.DATA_SIDE)
  if algorithm not in algorithms:
    hint = (" (a variant; a method starts with its algorithm)"
            if algorithm in variant_names else "")
    raise _error(names, name, f"unknown algorithm {algorithm!r}{hint}; one of "
                 f"{', '.join(algorithms)}")
  for v in variants:
    if v not in variant_names:
      raise _error(names, name, f"unknown variant {v!r}; one of "
                   f"{', '.join(variant_names)}")
  if len(set(variants)) != len(variants):
    raise _error(names, name, "a variant is repeated")
  work = [v for v in variants if v in comp.names(comp.CLIENT_WORK)]
  if len(work) > 1:
    raise _error(names, name, f"{' and '.join(work)} both replace the client "
                 "work; a method takes at most one client-work variant")
  side = [v for v in variants if v not in work]
  return algorithm, tuple(work + side)


def parse(name: str, names: Sequence[str] = ()) -> Spec:
  """The whole method name (see the module docstring).

  Raises:
    ConfigError: naming --methods and the bad part.
  """
  names = tuple(names) or (name,)
  head, *settings = str(name).split(":")
  composition, at, optimizer = head.partition("@")
  composition, mixing = composition.strip(), None
  last = composition.rpartition("+")[2]
  if "+" in composition and last in comp.names(comp.MIXING):
    composition, mixing = composition.rpartition("+")[0], last
  algorithm, variants = parse_method(composition, names)
  optimizer = optimizer.strip() if at else None
  if at:
    if optimizer not in comp.names(comp.SERVER_OPTIMIZER):
      raise _error(names, name, f"unknown server optimizer {optimizer!r}; "
                   f"one of {', '.join(comp.names(comp.SERVER_OPTIMIZER))}")
    default = comp.get(algorithm).server_optimizer
    if default is None:
      raise _error(names, name, f"{algorithm} has no server optimizer to "
                   "replace")
    if optimizer == default:
      optimizer = None
  overrides = {}
  for setting in settings:
    field, eq, text = setting.partition("=")
    field = field.strip()
    if not eq or not field:
      raise _error(names, name, f"{setting!r}: a method's own setting is "
                   "<field>=<value>")
    if field in overrides:
      raise _error(names, name, f"{field} is set twice")
    overrides[field] = _value(names, name, field, text.strip())
  return Spec(algorithm, variants, optimizer, tuple(sorted(overrides.items())),
              mixing)


def _value(names, name: str, field: str, text: str):
  """`text` as the declared type of method field `field`."""
  section = config_fields.field_section(field)
  if section is None or section.kind != config_fields.METHOD:
    raise _error(names, name, f"{field!r} is not a method hyper-parameter "
                 "(a shared one such as server_learning_rate, or a "
                 "component's option)")
  f = {f.name: f for f in section.fields}[field]
  kind = config_fields.flag_kind(section.cls, f)
  optional = type(None) in typing.get_args(
      typing.get_type_hints(section.cls)[field])
  try:
    if optional and text.lower() == "none":
      return None
    if kind == "bool":
      if text.lower() not in ("true", "false"):
        raise ValueError(text)
      return text.lower() == "true"
    if kind == "integer":
      return int(text)
    if kind == "float":
      return float(text)
    if kind == "string":
      return text
  except ValueError:
    pass
  raise _error(names, name, f"{field}={text}: not a{'n' if kind == 'integer' else ''} "
               f"{kind}")


def format_value(value) -> str:
  """A setting's value as a method name writes it."""
  if isinstance(value, bool):
    return "true" if value else "false"
  if isinstance(value, float):
    return repr(value)
  return str(value)


def spec_name(spec: Spec) -> str:
  """The canonical name of a parsed method."""
  out = "+".join((spec.algorithm,) + tuple(spec.variants)
                 + ((spec.mixing,) if spec.mixing else ()))
  if spec.server_optimizer is not None:
    out += f"@{spec.server_optimizer}"
  return out + "".join(f":{k}={format_value(v)}" for k, v in spec.overrides)


def method_name(config, mixing: Optional[str] = None) -> str:
  """The canonical name of a `MethodConfig` (its overrides' values are its
  own, read from its options), with mixing strategy `mixing` if given."""
  return spec_name(Spec(
      config.algorithm, tuple(config.variants), config.server_optimizer,
      tuple((k, getattr(config, k)) for k in config.overrides), mixing))


def parse_methods(names: Sequence[str]) -> Tuple[Spec, ...]:
  """Each name of a --methods list parsed (`parse`), in order.

  Raises:
    ConfigError: naming --methods: an empty list, a bad name, or one method
      given twice (also under two spellings).
  """
  names = tuple(names)
  if not names:
    raise ConfigError(f"--{FLAG}: give at least one method", FLAG)
  out, seen = [], {}
  for name in names:
    spec = parse(name, names)
    if spec.mixing is not None:
      raise _error(names, name, f"{spec.mixing!r} is a mixing strategy: "
                   "give it with --mixing")
    canonical = spec_name(spec)
    if canonical in seen:
      raise _error(names, name, f"the same method as {seen[canonical]!r} "
                   f"({canonical}); give each method once")
    seen[canonical] = name
    out.append(spec)
  return tuple(out)


def canonical_names(names: Sequence[str]) -> Tuple[str, ...]:
  """The method names a --methods list trains, canonical, in order.

  Raises:
    ConfigError: see `parse_methods`.
  """
  return tuple(spec_name(s) for s in parse_methods(names))
