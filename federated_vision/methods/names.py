"""Method names: '<algorithm>[+<variant>...]' <-> (algorithm, variants).

The binaries' `--methods=fedavg+fedvc,fedavgm+fedir+fedvc` lists exactly the
methods a run trains, in order. Each name is parsed against the algorithm and
variant registries of `federated_vision.methods`, so anything registered
(also from a module passed with `--extra_modules`) is reachable.

One method has one name: client-work variants come first, then data-side
variants, each kind in the order given (`fedavgm+fedvc+fedir` is
`fedavgm+fedir+fedvc`, the name the shorthand flags `--fedir --fedvc` give),
so results of one method line up across runs whichever spelling was used.

Plain Python: importing this module imports neither TensorFlow nor absl.
"""

from typing import Sequence, Tuple

from federated_vision import methods as methods_lib
from federated_vision.errors import ConfigError, show

FLAG = "methods"

Parsed = Tuple[str, Tuple[str, ...]]  # (algorithm, variants)


def _error(names: Sequence[str], part: str, reason: str) -> ConfigError:
  return ConfigError(f"--{FLAG}={show(tuple(names))}: {part!r}: {reason}",
                     FLAG)


def parse_method(name: str, names: Sequence[str] = ()) -> Parsed:
  """(algorithm, variants in canonical order) of one method name.

  Args:
    name: '<algorithm>[+<variant>...]'.
    names: the whole --methods list, for the message (default: [name]).

  Raises:
    ConfigError: naming --methods and the bad part (empty name, unknown
      algorithm or variant, a repeated variant, two client-work variants).
  """
  names = tuple(names) or (name,)
  parts = [p.strip() for p in str(name).split("+")]
  if not name or not all(parts):
    raise _error(names, name, "empty method or variant name (a method is "
                 "<algorithm>[+<variant>...])")
  algorithm, variants = parts[0], parts[1:]
  if algorithm not in methods_lib.algorithm_names():
    hint = (" (a variant; a method starts with its algorithm)"
            if algorithm in methods_lib.variant_names() else "")
    raise _error(names, name, f"unknown algorithm {algorithm!r}{hint}; one of "
                 f"{', '.join(methods_lib.algorithm_names())}")
  for v in variants:
    if v not in methods_lib.variant_names():
      raise _error(names, name, f"unknown variant {v!r}; one of "
                   f"{', '.join(methods_lib.variant_names())}")
  if len(set(variants)) != len(variants):
    raise _error(names, name, "a variant is repeated")
  work = [v for v in variants
          if v in methods_lib.variant_names(methods_lib.CLIENT_WORK)]
  if len(work) > 1:
    raise _error(names, name, f"{' and '.join(work)} both replace the client "
                 "work; a method takes at most one client-work variant")
  side = [v for v in variants if v not in work]
  return algorithm, tuple(work + side)


def method_name(algorithm: str, variants: Sequence[str]) -> str:
  """'<algorithm>[+<variant>...]' (as `methods.MethodConfig.name`)."""
  return "+".join((algorithm,) + tuple(variants))


def parse_methods(names: Sequence[str]) -> Tuple[Parsed, ...]:
  """Each name of a --methods list parsed (`parse_method`), in order.

  Raises:
    ConfigError: naming --methods: an empty list, a bad name, or one method
      given twice (also under two spellings).
  """
  names = tuple(names)
  if not names:
    raise ConfigError(f"--{FLAG}: give at least one method", FLAG)
  out, seen = [], {}
  for name in names:
    parsed = parse_method(name, names)
    canonical = method_name(*parsed)
    if canonical in seen:
      raise _error(names, name, f"the same method as {seen[canonical]!r} "
                   f"({canonical}); give each method once")
    seen[canonical] = name
    out.append(parsed)
  return tuple(out)


def canonical_names(names: Sequence[str]) -> Tuple[str, ...]:
  """The method names a --methods list trains, canonical, in order.

  Raises:
    ConfigError: see `parse_methods`.
  """
  return tuple(method_name(*p) for p in parse_methods(names))
