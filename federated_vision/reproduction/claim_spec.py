"""A paper's claim as data: a paired comparison of two sides over seeds.

`Comparison(key, claim, a, b, better)`: per seed the difference a - b of
two `Side`s (a metric of a method of a run, read as a report cell is), and
the direction the paper claims (HIGHER: a > b; LOWER: a < b, e.g. fewer
rounds). `comparisons` evaluates them; `spec.Preset.comparisons` lists a
preset's. Plain Python.
"""

import dataclasses
from typing import Optional

from federated_vision.reproduction.spec import CellSpec, Metric


# Which side a paired comparison's claim says is better.
HIGHER = "higher"  # a > b (accuracies)
LOWER = "lower"    # a < b (rounds to a target)


@dataclasses.dataclass(frozen=True)
class Side:
  """One side of a paired comparison: a metric of a method of a run (read
  as a cell is, per seed)."""
  run: str
  metric: Metric
  method: Optional[str] = None
  label: str = ""

  def cell(self) -> CellSpec:
    """The side as a cell (row/column: its label)."""
    return CellSpec(self.label or self.run, self.label or self.run, self.run,
                    self.metric, self.method)


@dataclasses.dataclass(frozen=True)
class Comparison:
  """A paper's claim as a paired comparison of two sides over the seeds:
  difference a - b per seed, the claim says a is `better` (HIGHER: a > b;
  LOWER: a < b, e.g. fewer rounds).

  Attributes:
    key: a short name (JSON key), e.g. "fedir_vs_fedavg".
    claim: the claim with its citation, e.g. 'Hsu 2020 §6.2: FedIR ...'.
    a, b: the two sides (same seeds: repetition k of each).
    better: HIGHER or LOWER.
  """
  key: str
  claim: str
  a: Side
  b: Side
  better: str = HIGHER

  def __post_init__(self):
    if self.better not in (HIGHER, LOWER):
      raise ValueError(f"comparison {self.key}: better={self.better!r} must "
                       f"be {HIGHER!r} or {LOWER!r}")
    if self.a.metric.unit != self.b.metric.unit:
      raise ValueError(f"comparison {self.key}: sides in different units")
