"""The TF-free pieces shared by the runner and the reproduction reports:
`evaluation.curves` (curve, Acc@Round/Acc@Batch) and `selection.select`."""

import sys
import subprocess

import numpy as np
import pytest

from federated_vision.experiment import selection
from federated_vision.evaluation import curves

ROWS = [{"round": "1", "test_accuracy": "", "cumulative_batch_budget": "4"},
        {"round": "2", "test_accuracy": "0.5", "cumulative_batch_budget": "8"},
        {"round": "3", "test_accuracy": "nan", "cumulative_batch_budget": "12"},
        {"round": "4", "test_accuracy": 0.75, "cumulative_batch_budget": 16}]


def test_curve_skips_unevaluated_rows_and_keeps_nan():
  xs, ys = curves.curve(ROWS, "cumulative_batch_budget")
  assert xs == [8.0, 12.0, 16.0]
  assert ys[0] == 0.5 and np.isnan(ys[1]) and ys[2] == 0.75


def test_accuracy_at_matches_numpy_reference():
  rng = np.random.default_rng(0)
  xs = np.sort(rng.integers(1, 100, 30)).astype(float)
  accs = rng.random(30)
  for x in (0.5, 1, 17, 50.5, 99, 1000):
    ref = [a for xi, a in zip(xs, accs) if xi <= x]  # Last one at or before x.
    got = curves.accuracy_at(xs, accs, x)
    assert got == (float(ref[-1]) if ref else None)
  with pytest.raises(ValueError, match="non-decreasing"):
    curves.accuracy_at([2, 1], [0.1, 0.2], 3)
  with pytest.raises(ValueError, match="same length"):
    curves.accuracy_at([1, 2], [0.1], 3)


def test_metrics_and_reports_share_the_definition():
  from federated_vision.evaluation import metrics  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import report  # pylint: disable=g-import-not-at-top
  assert metrics.accuracy_at is curves.accuracy_at
  assert report.curves is curves


def test_curves_and_reports_do_not_import_tensorflow():
  code = ("import sys; import federated_vision.evaluation.curves; "
          "import federated_vision.reproduction.report; "
          "import federated_vision.reproduction.plan; "
          "sys.exit('tensorflow' in sys.modules)")
  assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


class _N:
  def __init__(self, name):
    self.name = name


def test_select_by_pattern_keeps_order_and_names_a_miss():
  items = [_N("a_1"), _N("b_1"), _N("a_2")]
  assert selection.select(items) == tuple(items)
  assert [x.name for x in selection.select(items, ["a_*"])] == ["a_1", "a_2"]
  assert [x.name for x in selection.select(items, ["*_2", "b*"])] == [
      "b_1", "a_2"]
  with pytest.raises(selection.NoMatch) as e:
    selection.select(items, ["a_*", "zz*"])
  assert e.value.pattern == "zz*"
  assert selection.select(["x", "y"], ["y"], name=str) == ("y",)
