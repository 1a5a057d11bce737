"""`--client_group_size`: clients per TFF slot (`algorithms/client_groups.py`).

Light (no TensorFlow) so configs can check the flag before TFF is imported.
"""

import math
import os
from typing import Optional, Union

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
