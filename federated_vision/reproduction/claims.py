"""The digits claims check: the papers' qualitative findings as verdicts.

Each claim is a plain function from measured numbers to a `Verdict` whose line
states the numbers it rests on; `check_digits_claims` reads the
`digits_claims` preset's run directories and applies them. A claim that does
not hold is reported as such ("does not hold" / "not reproduced at this
scale"); a claim whose runs are missing, running or diverged is reported as
"cannot check" with the reason. Nothing is tuned here.
"""

import dataclasses
import math
from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np

from federated_vision.reproduction import presets
from federated_vision.reproduction import results
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import digits_claims as dc

HOLDS = "holds"
FAILS = "does not hold"
NOT_REPRODUCED = "not reproduced at this scale"
CANNOT_CHECK = "cannot check"
MISSING_CLASS_ACCURACY_KEY = "missing_class_accuracy"
STRATEGIES = ("parallel", "example_transfer", "gradient_transfer")

CLAIMS = {
    1: "Hsu 2019: accuracy falls as EMD rises, and FedAvgM >= FedAvg at the "
       "non-identical end",
    2: "Hsu 2020 Table 2: on imbalanced clients FedVC's Acc@Batch >= FedAvg's",
    3: "Hsu 2020 §6.2: FedIR >= FedAvg on strongly skewed clients",
    4: "McMahan Table 2: FedAvg (E=5, B=10) needs fewer rounds to the target "
       "than FedSGD, and IID fewer than pathological non-IID",
    5: "Augenstein Fig. 1: each mixing strategy beats no mixing on the "
       "classes the clients lack",
}


@dataclasses.dataclass(frozen=True)
class Verdict:
  number: int
  outcome: str
  evidence: str

  @property
  def claim(self) -> str:
    return CLAIMS[self.number]

  @property
  def line(self) -> str:
    return f"[{self.outcome}] ({self.number}) {self.claim} -- {self.evidence}"


def ranks(values: Sequence[float]) -> np.ndarray:
  """1-based ranks, ties get their average rank."""
  v = np.asarray(values, np.float64)
  order = np.argsort(v, kind="stable")
  r = np.empty(len(v), np.float64)
  r[order] = np.arange(1, len(v) + 1)
  for x in np.unique(v):
    tie = v == x
    r[tie] = r[tie].mean()
  return r


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
  """Spearman's rank correlation (Pearson's on average ranks); NaN if either
  side is constant.

  Raises:
    ValueError: lengths differ or fewer than 2 points.
  """
  if len(xs) != len(ys) or len(xs) < 2:
    raise ValueError(f"need two equal-length sequences of >= 2 points, got "
                     f"{len(xs)} and {len(ys)}")
  rx, ry = ranks(xs) - (len(xs) + 1) / 2, ranks(ys) - (len(ys) + 1) / 2
  denom = math.sqrt(float((rx ** 2).sum() * (ry ** 2).sum()))
  return float((rx * ry).sum() / denom) if denom > 0 else math.nan


def _pct(x: float) -> str:
  return f"{100 * x:.1f}%"


def claim_emd(points: Sequence[Tuple[float, float, float]]) -> Verdict:
  """Claim 1 from (EMD, FedAvg accuracy, FedAvgM accuracy) per partition.

  Holds when FedAvg's accuracy has a negative Spearman correlation with EMD,
  is lower at the largest EMD than at the smallest, and FedAvgM >= FedAvg at
  the largest EMD.
  """
  pts = sorted(points)
  if len({p[0] for p in pts}) < 2:
    return Verdict(1, CANNOT_CHECK, "needs partitions with >= 2 distinct EMDs")
  rho = spearman([p[0] for p in pts], [p[1] for p in pts])
  lo, hi = pts[0], pts[-1]
  falls = rho < 0 and hi[1] < lo[1]
  momentum = hi[2] >= hi[1]
  curve = ", ".join(f"EMD {e:.2f}: FedAvg {_pct(a)} / FedAvgM {_pct(m)}"
                    for e, a, m in pts)
  evidence = (f"{curve}; Spearman(EMD, FedAvg acc) = {rho:.2f}; at EMD "
              f"{hi[0]:.2f} FedAvgM {_pct(hi[2])} "
              f"{'>=' if momentum else '<'} FedAvg {_pct(hi[1])}")
  return Verdict(1, HOLDS if falls and momentum else FAILS, evidence)


