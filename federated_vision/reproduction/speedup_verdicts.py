"""The Shakespeare claims check (`shakespeare_claims` preset): verdict lines.

(1) FedAvg (E=5, B=10) needs fewer rounds to the target than FedSGD, by
role and IID; (2) McMahan 2017 §3: "learning on the non-IID and unbalanced
data is actually much easier (a 95x speedup vs 13x for the balanced IID
data)": the speedup (FedSGD's rounds / FedAvg's) is larger by role than
IID. Per seed: the two speedups and their ratio. A FedSGD run that does not
reach the target within its budget makes its speedup a lower bound (the
budget over FedAvg's rounds); a verdict that rests on a bound the wrong way
is withheld. With several seeds claim 2 also gets the mean and 95%
t-interval of log(ratio). Nothing is tuned here. Plain Python.
"""

import math
from typing import List, Mapping, NamedTuple, Optional, Sequence

from federated_vision.reproduction import intervals
from federated_vision.reproduction import results
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import shakespeare_claims as sc

HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive"
CANNOT_CHECK = "cannot check"
EXACT, AT_LEAST, AT_MOST = "=", ">=", "<="
PAPER_SPEEDUPS = {"role": 3906 / 41, "iid": 2488 / 192}  # Table 2.


class Speedup(NamedTuple):
  """FedSGD's rounds over FedAvg's; `bound` EXACT, or AT_LEAST when FedSGD
  did not reach the target (its budget stands in)."""
  value: float
  bound: str


def speedup(fedsgd_rounds: Optional[float], fedsgd_budget: float,
            fedavg_rounds: Optional[float]) -> Optional[Speedup]:
  """None when FedAvg did not reach the target (no speedup to read)."""
  if fedavg_rounds is None or fedavg_rounds <= 0:
    return None
  if fedsgd_rounds is None:
    return Speedup(fedsgd_budget / fedavg_rounds, AT_LEAST)
  return Speedup(fedsgd_rounds / fedavg_rounds, EXACT)


def ratio(role: Speedup, iid: Speedup) -> Optional[Speedup]:
  """role / iid with its bound (None: both are lower bounds)."""
  bound = {(EXACT, EXACT): EXACT, (AT_LEAST, EXACT): AT_LEAST,
           (EXACT, AT_LEAST): AT_MOST}.get((role.bound, iid.bound))
  return None if bound is None else Speedup(role.value / iid.value, bound)


def claim2_verdict(ratios: Sequence[Optional[Speedup]]):
  """(verdict, why) of per-seed role/IID speedup ratios (> 1: the claim)."""
  used = [r for r in ratios if r is not None]
  if not used:
    return CANNOT_CHECK, "no seed has both speedups"
  above = all(r.value > 1 and r.bound in (EXACT, AT_LEAST) for r in used)
  below = all(r.value < 1 and r.bound in (EXACT, AT_MOST) for r in used)
  logs = [math.log(r.value) for r in used if r.bound == EXACT]
  iv = intervals.maybe_interval(logs) if len(logs) == len(used) else None
  tag = f"n={len(used)}" + (f" of {len(ratios)}" if len(used) < len(ratios)
                            else "")
  if iv is not None:
    band = (f"geometric mean ratio {math.exp(iv.mean):.2f}x, 95% interval "
            f"[{math.exp(iv.low):.2f}, {math.exp(iv.high):.2f}]")
    if iv.low > 0:
      return HOLDS, f"{tag}: {band}"
    if iv.high < 0:
      return FAILS, f"{tag}: {band}"
    return INCONCLUSIVE, f"{tag}: {band} contains 1"
  if above:
    return HOLDS, f"{tag}: every seed's ratio is above 1"
  if below:
    return FAILS, f"{tag}: every seed's ratio is below 1"
  return INCONCLUSIVE, f"{tag}: the seeds disagree or a bound points the " \
                       "wrong way"


