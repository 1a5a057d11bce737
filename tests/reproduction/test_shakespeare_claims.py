"""The Shakespeare claims: the verdict rules on exact numbers, and a scaled
copy of the `shakespeare_claims` preset run end to end on a real play (one
play, one round a run, a model TFF traces in seconds: it also trains on the
fetched plays as train_main does), its verdict lines checked against rounds to the target recomputed
here from the runs' metrics.csv."""

import csv
import dataclasses
import math
import os

import numpy as np
import pytest

from experiments import reproduce_lib
from federated_vision.reproduction import presets
from federated_vision.reproduction import speedup_verdicts as checks
from federated_vision.reproduction.presets import shakespeare_claims as sc

from shakespeare_fixture import real_archive, register_test_model

EXACT, AT_LEAST = checks.EXACT, checks.AT_LEAST


def test_speedups_and_their_bounds():
  assert checks.speedup(200.0, 400, 4.0) == checks.Speedup(50.0, EXACT)
  # FedSGD never reached the target: its budget, a lower bound.
  assert checks.speedup(None, 400, 8.0) == checks.Speedup(50.0, AT_LEAST)
  assert checks.speedup(200.0, 400, None) is None  # FedAvg did not reach it.
  role, iid = checks.Speedup(60.0, EXACT), checks.Speedup(20.0, EXACT)
  assert checks.ratio(role, iid) == checks.Speedup(3.0, EXACT)
  assert checks.ratio(checks.Speedup(60.0, AT_LEAST), iid).bound == AT_LEAST
  assert checks.ratio(role, checks.Speedup(20.0, AT_LEAST)).bound == \
      checks.AT_MOST
  assert checks.ratio(checks.Speedup(1.0, AT_LEAST),
                      checks.Speedup(1.0, AT_LEAST)) is None


def test_claim2_verdicts():
  r = lambda v, b=EXACT: checks.Speedup(v, b)
  assert checks.claim2_verdict([r(3.0)])[0] == checks.HOLDS
  assert checks.claim2_verdict([r(0.5)])[0] == checks.FAILS
  # A lower bound above 1 holds; below 1 it says nothing.
  assert checks.claim2_verdict([r(2.0, AT_LEAST)])[0] == checks.HOLDS
  assert checks.claim2_verdict([r(0.5, AT_LEAST)])[0] == checks.INCONCLUSIVE
  assert checks.claim2_verdict([None])[0] == checks.CANNOT_CHECK
  # Several seeds: the 95% t-interval of log(ratio), in ratio terms.
  verdict, why = checks.claim2_verdict([r(2.0), r(4.0), r(3.0)])
  logs = np.log([2.0, 4.0, 3.0])
  half = 4.302652729911275 * logs.std(ddof=1) / math.sqrt(3)  # t(0.975, 2)
  assert verdict == checks.HOLDS
  assert f"geometric mean ratio {math.exp(logs.mean()):.2f}x" in why
  assert f"[{math.exp(logs.mean() - half):.2f}, " \
         f"{math.exp(logs.mean() + half):.2f}]" in why
  assert checks.claim2_verdict([r(0.5), r(4.0)])[0] == checks.INCONCLUSIVE


def _rounds_to(path, target):
  """McMahan's rounds to `target`: the best-so-far curve of the evaluated
  rounds, linearly interpolated (None: never reached)."""
  with open(path) as f:
    rows = [r for r in csv.DictReader(f) if r["test_accuracy"]]
  x = np.array([float(r["round"]) for r in rows])
  best = np.maximum.accumulate([float(r["test_accuracy"]) for r in rows])
  if best[-1] < target:
    return None
  i = int(np.argmax(best >= target))
  if i == 0:
    return float(x[0])
  return float(x[i - 1] + (target - best[i - 1]) / (best[i] - best[i - 1])
               * (x[i] - x[i - 1]))


@pytest.mark.timeout(900)
def test_scaled_claims_preset_end_to_end(tmp_path):
  full = presets.get_preset("shakespeare_claims")
  target = 0.15  # Reached in one round by FedAvg here, not by FedSGD.
  runs = tuple(dataclasses.replace(r, flags=dict(
      r.flags, model=register_test_model(),  # Traced in seconds.
      shakespeare_plays=("comedy_of_errors",), total_rounds=1,
      rounds_per_eval=1, rounds_per_checkpoint=1, target_accuracy=target,
      client_fraction=0.2)) for r in full.runs)
  preset = dataclasses.replace(full, runs=runs, tables=(), figures=(),
                               comparisons=())
  archive = real_archive()
  out = []
  reproduce_lib.reproduce(preset, str(tmp_path), {
      "shakespeare_cache_dir": os.path.dirname(archive)}, echo=out.append)
  lines = (tmp_path / "shakespeare_claims_verdicts.txt").read_text(
      ).splitlines()
  assert len(lines) == 3 and "\n".join(lines) in "\n".join(out)
  rounds = {key: _rounds_to(tmp_path / name / key[1] / "metrics.csv", target)
            for key, name in sc.RUNS.items()}
  for label, split in sc.SPLITS.items():
    avg, sgd = rounds[split, "fedavg"], rounds[split, "fedsgd"]
    line = next(l for l in lines if f"(1, {label})" in l)
    shown = ("not reached in 1" if avg is None else f"{avg:.1f}",
             "not reached in 1" if sgd is None else f"{sgd:.1f}")
    assert f"FedAvg {shown[0]} vs FedSGD {shown[1]}" in line
    holds = avg is not None and (sgd is None or avg < sgd)
    assert line.startswith(f"[{checks.HOLDS if holds else checks.FAILS}]")
  speeds = {split: checks.speedup(rounds[split, "fedsgd"], 1,
                                  rounds[split, "fedavg"])
            for split in sc.SPLITS.values()}
  claim2 = lines[2]
  assert claim2.startswith("[") and "(2) McMahan 2017 §3" in claim2
  assert "paper: 95.3x vs 13.0x to 54%" in claim2
  if None not in speeds.values():
    ratio = checks.ratio(speeds["role"], speeds["iid"])
    assert f"ratio {checks._text(ratio)}" in claim2
    assert claim2.startswith(f"[{checks.claim2_verdict([ratio])[0]}]")
