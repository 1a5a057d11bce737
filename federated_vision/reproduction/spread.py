"""One quantity of a report cell over the seeds of `--seeds=N`.

A cell's number (ours, relative accuracy, speedup, Table 5's ratio) is read
once per repetition; `Spread` keeps the N per-seed values (None where that
seed has no number: not reached, missing, running, diverged, with its status
and why) and summarises the numbers by their mean and 95% t-interval
(`intervals`). A seed without a number is never averaged in as anything:
the cell says how many of the N seeds it rests on (n of N), and the report's
footnotes say why the others have none.
"""

import dataclasses
import math
from typing import Optional, Sequence, Tuple

from federated_vision.reproduction import intervals

OK = "ok"  # `report.OK`: the status of a number.


@dataclasses.dataclass(frozen=True)
class Spread:
  """Per-seed values of one quantity (seed order)."""
  values: Tuple[Optional[float], ...]
  statuses: Tuple[str, ...]
  details: Tuple[str, ...]

  @classmethod
  def of(cls, values: Sequence) -> "Spread":
    """From per-seed `report.Value`s (an object with value, status, detail)
    or None (the quantity does not exist for that seed)."""
    vals, statuses, details = [], [], []
    for v in values:
      ok = v is not None and v.status == OK and v.value is not None and \
          math.isfinite(v.value)
      vals.append(float(v.value) if ok else None)
      statuses.append(OK if ok else ("n/a" if v is None else v.status))
      details.append("" if ok or v is None else v.detail)
    return cls(tuple(vals), tuple(statuses), tuple(details))

  @property
  def numbers(self) -> Tuple[float, ...]:
    return tuple(v for v in self.values if v is not None)

  @property
  def n(self) -> int:
    """Seeds with a number."""
    return len(self.numbers)

  @property
  def total(self) -> int:
    """Seeds read."""
    return len(self.values)

  @property
  def mean(self) -> Optional[float]:
    return math.fsum(self.numbers) / self.n if self.n else None

  @property
  def interval(self) -> Optional[intervals.Interval]:
    """The 95% t-interval of the mean (None with fewer than 2 numbers)."""
    return intervals.maybe_interval(self.numbers)

  def count_text(self) -> str:
    """'n=5', or 'n=3 of 5' when some seeds have no number."""
    return f"n={self.n}" + (f" of {self.total}" if self.n < self.total else "")

  def text(self, number) -> str:
    """'<mean> ± <half width> (n=..)' with `number` formatting a value;
    one number: '<value> (n=1 of N)'."""
    interval = self.interval
    if interval is None:
      return f"{number(self.mean)} ({self.count_text()})"
    return (f"{number(interval.mean)} ± {number(interval.half_width)} "
            f"({self.count_text()})")
