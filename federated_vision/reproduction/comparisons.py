"""The papers' claims as paired comparisons over seeds (`claim_spec`).

Seed k of side a and seed k of side b are one pair (the same repetition:
for two methods of one run, the same partition, initial weights and client
draws). Per pair the difference a_k - b_k; over the pairs its mean and 95%
t-interval (`intervals`); the verdict says whether the paper's direction is
reproduced:

  reproduced    the interval lies entirely on the claim's side of 0
  opposite      entirely on the other side
  inconclusive  it contains 0 (more seeds may decide)
  cannot check  no pair has both numbers (the reason is given)

With one pair (no interval) the verdict is the sign's, marked "n=1".

Rounds to a target that a seed does not reach: the seed's budget (the
run's --total_rounds) stands in, a lower bound of the true rounds. The
difference is then a bound too, valid in one direction only: a verdict
that rests on it in the other direction is withheld (inconclusive, saying
why), and a pair where neither side reached the target says nothing and is
left out. Plain functions: exact tests in
tests/reproduction/test_reproduction_seeds.py.
"""

import dataclasses
from typing import Optional, Sequence, Tuple

from federated_vision.reproduction import intervals
from federated_vision.reproduction import claim_spec
from federated_vision.reproduction import spread as spread_lib

REPRODUCED = "reproduced"
OPPOSITE = "opposite"
INCONCLUSIVE = "inconclusive"
CANNOT_CHECK = "cannot check"
NOT_REACHED = "not_reached"  # `report.NOT_REACHED`.


@dataclasses.dataclass(frozen=True)
class Result:
  """A comparison over the seeds.

  Attributes:
    spec: the comparison.
    a, b: each side's per-seed values (`spread.Spread`).
    differences: a_k - b_k per seed (None: the pair has no difference),
      with a budget standing in for a target not reached (`censored`).
    censored: per seed, which side's value is its budget ("", "a", "b").
    interval: over the differences (None: fewer than 2).
    verdict: REPRODUCED, OPPOSITE, INCONCLUSIVE or CANNOT_CHECK.
    why: one line saying what the verdict rests on.
  """
  spec: claim_spec.Comparison
  a: spread_lib.Spread
  b: spread_lib.Spread
  differences: Tuple[Optional[float], ...]
  censored: Tuple[str, ...]
  interval: Optional[intervals.Interval]
  verdict: str
  why: str

  @property
  def numbers(self) -> Tuple[float, ...]:
    return tuple(d for d in self.differences if d is not None)

  @property
  def mean(self) -> Optional[float]:
    return sum(self.numbers) / len(self.numbers) if self.numbers else None


def _with_budget(value, budget: Optional[float]
                 ) -> Tuple[Optional[float], bool]:
  """(the number, whether it is a budget standing in for 'not reached')."""
  if value is not None and value.status == spread_lib.OK:
    return float(value.value), False
  if value is not None and value.status == NOT_REACHED and budget:
    return float(budget), True
  return None, False


def pairs(values_a: Sequence, values_b: Sequence,
          budgets_a: Sequence[Optional[float]] = (),
          budgets_b: Sequence[Optional[float]] = ()):
  """(differences, censored) per seed from the two sides' `report.Value`s;
  a budget stands in for NOT_REACHED (rounds); neither side reached: None."""
  if len(values_a) != len(values_b):
    raise ValueError(f"paired sides need the same seeds, got "
                     f"{len(values_a)} and {len(values_b)}")
  budgets_a = list(budgets_a) or [None] * len(values_a)
  budgets_b = list(budgets_b) or [None] * len(values_b)
  diffs, censored = [], []
  for va, vb, ba, bb in zip(values_a, values_b, budgets_a, budgets_b):
    a, a_cut = _with_budget(va, ba)
    b, b_cut = _with_budget(vb, bb)
    if a is None or b is None or (a_cut and b_cut):
      diffs.append(None)
      censored.append("")
    else:
      diffs.append(a - b)
      censored.append("a" if a_cut else "b" if b_cut else "")
  return tuple(diffs), tuple(censored)


def verdict(differences: Sequence[Optional[float]], censored: Sequence[str],
            better: str) -> Tuple[str, str]:
  """(verdict, why) of per-seed differences a - b for a claim that a is
  `better` (claim_spec.HIGHER: a > b; claim_spec.LOWER: a < b)."""
  sign = 1.0 if better == claim_spec.HIGHER else -1.0
  used = [(d, c) for d, c in zip(differences, censored) if d is not None]
  if not used:
    return CANNOT_CHECK, "no seed has both numbers"
  # A budget stands in for a true value at least as large: on side a it
  # understates d = a - b, on side b it overstates d. A verdict is safe
  # only on a bound that understates the claim value sign * d (for the
  # claim) or overstates it (against the claim).
  unsafe_for_claim = "b" if sign > 0 else "a"
  unsafe_for_opposite = "a" if sign > 0 else "b"
  values = [sign * d for d, _ in used]
  n = len(values)
  iv = intervals.maybe_interval(values)
  low, high = (iv.low, iv.high) if iv else (values[0], values[0])
  tag = f"n={n}" + ("" if iv else ", no interval")
  for side, holds, bound, unsafe, hint in (
      (REPRODUCED, low > 0, "the paper's side", unsafe_for_claim,
       "the claimed-better"),
      (OPPOSITE, high < 0, "against the paper", unsafe_for_opposite,
       "the claimed-worse")):
    if not holds:
      continue
    if any(c == unsafe for _, c in used):
      return INCONCLUSIVE, (f"{tag}: {bound}, but a target not reached on "
                            f"{hint} side makes the difference a bound the "
                            "wrong way")
    where = ("the interval is on the paper's side of 0" if side == REPRODUCED
             else "the interval is on the other side of 0") if iv else (
                 "the difference is on the paper's side" if side == REPRODUCED
                 else "the difference is against the paper")
    return side, f"{tag}: {where}"
  return INCONCLUSIVE, f"{tag}: the interval contains 0" if iv else \
      f"{tag}: no difference"


