"""Which method hyper-parameters a method reads (no flag that does nothing).

Derived from the declarations (`methods.components`): a method reads the
shared hyper-parameters its components declare in `reads` and every field
of its components' own `options`; `federated_vision.experiment.fields_read`
refuses a hyper-parameter flag no method of the run reads and leaves it out
of the recorded config, and a method name's own `:<field>=<value>` setting
must be a field the method reads (`check_overrides`).
"""

import dataclasses
from typing import FrozenSet, Iterable, Tuple

from federated_vision import config_fields
from federated_vision.errors import ConfigError
from federated_vision.methods import components as comp
from federated_vision.methods import method_config


def hyper_parameters() -> Tuple[str, ...]:
  """Every method hyper-parameter: the shared ones, then the components'."""
  return config_fields.field_names(config_fields.METHOD)


# A rate's schedule is read by whatever reads the rate (`learning.schedule`).
SCHEDULES = {"client_learning_rate": "client_learning_rate_decay",
             "server_learning_rate": "server_learning_rate_decay"}


def component_reads(name: str) -> FrozenSet[str]:
  """The fields component `name` reads: its `reads` (with the schedule of
  a rate it reads) and its own options (every hyper-parameter for a name
  no component has)."""
  if name not in comp.names():
    return frozenset(hyper_parameters())
  c = comp.get(name)
  reads = set(c.reads) | {SCHEDULES[r] for r in c.reads if r in SCHEDULES}
  return frozenset(reads) | frozenset(c.option_names())


def fields_read(config: method_config.MethodConfig) -> FrozenSet[str]:
  """The hyper-parameters one method reads: its components' union."""
  out = set()
  for c in config.used():
    out |= component_reads(c.name)
  return frozenset(out)


def readers(field: str) -> Iterable[str]:
  """What reads `field`, as method names spell it (for messages): the
  algorithms and variants reading it (an algorithm also through its default
  server optimizer: FedAvgM reads sgdm's server_momentum), then '@<name>'
  for the server optimizers reading it; each kind in registration order."""
  reads = lambda name: name is not None and field in component_reads(name)
  out = []
  for c in comp.components():
    if c.kind == comp.SERVER_OPTIMIZER:
      continue
    if reads(c.name) or (c.kind == comp.ALGORITHM
                         and reads(c.server_optimizer)):
      out.append(c.name)
  return out + [f"@{c.name}" for c in comp.components(comp.SERVER_OPTIMIZER)
                if reads(c.name)]


def check_overrides(config: method_config.MethodConfig) -> None:
  """A method's own settings are fields it reads.

  Raises:
    ConfigError: naming --methods, the method and the field.
  """
  read = fields_read(config)
  for field in config.overrides:
    if field not in read:
      users = ", ".join(readers(field)) or "no component"
      raise ConfigError(f"--methods={config.name}: {field} is not read by "
                        f"this method (read by {users})", "methods")


HYPER_PARAMETERS = tuple(
    f.name for f in dataclasses.fields(method_config.HyperParameters))
