"""The `methods` section of an experiment's config: which methods run side
by side and every method hyper-parameter (`experiment.config.SECTIONS`).

Its fields are the method selection (--methods and its shorthands) and two
`config_fields.Options` generated from the components' declarations (the
variants' --<name> shorthands; every method hyper-parameter, shared and
each component's own), so a component registered by --extra_modules adds
its fields here without an edit.
"""

import dataclasses
from typing import Tuple

from federated_vision import config_fields
from federated_vision import methods as methods_lib
from federated_vision.experiment import fields_read
from federated_vision.methods import method_config
from federated_vision.methods import names as method_names

MethodConfig = methods_lib.MethodConfig


def _shorthand_flags() -> str:
  """'--fedir, --fedprox, --fedvc': the variants' shorthand flags."""
  return ", ".join(f"--{v}" for v in methods_lib.shorthands())


def _example() -> str:
  """A method name for --methods' help: the first algorithm with the last
  variant (fedavg+fedvc)."""
  return "+".join(methods_lib.algorithm_names()[:1]
                  + methods_lib.variant_names()[-1:])


@dataclasses.dataclass(frozen=True, init=False)
class MethodsConfig:
  """Which methods run side by side, and their hyper-parameters.

  `expand()` gives one `MethodConfig` per method: with --methods exactly
  those (`methods.names.parse_methods`, in order, each with its own
  `:<field>=<value>` settings over the run's); else the shorthands: every
  --algorithm, plain (unless not --include_plain) and with each requested
  client-work variant (--fedir, --fedprox, ...: `Variant.shorthand`), each
  of those also with each requested data-side variant (--fedvc).

  Attributes:
    algorithm, include_plain, methods: the method selection.
    shorthands: the variants' --<name> flags (`config_fields.SHORTHAND`).
    options: every method hyper-parameter (`config_fields.METHOD`: the
      shared ones of `methods.HyperParameters` and every component's own),
      also readable as attributes (`config.methods.client_epochs`).
  """
  algorithm: Tuple[str, ...] = config_fields.option(
      ("fedavg", "fedavgm"), lambda: "Comma-separated algorithms to run side "
      f"by side: {' | '.join(methods_lib.algorithm_names())} (or one "
      "registered by --extra_modules).")
  include_plain: bool = config_fields.option(
      True, lambda: f"With {_shorthand_flags()}, also run the plain "
      "algorithms for comparison.")
  methods: Tuple[str, ...] = config_fields.option((), lambda: (
      "Comma-separated methods to train, exactly these in this order: "
      "<algorithm>[+<variant>...][@<server optimizer>][:<field>=<value>...], "
      f"e.g. {_example()},{_example()}@adam:server_learning_rate=0.01 (any "
      "component registered, also by --extra_modules; a method's own "
      "settings override the run's flags for it). Replaces "
      f"--algorithm/{'/'.join(_shorthand_flags().split(', '))}/"
      "--include_plain (its shorthands; giving both is an error)."))
  shorthands: config_fields.Options = config_fields.Options(
      config_fields.SHORTHAND)
  options: config_fields.Options = config_fields.Options(config_fields.METHOD)

  def __init__(self, algorithm=("fedavg", "fedavgm"), include_plain=True,
               methods=(), shorthands=None, options=None, **values):
    """Also takes any declared field as a keyword (`fedir=True`,
    `client_epochs=2`), as `dataclasses.replace` passes them."""
    mine = lambda kind, given: (given or config_fields.Options(kind)).replace(
        {k: v for k, v in values.items()
         if k in config_fields.field_names(kind)})
    unknown = set(values) - set(config_fields.field_names(
        config_fields.METHOD)) - set(config_fields.field_names(
            config_fields.SHORTHAND))
    if unknown:
      raise TypeError(f"MethodsConfig has no field {sorted(unknown)[0]!r}")
    for name, value in (
        ("algorithm", tuple(algorithm)), ("include_plain", include_plain),
        ("methods", tuple(methods)),
        ("shorthands", mine(config_fields.SHORTHAND, shorthands)),
        ("options", mine(config_fields.METHOD, options))):
      object.__setattr__(self, name, value)

  def __getattr__(self, name: str):
    if name.startswith("__"):
      raise AttributeError(name)
    for options in ("options", "shorthands"):
      try:
        return object.__getattribute__(self, options).get(name)
      except AttributeError:
        pass
    raise AttributeError(f"MethodsConfig has no field {name!r}")

  def unused_fields(self) -> Tuple[str, ...]:
    """The shorthands when --methods chose the methods: they had no effect,
    so the recorded config (`ExperimentConfig.to_dict`) leaves them out."""
    return fields_read.method_shorthands() if self.methods else ()

  def expand(self) -> Tuple[MethodConfig, ...]:
    """The methods: --methods in its order, else (shorthands) in the order
    algorithm > data side > client work."""
    if self.methods:
      return tuple(method_config.from_spec(spec, self.options)
                   for spec in method_names.parse_methods(self.methods))
    on = lambda kind: [(v,) for v in methods_lib.shorthands(kind)
                       if self.shorthands.get(v)]
    works = [()] + on(methods_lib.CLIENT_WORK)
    sides = [()] + on(methods_lib.DATA_SIDE)
    out = []
    for algorithm in self.algorithm:
      for side in sides:
        for work in works:
          if work or side or self.include_plain:
            out.append(MethodConfig(algorithm, work + side,
                                    options=self.options))
    return tuple(out)