def evaluate(comparison: claim_spec.Comparison, values_a: Sequence,
             values_b: Sequence, budgets_a: Sequence[Optional[float]] = (),
             budgets_b: Sequence[Optional[float]] = ()) -> Result:
  """The comparison's `Result` from each side's per-seed `report.Value`s
  (seed order) and, for rounds, each seed's budget (--total_rounds)."""
  diffs, censored = pairs(values_a, values_b, budgets_a, budgets_b)
  outcome, why = verdict(diffs, censored, comparison.better)
  if outcome == CANNOT_CHECK:  # Say which run or method has no number.
    detail = next((v.detail for v in list(values_a) + list(values_b)
                   if v is not None and v.detail), "")
    why += f" ({detail})" if detail else ""
  numbers = [d for d in diffs if d is not None]
  return Result(comparison, spread_lib.Spread.of(values_a),
                spread_lib.Spread.of(values_b), diffs, censored,
                intervals.maybe_interval(numbers), outcome, why)


# ------------------------------------------------------------------- output
def _number(v: float, unit: str) -> str:
  return f"{v:+.1f}" if unit == "rounds" else f"{v:+.2f}"


def difference_text(r: Result) -> str:
  """'mean ± half width (n=..)' of a - b in the sides' unit; 'n/a' when no
  seed has both numbers."""
  unit = r.spec.a.metric.unit
  n, total = len(r.numbers), len(r.differences)
  count = f"n={n}" + (f" of {total}" if n < total else "")
  if not n:
    return f"n/a ({count})"
  if r.interval is None:
    return f"{_number(r.mean, unit)} ({count})"
  return (f"{_number(r.interval.mean, unit)} ± "
          f"{r.interval.half_width:.{1 if unit == 'rounds' else 2}f} "
          f"({count})")


def _unit_name(unit: str) -> str:
  return {"%": "points of accuracy", "rounds": "rounds"}.get(unit, unit)


def markdown_lines(results: Sequence[Result]) -> list:
  """The report's section: one row per claim, its difference and verdict."""
  if not results:
    return []
  out = ["## The papers' claims as paired comparisons over seeds", "",
         "Per seed k the difference a_k − b_k (the same repetition of both "
         "sides); its mean ± the half width of the 95% t-interval over the "
         "seeds (n shown); the verdict: reproduced / opposite when the "
         "interval lies on the paper's / the other side of 0, inconclusive "
         "when it contains 0. A target not reached counts as the run's "
         "budget (a bound: `*` marks such seeds).", "",
         "| claim | a − b | difference | per seed | verdict |",
         "|---|---|---|---|---|"]
  for r in results:
    unit = r.spec.a.metric.unit
    per_seed = ", ".join(
        "n/a" if d is None else _number(d, unit) + ("*" if c else "")
        for d, c in zip(r.differences, r.censored))
    out.append(f"| {r.spec.claim} | {r.spec.a.label} − {r.spec.b.label} "
               f"({_unit_name(unit)}; the paper: {_direction(r.spec)}) | "
               f"{difference_text(r)} | {per_seed} | **{r.verdict}** "
               f"({r.why}) |")
  return out + [""]


def _direction(c: claim_spec.Comparison) -> str:
  return "> 0" if c.better == claim_spec.HIGHER else "< 0"


def to_json(r: Result) -> dict:
  """A comparison as the summary JSON holds it."""
  iv = r.interval
  return {
      "key": r.spec.key, "claim": r.spec.claim,
      "a": {"label": r.spec.a.label, "run": r.spec.a.run,
            "method": r.spec.a.method, "values": list(r.a.values),
            "statuses": list(r.a.statuses)},
      "b": {"label": r.spec.b.label, "run": r.spec.b.run,
            "method": r.spec.b.method, "values": list(r.b.values),
            "statuses": list(r.b.statuses)},
      "unit": r.spec.a.metric.unit,
      "paper_direction": ("a > b" if r.spec.better == claim_spec.HIGHER
                          else "a < b"),
      "differences": list(r.differences), "censored": list(r.censored),
      "n": len(r.numbers), "n_seeds": len(r.differences),
      "mean": r.mean, "ci_low": iv.low if iv else None,
      "ci_high": iv.high if iv else None, "verdict": r.verdict,
      "why": r.why}