def claim_fedvc(fedavg_acc_at_batch: float, fedvc_acc_at_batch: float,
                batch_ref: float) -> Verdict:
  """Claim 2: FedVC's Acc@Batch >= FedAvg's at the same batch budget."""
  holds = fedvc_acc_at_batch >= fedavg_acc_at_batch
  return Verdict(2, HOLDS if holds else FAILS,
                 f"Acc@Batch {batch_ref:g}: FedAvg+FedVC "
                 f"{_pct(fedvc_acc_at_batch)} {'>=' if holds else '<'} FedAvg "
                 f"{_pct(fedavg_acc_at_batch)}")


def claim_fedir(fedavg_acc: float, fedir_acc: float, alpha: float) -> Verdict:
  """Claim 3: FedIR >= FedAvg (final accuracy) at a small alpha; otherwise
  'not reproduced at this scale'."""
  holds = fedir_acc >= fedavg_acc
  return Verdict(3, HOLDS if holds else NOT_REPRODUCED,
                 f"alpha = {alpha:g}: FedAvg+FedIR {_pct(fedir_acc)} "
                 f"{'>=' if holds else '<'} FedAvg {_pct(fedavg_acc)} (final "
                 "accuracy)")


def _rounds(r: Optional[float], total: int) -> str:
  return f"{r:.1f}" if r is not None else f"not reached in {total}"


def _fewer(a: Optional[float], b: Optional[float]) -> Optional[bool]:
  """a < b with None = never reached; None when neither reached."""
  if a is None and b is None:
    return None
  return b is None if a is None or b is None else a < b


def claim_rounds(target: float, total_rounds: int,
                 rounds: Mapping[str, Tuple[Optional[float], Optional[float]]],
                 ) -> Verdict:
  """Claim 4 from {"IID": (fedavg, fedsgd), "non-IID": (fedavg, fedsgd)}
  rounds to `target` (None = not reached within `total_rounds`).

  Holds when FedAvg needs fewer rounds than FedSGD in both partitions
  (FedAvg reaching the target where FedSGD does not counts as fewer; neither
  reaching it does not) and FedAvg needs fewer rounds on IID than non-IID.
  """
  parts = []
  fedavg_beats = []
  for label in ("IID", "non-IID"):
    fa, fs = rounds[label]
    fedavg_beats.append(_fewer(fa, fs) is True)
    parts.append(f"{label}: FedAvg {_rounds(fa, total_rounds)} vs FedSGD "
                 f"{_rounds(fs, total_rounds)}")
  iid_first = _fewer(rounds["IID"][0], rounds["non-IID"][0]) is True
  holds = all(fedavg_beats) and iid_first
  return Verdict(4, HOLDS if holds else FAILS,
                 f"rounds to {_pct(target)}: " + "; ".join(parts) +
                 f"; FedAvg IID {'<' if iid_first else 'not <'} non-IID")


def claim_mixing(missing_class_accuracy: Mapping[str, float],
                 missing_classes: str) -> Verdict:
  """Claim 5: every strategy's accuracy on the missing classes > no mixing's."""
  base = missing_class_accuracy["none"]
  beats = {s: missing_class_accuracy[s] > base for s in STRATEGIES}
  parts = [f"{s} {_pct(missing_class_accuracy[s])}" for s in STRATEGIES]
  if "oracle" in missing_class_accuracy:
    parts.append(f"oracle {_pct(missing_class_accuracy['oracle'])}")
  losers = [s for s, b in beats.items() if not b]
  return Verdict(5, HOLDS if not losers else FAILS,
                 f"accuracy on classes {missing_classes}: no mixing "
                 f"{_pct(base)}; " + ", ".join(parts) +
                 (f"; not above no mixing: {', '.join(losers)}" if losers
                  else ""))


