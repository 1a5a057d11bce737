"""Methods: components declared once, composed by name, built into processes.

    from federated_vision import methods
    methods.register(methods.ClientWork(name="mywork", citation=..., ...))
    config = methods.MethodConfig("fedavg", ("mywork",), "adam")
    methods.validate(config)
    method = methods.build_method(config, inputs)   # Method(process, spec, ...)

`components` (the declarations: `Algorithm`, `ClientWork`, `DataSide`,
`ServerOptimizer`; `register`), `method_config` (`MethodConfig`,
`MethodInputs`, `Method`, `validate`), `names` (the method-name grammar
`<algorithm>[+<variant>...][@<server optimizer>][:<field>=<value>...]`),
`usage` (which hyper-parameters a method reads), `groups` (client-group
coverage) and `build` (`build_method`). The package's own components are
declared in `federated_vision.algorithms.<name>` (fedavg, fedavgm, fedsgd;
fedir, fedprox; fedvc; scaffold, feddyn, fednova; the server optimizers)
and `federated_vision.mixing.strategies` (the mixing strategies), exactly
as a user's module declares its own; a module passed to the binaries'
--extra_modules registers its components the same way, and their options
become flags.

Importing this package does not import TensorFlow (validation runs before
any data or TFF is loaded); builders import the algorithms when called.
"""

from federated_vision.errors import ConfigError
from federated_vision.methods.components import (
    ALGORITHM, CLIENT_WORK, DATA_SIDE, MIXING, SERVER_OPTIMIZER, Algorithm,
    BuildParts, ClientWork, Component, DataSide, LocalObjective,
    ServerOptimizer, get, register, shorthands)
# (The registry's `components()` / `names()` are `all_components` and
# `component_names` here: `components` and `names` are submodules.)
from federated_vision.methods.components import components as all_components
from federated_vision.methods.components import names as component_names
from federated_vision.methods.method_config import (
    SHARED_FIELDS, HyperParameters, Method, MethodConfig, MethodInputs,
    validate)
from federated_vision.methods.build import (MixingRun, build_method,
                                            client_sgd, client_spec,
                                            plain_settings, server_optimizer,
                                            with_client_groups)
from federated_vision.mixing.strategy import (MixingSettings, MixingStrategy,
                                              register_mixing_strategy)


def algorithm_names():
  return component_names(ALGORITHM)


def variant_names(kind=None):
  """Client-work and data-side variants (of `kind`), in order."""
  kinds = (kind,) if kind else (CLIENT_WORK, DATA_SIDE)
  return tuple(c.name for c in all_components() if c.kind in kinds)


def get_algorithm(name: str) -> Algorithm:
  """The registered algorithm (ConfigError naming --algorithm if unknown)."""
  return get(name, ALGORITHM)


def _register_builtins() -> None:
  """Imports every module of `federated_vision.algorithms` (in name order),
  then the mixing strategies: each declares its components (so adding a
  built-in is adding a module there; nothing lists them). By name, with
  importlib: those modules import this package."""
  import importlib  # pylint: disable=g-import-not-at-top
  import importlib.util  # pylint: disable=g-import-not-at-top
  import pkgutil  # pylint: disable=g-import-not-at-top
  path = importlib.util.find_spec(
      "federated_vision.algorithms").submodule_search_locations
  for module in pkgutil.iter_modules(path):
    importlib.import_module(f"federated_vision.algorithms.{module.name}")
  importlib.import_module("federated_vision.mixing.strategies")


_register_builtins()
