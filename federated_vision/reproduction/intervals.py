"""Student-t 95% intervals over seeds, and paired differences.

A report cell over n seeds shows the mean of its n values and the two-sided
95% t-interval of that mean:

  mean ± t_{0.975, n-1} * s / sqrt(n),   s = sample standard deviation
                                              (denominator n - 1)

(the interval a reader computes from n independent repetitions whose spread
is unknown). A paired comparison (method A vs B over the same seeds) is the
same interval over the per-seed differences A_k - B_k (`comparisons`).

t_{0.975, df}: `T_975` is the table for df = 1..30 (values of
scipy.stats.t.ppf(0.975, df), scipy 1.9.3, rounded to 9 digits; the test
checks them against a printed table); beyond df = 30 the Cornish-Fisher
expansion of Abramowitz & Stegun 26.7.5 in the normal quantile z_{0.975}
(error below 1e-7 from df = 30 on). Plain Python; no scipy in the package.
"""

import dataclasses
import math
from typing import Optional, Sequence

# t_{0.975, df}, df = 1..30.
T_975 = {
    1: 12.706204736, 2: 4.30265273, 3: 3.182446305, 4: 2.776445105,
    5: 2.570581837, 6: 2.446911849, 7: 2.364624251, 8: 2.306004135,
    9: 2.262157163, 10: 2.228138852, 11: 2.20098516, 12: 2.17881283,
    13: 2.160368656, 14: 2.144786688, 15: 2.131449546, 16: 2.119905299,
    17: 2.109815578, 18: 2.10092204, 19: 2.093024054, 20: 2.085963447,
    21: 2.079613845, 22: 2.073873068, 23: 2.06865761, 24: 2.063898562,
    25: 2.059538553, 26: 2.055529439, 27: 2.051830516, 28: 2.048407142,
    29: 2.045229642, 30: 2.042272456}
Z_975 = 1.959963984540054  # The standard normal's 0.975 quantile.


def t_quantile_975(df: int) -> float:
  """t_{0.975, df}: the table for df <= 30, else A&S 26.7.5.

  Raises:
    ValueError: df is not an integer >= 1.
  """
  if isinstance(df, bool) or not isinstance(df, int) or df < 1:
    raise ValueError(f"degrees of freedom must be an integer >= 1, got {df!r}")
  if df in T_975:
    return T_975[df]
  z, v = Z_975, float(df)
  return (z + (z**3 + z) / (4 * v)
          + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
          + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
          + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z)
          / (92160 * v**4))


@dataclasses.dataclass(frozen=True)
class Interval:
  """Mean of n values and its 95% t-interval [low, high]."""
  n: int
  mean: float
  sd: float          # Sample standard deviation (n - 1).
  half_width: float  # t_{0.975, n-1} * sd / sqrt(n).

  @property
  def low(self) -> float:
    return self.mean - self.half_width

  @property
  def high(self) -> float:
    return self.mean + self.half_width

  def contains(self, x: float) -> bool:
    """low <= x <= high."""
    return self.low <= x <= self.high


def t_interval(values: Sequence[float]) -> Interval:
  """The mean and 95% t-interval of `values` (n >= 2, all finite).

  Raises:
    ValueError: fewer than 2 values, or a value not finite.
  """
  xs = [float(v) for v in values]
  if len(xs) < 2:
    raise ValueError(f"a t-interval needs >= 2 values, got {len(xs)}")
  if not all(math.isfinite(x) for x in xs):
    raise ValueError(f"values must be finite, got {xs}")
  n = len(xs)
  mean = math.fsum(xs) / n
  sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
  return Interval(n, mean, sd, t_quantile_975(n - 1) * sd / math.sqrt(n))


def maybe_interval(values: Sequence[float]) -> Optional[Interval]:
  """`t_interval`, or None for fewer than 2 values."""
  return t_interval(values) if len(values) >= 2 else None