class _Unavailable(Exception):
  """A run or value a claim needs is not there; the message says which."""


def _entry(runs, run: str, method: str) -> Mapping[str, object]:
  state = results.method_state(runs[run], method)
  if state.status != results.FINISHED:
    raise _Unavailable(f"{run}/{method} is {state.status} ({state.detail})")
  return state.entry


def _number(entry, key: str, where: str) -> float:
  v = entry.get(key)
  if not isinstance(v, (int, float)) or isinstance(v, bool) or \
      not math.isfinite(v):
    raise _Unavailable(f"{where}: summary.json has {key}={v!r}")
  return float(v)


def _emd(runs, run: str) -> float:
  r = runs[run]
  if r.status != results.FINISHED:
    raise _Unavailable(f"{run} is {r.status} ({r.detail})")
  return _number(r.summary, "emd", run)


def _claim1(runs, preset):
  del preset
  pts = []
  for run in dc.CLAIM1_RUNS:
    pts.append((_emd(runs, run),
                _number(_entry(runs, run, "fedavg"), "final_accuracy", run),
                _number(_entry(runs, run, "fedavgm"), "final_accuracy", run)))
  return claim_emd(pts)


def _claim2(runs, preset):
  del preset
  run = dc.CLAIM2_RUN
  plain = _entry(runs, run, "fedavg")
  vc = _entry(runs, run, "fedavg+fedvc")
  ref = _number(runs[run].summary, "acc_at_batch_ref", run)
  return claim_fedvc(_number(plain, "acc_at_batch", f"{run}/fedavg"),
                     _number(vc, "acc_at_batch", f"{run}/fedavg+fedvc"), ref)


def _claim3(runs, preset):
  run = dc.CLAIM3_RUN
  return claim_fedir(
      _number(_entry(runs, run, "fedavg"), "final_accuracy", run),
      _number(_entry(runs, run, "fedavg+fedir"), "final_accuracy", run),
      float(preset.run(run).flags["alpha"]))


def _rtt(entry, where: str) -> Optional[float]:
  if "rounds_to_target" not in entry:
    raise _Unavailable(f"{where}: summary.json has no rounds_to_target")
  v = entry["rounds_to_target"]
  return None if v is None else _number(entry, "rounds_to_target", where)


def _claim4(runs, preset):
  rounds = {}
  for label, run in dc.CLAIM4_RUNS.items():
    rounds[label] = tuple(_rtt(_entry(runs, run, m), f"{run}/{m}")
                          for m in ("fedavg", "fedsgd"))
  total = int(preset.run(dc.CLAIM4_RUNS["IID"]).flags["total_rounds"])
  return claim_rounds(dc.CLAIM4_TARGET, total, rounds)


def _claim5(runs, preset):
  del preset
  acc = {m: _number(_entry(runs, run, f"fedavg+{m}"),
                    MISSING_CLASS_ACCURACY_KEY, run)
         for m, run in dc.CLAIM5_RUNS.items()}
  return claim_mixing(acc, dc.MISSING_CLASSES)


def check(runs: Mapping[str, results.RunDir],
          preset: spec.Preset) -> List[Verdict]:
  """Verdicts of the five claims from read run directories."""
  out = []
  for number, fn in enumerate((_claim1, _claim2, _claim3, _claim4, _claim5),
                              start=1):
    try:
      out.append(fn(runs, preset))
    except _Unavailable as e:
      out.append(Verdict(number, CANNOT_CHECK, str(e)))
  return out


def check_digits_claims(root: str) -> List[Verdict]:
  """Reads the digits_claims runs under `root` and returns the verdicts."""
  preset = presets.get_preset("digits_claims")
  return check(results.read_runs(root, preset.runs), preset)
