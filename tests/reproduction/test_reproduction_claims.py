"""The digits claims check: verdicts from numbers, and from run directories."""

import math

import numpy as np
import pytest

from federated_vision.reproduction import claims
from federated_vision.reproduction import presets
from federated_vision.reproduction.presets import digits_claims as dc
from tests.fixtures.reproduction_helpers import finished_run


def _spearman_reference(x, y):
  """numpy reference: Pearson correlation of average ranks."""
  def rank(v):
    v = np.asarray(v, float)
    return np.array([np.sum(v < a) + (np.sum(v == a) + 1) / 2 for a in v])
  return float(np.corrcoef(rank(x), rank(y))[0, 1])


def test_spearman_matches_numpy_reference():
  rng = np.random.default_rng(3)
  for _ in range(20):
    x = rng.integers(0, 5, 7).astype(float)  # With ties.
    y = rng.normal(size=7)
    if len(set(x)) > 1:
      assert claims.spearman(x, y) == pytest.approx(_spearman_reference(x, y),
                                                    abs=1e-12)
  assert claims.spearman([1, 2, 3], [3, 2, 1]) == -1.0
  assert math.isnan(claims.spearman([1, 1, 1], [1, 2, 3]))
  with pytest.raises(ValueError):
    claims.spearman([1], [2])
  assert list(claims.ranks([3, 1, 3, 2])) == [3.5, 1.0, 3.5, 2.0]


def test_claim_emd_holds_and_fails():
  v = claims.claim_emd([(1.6, 0.30, 0.70), (0.1, 0.95, 0.96), (0.9, 0.80, 0.85)])
  assert v.outcome == claims.HOLDS
  assert "Spearman(EMD, FedAvg acc) = -1.00" in v.evidence
  assert "at EMD 1.60 FedAvgM 70.0% >= FedAvg 30.0%" in v.evidence
  v = claims.claim_emd([(1.6, 0.30, 0.20), (0.1, 0.95, 0.96)])
  assert v.outcome == claims.FAILS and "FedAvgM 20.0% < FedAvg 30.0%" in v.evidence
  v = claims.claim_emd([(1.6, 0.97, 0.98), (0.1, 0.95, 0.96)])
  assert v.outcome == claims.FAILS
  assert claims.claim_emd([(0.5, 0.9, 0.9)]).outcome == claims.CANNOT_CHECK


def test_claims_2_to_5():
  assert claims.claim_fedvc(0.8, 0.85, 400).line == (
      "[holds] (2) Hsu 2020 Table 2: on imbalanced clients FedVC's Acc@Batch "
      ">= FedAvg's -- Acc@Batch 400: FedAvg+FedVC 85.0% >= FedAvg 80.0%")
  assert claims.claim_fedvc(0.8, 0.7, 400).outcome == claims.FAILS
  v = claims.claim_fedir(0.70, 0.65, 0.05)
  assert v.outcome == claims.NOT_REPRODUCED
  assert "FedAvg+FedIR 65.0% < FedAvg 70.0%" in v.evidence
  assert claims.claim_fedir(0.70, 0.70, 0.05).outcome == claims.HOLDS
  v = claims.claim_rounds(0.9, 60, {"IID": (5.5, None), "non-IID": (20.0, 40.0)})
  assert v.outcome == claims.HOLDS
  assert ("IID: FedAvg 5.5 vs FedSGD not reached in 60; non-IID: FedAvg 20.0 "
          "vs FedSGD 40.0; FedAvg IID < non-IID") in v.evidence
  assert claims.claim_rounds(0.9, 60, {"IID": (5.5, 4.0), "non-IID": (
      20.0, 40.0)}).outcome == claims.FAILS
  assert claims.claim_rounds(0.9, 60, {"IID": (None, None), "non-IID": (
      None, None)}).outcome == claims.FAILS
  assert claims.claim_rounds(0.9, 60, {"IID": (30.0, None), "non-IID": (
      20.0, None)}).outcome == claims.FAILS  # IID slower than non-IID.
  acc = {"none": 0.0, "parallel": 0.6, "example_transfer": 0.7,
         "gradient_transfer": 0.0, "oracle": 0.9}
  v = claims.claim_mixing(acc, "8,9")
  assert v.outcome == claims.FAILS
  assert v.evidence.endswith("not above no mixing: gradient_transfer")
  acc["gradient_transfer"] = 0.55
  assert claims.claim_mixing(acc, "8,9").outcome == claims.HOLDS


def test_check_digits_claims_from_run_directories(tmp_path):
  p = presets.get_preset("digits_claims")
  root = str(tmp_path)
  for run, emd, (fa, fm) in zip(dc.CLAIM1_RUNS, (0.1, 0.6, 1.2, 1.8),
                                ((0.95, 0.96), (0.9, 0.93), (0.7, 0.85),
                                 (0.4, 0.8))):
    finished_run(root, p.run(run), {"fedavg": [(40, fa)], "fedavgm": [(40, fm)]},
                 emd=emd)
  finished_run(root, p.run(dc.CLAIM2_RUN),
               {"fedavg": [(40, 0.9)], "fedavg+fedvc": [(40, 0.8)]},
               entries={"fedavg": {"acc_at_batch": 0.7},
                        "fedavg+fedvc": {"acc_at_batch": 0.8}},
               acc_at_batch_ref=160)
  finished_run(root, p.run(dc.CLAIM3_RUN),
               {"fedavg": [(40, 0.6)], "fedavg+fedir": [(40, 0.55)]})
  finished_run(root, p.run(dc.CLAIM4_RUNS["IID"]),
               {"fedavg": [(60, 0.95)], "fedsgd": [(60, 0.85)]},
               entries={"fedavg": {"rounds_to_target": 4.5},
                        "fedsgd": {"rounds_to_target": None}})
  # Claim 4's non-IID run and claim 5's mixing runs never ran.
  verdicts = claims.check_digits_claims(root)
  assert [v.number for v in verdicts] == [1, 2, 3, 4, 5]
  assert [v.outcome for v in verdicts] == [
      claims.HOLDS, claims.HOLDS, claims.NOT_REPRODUCED, claims.CANNOT_CHECK,
      claims.CANNOT_CHECK]
  assert "EMD 1.80: FedAvg 40.0% / FedAvgM 80.0%" in verdicts[0].evidence
  assert "Acc@Batch 160: FedAvg+FedVC 80.0% >= FedAvg 70.0%" in verdicts[1].line
  assert verdicts[3].evidence.startswith(
      "digits_claims_rounds_shards/fedavg is missing (no directory ")
  assert verdicts[4].evidence.startswith("digits_claims_mixing_none/fedavg+none is "
                                         "missing")
  # Our own claims have no published numbers: cells show ours alone.
  from federated_vision.reproduction import report  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import report_text  # pylint: disable=g-import-not-at-top
  md = report_text.format_markdown(report.build_report(p, root))
  assert "| α = 0 | 1.800 | 40.00 | 80.00 |" in md
  assert "Each cell: ours (our own checks" in md
  assert "not transcribed" not in md and " / " not in md.split("## ")[1]
  # A diverged method is never compared.
  finished_run(root, p.run(dc.CLAIM3_RUN),
               {"fedavg": [(40, 0.6)], "fedavg+fedir": [(40, 0.55)]},
               entries={"fedavg+fedir": {"status": "diverged"}})
  v = claims.check_digits_claims(root)[2]
  assert v.outcome == claims.CANNOT_CHECK and "is diverged" in v.evidence