class _Unavailable(Exception):
  pass


def _rounds(runs: Mapping[str, results.RunDir], name: str, method: str
            ) -> Optional[float]:
  state = results.method_state(runs[name], method)
  if state.status != results.FINISHED:
    raise _Unavailable(f"{name}/{method} is {state.status} ({state.detail})")
  if "rounds_to_target" not in state.entry:
    raise _Unavailable(f"{name}: summary.json has no rounds_to_target")
  v = state.entry["rounds_to_target"]
  return None if v is None else float(v)


def _text(s: Optional[Speedup]) -> str:
  if s is None:
    return "n/a"
  return f"{'>= ' if s.bound == AT_LEAST else '<= ' if s.bound == AT_MOST else ''}{s.value:.1f}x"


def _rounds_text(r: Optional[float], budget: float) -> str:
  return f"not reached in {budget:g}" if r is None else f"{r:.1f}"


def check(root: str, preset: spec.Preset) -> List[str]:
  """Verdict lines of the (possibly seed-expanded) preset's runs."""
  runs = results.read_runs(root, preset.runs)
  # Each run's budget (--total_rounds): what "not reached" means.
  budget = {key: float(preset.run(base).flags["total_rounds"])
            for key, base in sc.RUNS.items()}
  per_seed, claim1, errors = [], {s: [] for s in sc.SPLITS.values()}, []
  n = seeds_lib.num_seeds(preset)
  for k in range(n):
    name = {key: seeds_lib.replicas(preset, base)[k]
            for key, base in sc.RUNS.items()}
    try:
      rounds = {key: _rounds(runs, name[key], key[1]) for key in name}
    except _Unavailable as e:
      errors.append(f"seed {k}: {e}")
      per_seed.append(None)
      continue
    speeds = {}
    for split in sc.SPLITS.values():
      avg, sgd = rounds[split, "fedavg"], rounds[split, "fedsgd"]
      speeds[split] = speedup(sgd, budget[split, "fedsgd"], avg)
      claim1[split].append((avg, sgd))
    per_seed.append(speeds)
  lines = []
  target = f"{sc.TARGET:.0%}"
  for label, split in sc.SPLITS.items():
    pairs = claim1[split]
    if not pairs:
      lines.append(f"[{CANNOT_CHECK}] (1, {label}) FedAvg needs fewer rounds "
                   f"to {target} than FedSGD -- {'; '.join(errors)}")
      continue
    wins = [avg is not None and (sgd is None or avg < sgd)
            for avg, sgd in pairs]
    shown = "; ".join(
        f"FedAvg {_rounds_text(a, budget[split, 'fedavg'])} vs FedSGD "
        f"{_rounds_text(s, budget[split, 'fedsgd'])}" for a, s in pairs)
    lines.append(f"[{HOLDS if all(wins) else FAILS}] (1, {label}) FedAvg "
                 f"(E={sc.FEDAVG_E}, B={sc.FEDAVG_B}) needs fewer rounds to "
                 f"{target} than FedSGD -- rounds: {shown}")
  ratios = [None if s is None or s["role"] is None or s["iid"] is None
            else ratio(s["role"], s["iid"]) for s in per_seed]
  verdict, why = claim2_verdict(ratios)
  detail = "; ".join(
      "n/a" if s is None else f"by role {_text(s['role'])}, IID "
      f"{_text(s['iid'])}, ratio {_text(r)}" for s, r in zip(per_seed, ratios))
  lines.append(
      f"[{verdict}] (2) McMahan 2017 §3: more local computation speeds up "
      f"the by-role (non-IID) data more than the IID data (paper: "
      f"{PAPER_SPEEDUPS['role']:.1f}x vs {PAPER_SPEEDUPS['iid']:.1f}x to 54%) "
      f"-- speedups to {target}: {detail or 'none'}; {why}"
      + (f"; {'; '.join(errors)}" if errors else ""))
  return lines
