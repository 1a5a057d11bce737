"""`--client_group_size`: clients per TFF slot (`algorithms/client_groups.py`).

Light (no TensorFlow) so configs can check the flag before TFF is imported:
its value (`parse_group_size`) and which methods it can apply to
(`uncovered`, derived from the components (`covers`); `check_methods`:
an explicit size > 1 for a method the groups do not cover is refused by
config validation, before any method is built).
"""

import math
from typing import Optional, Sequence, Union

from federated_vision.errors import bad
from federated_vision.methods import components as comp

AUTO = "auto"  # The default of --client_group_size.
# Largest group (a slot's keys are read as one batch of at most this size).
MAX_GROUP_SIZE = 4096
# ours, measured (docs/performance.md, "Small clients"): 'auto' is
# min(AUTO_MAX_GROUP, ceil(C / AUTO_SLOTS)): at least AUTO_SLOTS slots a
# round, so the worker runs slots side by side on 2-4 cores and the last
# slot is short; at most AUTO_MAX_GROUP clients a slot, so a large C gives
# more slots for more cores, while a slot's own cost (~40 ms: its session,
# its dataset's finalization) stays under ~2 ms per client. A function of C
# alone, never of the machine: a run's float summation order, and so its
# numbers, are the same on any core count, and a run resumed on another
# machine continues the one it resumes (a rerun changes no recorded
# number).
AUTO_SLOTS = 4
AUTO_MAX_GROUP = 25

GroupSize = Union[str, int]


def parse_group_size(value) -> GroupSize:
  """'auto' or an int in [1, MAX_GROUP_SIZE] (from a flag's text).

  Raises:
    ValueError: anything else.
  """
  if isinstance(value, str) and value.strip().lower() == AUTO:
    return AUTO
  try:
    size = int(value)
  except (TypeError, ValueError):
    size = None
  if (size is None or not 1 <= size <= MAX_GROUP_SIZE
      or str(size) != str(value).strip()):
    raise ValueError(f"must be 'auto' or an integer in [1, {MAX_GROUP_SIZE}]"
                     f", got {value!r}")
  return size


def resolve_group_size(group_size: GroupSize, clients_per_round: int) -> int:
  """Clients per slot: `group_size`, or for 'auto'
  min(AUTO_MAX_GROUP, ceil(C / AUTO_SLOTS)) (ours: see `AUTO_SLOTS`),
  whatever the machine."""
  if group_size == AUTO:
    return max(1, min(AUTO_MAX_GROUP,
                      math.ceil(clients_per_round / AUTO_SLOTS)))
  return parse_group_size(str(group_size))


def method_group_size(config, mixing: Optional[str], group_size: GroupSize,
                      clients_per_round: int) -> int:
  """The group size one method trains with: `resolve_group_size`, or 1
  when that is 1 or when the size is 'auto' and client groups do not cover
  the method (`uncovered`).

  Raises:
    ValueError: an explicit size > 1 for a method the groups do not cover
      (config validation refuses it first, `check_methods`).
  """
  size = resolve_group_size(group_size, clients_per_round)
  reason = uncovered(config, mixing)
  if size > 1 and reason is not None:
    if group_size != AUTO:
      raise ValueError(reason)
    return 1
  return size


def client_work(config) -> str:
  """The method's client-work variant, 'plain' without one: what
  `methods.build_method` records as its `client_work` setting.

  Raises:
    ConfigError: an unknown variant.
  """
  work = [v for v in config.variants
          if comp.get(v).kind == comp.CLIENT_WORK]
  return work[0] if work else "plain"


def covers(component) -> bool:
  """Client groups (which implement FedAvg's round per client) can train
  `component`: an algorithm whose round is FedAvg's
  (`components.fedavg_round`), a client work given as its local
  objective, any data side or server optimizer, a mixing strategy that
  says so (`MixingStrategy.grouped`)."""
  if component.kind == comp.ALGORITHM:
    return comp.fedavg_round(component)
  if component.kind == comp.CLIENT_WORK:
    return component.objective is not None
  if component.kind == comp.MIXING:
    return component.grouped
  return True


def uncovered(config, mixing: Optional[str] = None) -> Optional[str]:
  """Why client groups cannot train `config` (with mixing strategy
  `mixing`, None: no --mixing), or None if they can: the one coverage rule
  (`covers`), decided before anything is built (config validation) and by
  `methods.with_client_groups`.

  With a mixing strategy only the plain client work is covered (ours: a
  mixing strategy's client work, e.g. FedIR counting q_k over the round's
  batches, is not the client work client groups implement).
  """
  parts = list(config.used())
  if mixing is not None:
    parts.append(comp.get(mixing, comp.MIXING))
  missing = [c for c in parts if not covers(c)]
  if mixing is not None and client_work(config) != "plain":
    missing.append(comp.get(client_work(config)))
  if not missing:
    return None
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  name = names.method_name(config, mixing)
  why = ", ".join(dict.fromkeys(
      f"{c.name} ({c.kind.replace('_', ' ')})" for c in missing))
  return (f"method {name} cannot be grouped: client groups do not cover "
          f"{why}{' with a mixing strategy' if mixing else ''}; covered: "
          f"{covered()}; use 1 or 'auto'")


def covered() -> str:
  """The covered components, for messages and --help."""
  kinds = {}
  for c in comp.components():
    if covers(c):
      kinds.setdefault(c.kind.replace("_", " "), []).append(c.name)
  return "; ".join(f"{k}s {', '.join(v)}" for k, v in kinds.items())


def check_methods(group_size: str, methods: Sequence,
                  mixing: Sequence[str] = ()) -> None:
  """Refuses an explicit `--client_group_size` > 1 that some method x
  mixing strategy cannot use (`uncovered`), before any method is built;
  'auto' and 1 pass (with 'auto' an uncovered method trains ungrouped).

  Args:
    group_size: the flag's text ('auto' or an integer, `parse_group_size`).
    methods: `MethodsConfig.expand()`.
    mixing: the --mixing strategies (each method is built with each).

  Raises:
    ConfigError: naming --client_group_size and the first such method.
  """
  size = parse_group_size(group_size)
  if size == AUTO or size == 1:
    return
  for method in methods:
    for strategy in tuple(mixing) or (None,):
      reason = uncovered(method, strategy)
      if reason is not None:
        raise bad("client_group_size", size, reason)
