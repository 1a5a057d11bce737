"""The papers' claims as paired comparisons over seeds (issue 28, part E):
the verdict rules on recorded differences, targets not reached as bounds,
and a preset's comparisons read from fake run directories into the report
and its summary JSON."""

import json
import math
import os

import pytest

from federated_vision.reproduction import comparisons as cmp
from federated_vision.reproduction import intervals
from federated_vision.reproduction import presets
from federated_vision.reproduction import report
from federated_vision.reproduction import report_text
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.reproduction import claim_spec
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import digits_claims as dc
from tests.fixtures.reproduction_helpers import finished_run

HIGHER, LOWER = claim_spec.HIGHER, claim_spec.LOWER
T2 = 4.302652730  # t_{0.975, 2}


def V(value, status="ok", detail=""):
  return report.Value(value, status, detail)


def test_verdicts_on_recorded_differences():
  # mean 3, s = 1, n = 3: 3 ± 4.303/sqrt(3) = [0.516, 5.484].
  assert cmp.verdict([2.0, 3.0, 4.0], [""] * 3, HIGHER) == (
      cmp.REPRODUCED, "n=3: the interval is on the paper's side of 0")
  assert 3 - T2 / math.sqrt(3) == pytest.approx(0.5158, abs=1e-4)
  assert cmp.verdict([-2.0, -3.0, -4.0], [""] * 3, HIGHER)[0] == cmp.OPPOSITE
  # [1, 2, 3]: 2 ± 2.484 contains 0.
  assert cmp.verdict([1.0, 2.0, 3.0], [""] * 3, HIGHER) == (
      cmp.INCONCLUSIVE, "n=3: the interval contains 0")
  # LOWER (fewer rounds): a - b < 0 is the paper's side.
  assert cmp.verdict([-2.0, -3.0, -4.0], [""] * 3, LOWER)[0] == cmp.REPRODUCED
  # One pair: the sign, said to have no interval.
  assert cmp.verdict([0.5, None], ["", ""], HIGHER) == (
      cmp.REPRODUCED, "n=1, no interval: the difference is on the paper's "
      "side")
  assert cmp.verdict([None, None], ["", ""], HIGHER) == (
      cmp.CANNOT_CHECK, "no seed has both numbers")


def test_a_target_not_reached_is_a_bound_used_one_way_only():
  budgets = [60, 60, 60]
  reached = [V(5.0), V(6.0), V(7.0)]
  never = [V(None, cmp.NOT_REACHED, "not reached in 60 rounds")] * 3
  # FedAvg reaches it, FedSGD never: b's budget understates its rounds, so
  # a - b <= 5 - 60 is safe for "fewer rounds".
  diffs, cut = cmp.pairs(reached, never, budgets, budgets)
  assert (diffs, cut) == ((-55.0, -54.0, -53.0), ("b", "b", "b"))
  assert cmp.verdict(diffs, cut, LOWER)[0] == cmp.REPRODUCED
  # The claimed-better side never reaches it: against the paper (safe).
  diffs, cut = cmp.pairs(never, [V(30.0)] * 3, budgets, budgets)
  assert diffs == (30.0, 30.0, 30.0)
  assert cmp.verdict(diffs, cut, LOWER)[0] == cmp.OPPOSITE
  # A bound the wrong way: the paper's side, but b's true rounds are unknown
  # for a claim that b is the smaller (a's seed understates nothing).
  assert cmp.verdict([10.0, 11.0, 12.0], ["b", "", ""], HIGHER)[0] == (
      cmp.INCONCLUSIVE)
  # Neither reached: that pair says nothing and is left out.
  diffs, cut = cmp.pairs(never, never, budgets, budgets)
  assert diffs == (None, None, None)
  r = cmp.evaluate(claim_spec.Comparison(
      "k", "c", claim_spec.Side("r", spec.Metric(spec.ROUNDS_TO_TARGET, 0.9), "a"),
      claim_spec.Side("r", spec.Metric(spec.ROUNDS_TO_TARGET, 0.9), "b"), LOWER),
      never, never, budgets, budgets)
  assert r.verdict == cmp.CANNOT_CHECK
  assert r.why == "no seed has both numbers (not reached in 60 rounds)"


def _fake_claim3(root, preset, accuracies):
  """Claim 3's run per seed: FedAvg and FedAvg+FedIR final accuracies."""
  for name, (plain, fedir) in zip(seeds_lib.replicas(preset, dc.CLAIM3_RUN),
                                  accuracies):
    finished_run(root, preset.run(name), {"fedavg": [(40, plain)],
                                          "fedavg+fedir": [(40, fedir)]})


def test_report_and_summary_json_hold_each_comparison(tmp_path):
  p = seeds_lib.expand(presets.get_preset("digits_claims"), 3)
  root = str(tmp_path)
  accuracies = [(0.60, 0.66), (0.62, 0.67), (0.58, 0.64)]
  _fake_claim3(root, p, accuracies)
  rep = report.build_report(p, root)
  r = next(c for c in rep.comparisons if c.spec.key == "fedir_vs_off")
  diffs = [100 * (f - a) for a, f in accuracies]
  assert list(r.differences) == pytest.approx(diffs)
  iv = intervals.t_interval(diffs)
  assert (r.interval.low, r.interval.high) == (
      pytest.approx(iv.low), pytest.approx(iv.high))
  assert r.interval.half_width == pytest.approx(
      T2 * iv.sd / math.sqrt(3), rel=1e-9)
  assert r.verdict == cmp.REPRODUCED  # 5.67 ± 1.43 (n=3).
  paths = report_text.write_report(rep, root)
  with open(paths["summary"]) as f:
    summary = json.load(f)
  assert summary["seeds"] == 3
  j = next(c for c in summary["comparisons"] if c["key"] == "fedir_vs_off")
  assert j["differences"] == pytest.approx(diffs)
  assert (j["n"], j["n_seeds"], j["verdict"]) == (3, 3, "reproduced")
  assert j["paper_direction"] == "a > b" and j["unit"] == "%"
  assert j["ci_low"] == pytest.approx(iv.low)
  assert j["a"]["values"] == pytest.approx([100 * f for _, f in accuracies])
  md = report_text.format_markdown(rep)
  line = next(l for l in md.splitlines() if "(claim 3)" in l)
  assert f"| +{iv.mean:.2f} ± {iv.half_width:.2f} (n=3) |" in line
  assert "**reproduced**" in line
  # A claim whose runs are missing: cannot check, naming the run.
  missing = next(c for c in summary["comparisons"]
                 if c["key"] == "fedvc_vs_off")
  assert missing["verdict"] == "cannot check" and missing["n"] == 0
  assert "digits_claims_fedvc_imbalanced" in missing["why"]
  cell = next(c for c in summary["cells"] if c["table"] == "digits/claim3"
              and c["column"] == "FedAvg + FedIR")
  assert cell["n"] == 3 and cell["seed_values"] is not None
