"""`--client_group_size`: clients per TFF slot (`algorithms/client_groups.py`).

Light (no TensorFlow) so configs can check the flag before TFF is imported:
its value (`parse_group_size`) and which methods it can apply to
(`uncovered`, `check_methods`: an explicit size > 1 for a method the groups
do not cover is refused by config validation, before any method is built).
"""

import math
import os
from typing import Optional, Sequence, Union

from federated_vision import method_builtins  # pylint: disable=unused-import  (registers the built-ins)
from federated_vision import method_components as components
from federated_vision.errors import bad

AUTO = "auto"
# Largest group (a slot's keys are read as one batch of at most this size).
MAX_GROUP_SIZE = 4096
# ours: slots per round for 'auto': two per core, so the worker's inter-op
# threads still run slots side by side and the last slot is short.
SLOTS_PER_CORE = 2

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


def resolve_group_size(group_size: GroupSize, clients_per_round: int,
                       cores: Optional[int] = None) -> int:
  """Clients per slot: `group_size`, or for 'auto' ceil(C / slots) with
  `SLOTS_PER_CORE` slots per core (ours: see `SLOTS_PER_CORE`)."""
  if group_size == AUTO:
    slots = SLOTS_PER_CORE * (cores or os.cpu_count() or 1)
    return min(MAX_GROUP_SIZE,
               max(1, math.ceil(clients_per_round / slots)))
  return parse_group_size(str(group_size))


# ours: the methods whose process `methods.with_client_groups` can build
# grouped, i.e. what `algorithms/client_groups.py` implements: the FedAvg
# family (McMahan et al. 2017, Algorithm 1) with the plain or FedIR's client
# work (Hsu, Qi & Brown 2020, Sec. 5.2, eq. 4). Data-side variants (FedVC,
# Sec. 5.3) change only the spec and sampler, which the grouped process
# uses as the ungrouped one does: any is covered.
GROUPED_ALGORITHMS = ("fedavg", "fedavgm", "fedsgd")
GROUPED_CLIENT_WORK = ("plain", "fedir")
# ours: mixing strategies (Augenstein et al.) whose process is FedAvg's on the
# strategy's data (`algorithms.mixing`: no mixing, the oracle, example
# transfer); parallel and gradient transfer change the round itself.
GROUPED_MIXING = ("none", "oracle", "example_transfer")


def client_work(config: components.MethodConfig) -> str:
  """The method's client-work variant, 'plain' without one: what
  `methods.build_method` records as its `client_work` setting.

  Raises:
    ConfigError: an unknown variant (see `validate_method_config`).
  """
  work = [v for v in config.variants
          if components.get_variant(v).kind == components.CLIENT_WORK]
  return work[0] if work else "plain"


def uncovered(config: components.MethodConfig,
              mixing: Optional[str] = None) -> Optional[str]:
  """Why client groups cannot train `config` (with mixing strategy
  `mixing`, None: no --mixing), or None if they can: the one coverage rule,
  decided before anything is built (config validation) and by
  `methods.with_client_groups`.

  Covered: an algorithm of `GROUPED_ALGORITHMS` with a client work of
  `GROUPED_CLIENT_WORK` (a third-party client-work variant is not), and with
  a mixing strategy only one of `GROUPED_MIXING` with the plain client work
  (a mixing strategy's FedIR counts q_k over the round's batches, the
  groups over the client's whole data, `fedir_label_counts`).
  """
  work = client_work(config)
  covered = (config.algorithm in GROUPED_ALGORITHMS
             and work in GROUPED_CLIENT_WORK
             and (mixing is None
                  or (mixing in GROUPED_MIXING and work == "plain")))
  if covered:
    return None
  name = config.name + (f"+{mixing}" if mixing is not None else "")
  return (f"method {name} cannot be grouped (client groups cover fedavg, "
          "fedavgm, fedsgd with or without fedir / fedvc, and without fedir "
          f"also with the mixing strategies {', '.join(GROUPED_MIXING)}); "
          "use 1 or 'auto'")


def check_methods(group_size: str, methods: Sequence[components.MethodConfig],
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
