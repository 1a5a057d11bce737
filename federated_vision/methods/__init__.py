"""Methods: components declared once, composed by name, built into processes.

    from federated_vision import methods
    methods.register(methods.ClientWork(name="mywork", citation=..., ...))
    config = methods.MethodConfig("fedavg", ("mywork",), "adam")
    methods.validate(config)
    method = methods.build_method(config, inputs)   # Method(process, spec, ...)

`components` (the declarations: `Algorithm`, `ClientWork`, `DataSide`,
`ServerOptimizer`; `register`), `mixing` (`MixingStrategy`, the run's
`MixingSettings`), `method_config` (`MethodConfig`, `MethodInputs`,
`Method`, `validate`), `names` (the method-name grammar
`<algorithm>[+<variant>...][@<server optimizer>][:<field>=<value>...]`),
`usage` (which hyper-parameters a method reads), `groups` (client-group
coverage), `build` (`build_method`, `with_client_groups`) and `builtins`
(the package's own components, declared as a user's are: fedavg, fedavgm,
fedsgd; fedir, fedprox; fedvc; sgd, sgdm, nesterov, adagrad, adam, yogi;
the mixing strategies none, parallel, example_transfer, gradient_transfer,
oracle). A module passed to the binaries' --extra_modules registers its own
components the same way; their options become flags.

Importing this package does not import TensorFlow (validation runs before
any data or TFF is loaded); builders import the algorithms when called.
"""

from federated_vision.errors import ConfigError
from federated_vision.methods import builtins  # pylint: disable=unused-import  (registers the built-ins)
from federated_vision.methods.build import (MixingRun, build_method,
                                            client_spec, plain_settings,
                                            server_optimizer,
                                            with_client_groups)
from federated_vision.methods.builtins.fedavg import (client_sgd,
                                                      fedsgd_client_spec)
from federated_vision.methods.builtins.server_optimizers import (
    momentum_settings)
from federated_vision.methods.components import (
    ALGORITHM, CLIENT_WORK, DATA_SIDE, MIXING, SERVER_OPTIMIZER, Algorithm,
    BuildParts, ClientWork, Component, DataSide, ServerOptimizer,
    default_client_spec, get, register, shorthands)
# (The registry's `components()` / `names()` are `all_components` and
# `component_names` here: `components` and `names` are submodules.)
from federated_vision.methods.components import components as all_components
from federated_vision.methods.components import names as component_names
from federated_vision.methods.method_config import (
    SHARED_FIELDS, HyperParameters, Method, MethodConfig, MethodInputs,
    validate)
from federated_vision.methods.mixing import (MixingSettings, MixingStrategy,
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


def get_variant(name: str):
  """The registered variant (ConfigError naming --variants if unknown)."""
  if name not in variant_names():
    raise ConfigError(f"unknown variant {name!r}: one of "
                      f"{', '.join(variant_names())}", "variants")
  return get(name)


validate_method_config = validate  # The name before components had kinds.


def server_settings(optimizer: str, learning_rate: float,
                    momentum: float = 0.0):
  """Recorded SGD-family server-optimizer settings (`momentum_settings`)."""
  return momentum_settings(optimizer, learning_rate, momentum)
