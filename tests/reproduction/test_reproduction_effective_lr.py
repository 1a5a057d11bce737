"""The effective-learning-rate study: eta/(1 - beta), grouping, best per group,
table, contour / sensitivity PNGs (fake finished runs, no training)."""

import csv
import math

import numpy as np
import pytest

from federated_vision.reproduction import effective_lr as elr
from federated_vision.reproduction import presets
from federated_vision.reproduction import report
from federated_vision.reproduction import report_text
from federated_vision.reproduction import results
from tests.fixtures.reproduction_helpers import centralized_run
from tests.fixtures.reproduction_helpers import finished_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_effective_learning_rate():
  assert elr.effective_learning_rate(0.1, 0.0) == 0.1
  assert elr.effective_learning_rate(0.05, 0.5) == 0.1
  assert elr.effective_learning_rate(0.01, 0.9) == 0.01 / (1 - 0.9)
  for lr, beta in ((0.0, 0.5), (-1.0, 0.0), (math.inf, 0.0), (0.1, 1.0),
                   (0.1, -0.1)):
    with pytest.raises(ValueError):
      elr.effective_learning_rate(lr, beta)


def _points(values):
  """2 alpha x 3 lr x 2 beta with `values[(alpha, lr, beta)]`."""
  return [elr.Point(f"a{a}_lr{lr}_m{b}", (), a, lr, b, values.get((a, lr, b)),
                    elr.OK if values.get((a, lr, b)) is not None else "diverged")
          for a in (0.1, 10.0) for lr in (0.02, 0.05, 0.1) for b in (0.0, 0.5)]


def test_grouping_and_best_per_group_exact():
  rng = np.random.default_rng(0)
  values = {(a, lr, b): float(rng.uniform(0.3, 0.9))
            for a in (0.1, 10.0) for lr in (0.02, 0.05, 0.1) for b in (0.0, 0.5)}
  values[(10.0, 0.1, 0.5)] = None  # A diverged run.
  groups = elr.group_points(_points(values))
  # eta_eff: 0.02, 0.04, 0.05, 0.1 (0.1 x 1 and 0.05 x 2), 0.2 per alpha.
  assert [(g.alpha, g.eta_eff, len(g.members)) for g in groups] == [
      (a, r, 2 if r == 0.1 else 1) for a in (0.1, 10.0)
      for r in (0.02, 0.04, 0.05, 0.1, 0.2)]
  for g in groups:
    ok = [(p.value, p.run) for p in g.members if p.value is not None]
    if ok:
      assert g.best.value == max(ok)[0] and g.status == elr.OK
    else:
      assert g.best is None and g.status == "diverged"
  g = next(g for g in groups if (g.alpha, g.eta_eff) == (0.1, 0.1))
  want = max(values[(0.1, 0.1, 0.0)], values[(0.1, 0.05, 0.5)])
  assert g.best.value == want
  tables = elr.grouped_table(groups)
  header, rows = tables[()]
  assert header == ["α \\ η/(1−β)", "0.02", "0.04", "0.05", "0.1", "0.2"]
  assert rows[1][0] == "10" and rows[1][5] == "diverged"
  b = g.best
  assert rows[0][4] == f"{b.value:.3f} (η={b.lr:g}, β={b.momentum:g})"


def test_rates_equal_up_to_rounding_are_one_group():
  pts = [elr.Point("x", (), 1.0, 0.3, 0.0, 0.5),
         elr.Point("y", (), 1.0, 0.03, 0.9, 0.7)]  # 0.03 / 0.1 = 0.29999...
  assert 0.03 / (1 - 0.9) != 0.3
  (g,) = elr.group_points(pts)
  assert g.best.run == "y" and len(g.members) == 2


@pytest.mark.timeout(1800)  # One of the suite's slowest: a digits sweep.
def test_digits_sweep_writes_contour_png_and_grouped_table(tmp_path):
  p = presets.get_preset("digits_effective_lr")
  (study,) = p.studies
  root = str(tmp_path / "runs")
  acc = {}
  for name in study.runs:
    f = p.run(name).flags
    eta = f["client_learning_rate"] / (1 - f["server_momentum"])
    acc[name] = round(0.5 + eta + (0.1 if f["alpha"] > 1 else 0.0), 6)
    finished_run(root, p.run(name), {"fedavgm": [(10, 0.4), (20, acc[name])]})
  centralized_run(root, p.run("central_digits"), 0.8)
  rep = report.build_report(p, root)
  paths = report_text.write_report(rep, str(tmp_path / "out"))
  with open(paths["effective_lr_png"], "rb") as f:
    assert f.read(8) == PNG_MAGIC
  # The contour is linked in the report, under its study's table.
  with open(paths["markdown"]) as f:
    markdown = f.read()
  assert markdown.index(f"## {study.title}") < markdown.index(
      f"]({p.name}_effective_lr.png)")
  with open(paths["effective_lr_csv"], newline="") as f:
    rows = list(csv.DictReader(f))
  assert len(rows) == 2 * 5
  for r in rows:
    members = [n for n in study.runs if p.run(n).flags["alpha"] == float(r["alpha"])
               and math.isclose(p.run(n).flags["client_learning_rate"] /
                                (1 - p.run(n).flags["server_momentum"]),
                                float(r["eta_eff"]))]
    best = max(members, key=lambda n: acc[n])
    assert r["best_run"] == best
    assert float(r["best_value"]) == pytest.approx(acc[best] / 0.8, abs=1e-12)
    assert int(r["members"]) == len(members) == int(r["members_with_value"])
  md = open(paths["markdown"]).read()
  assert "Value: relative accuracy of `fedavgm`" in md
  assert "| α \\ η/(1−β) | 0.02 | 0.04 | 0.05 | 0.1 | 0.2 |" in md


def test_appendix_a_study_reads_the_nesterov_fedavgm(tmp_path):
  """Appendix A's study reads fedavgm@nesterov, Hsu's FedAvgM (the presets'
  sources), grouped by eta / (1 - beta) as heavy-ball's; a run holding only
  a heavy-ball fedavgm has no value for it."""
  p = presets.get_preset("hsu2020_appendix_a")
  study = next(s for s in p.studies if s.key == "appendix_a")
  assert study.method == "fedavgm@nesterov"
  panel = [n for n in study.runs if (
      p.run(n).flags["alpha"], p.run(n).flags["clients_per_round"],
      p.run(n).flags["client_epochs"]) == (0.1, 10, 1)]
  assert len(panel) == 4 * 4  # eta x beta
  root = str(tmp_path)
  acc = {}
  for i, name in enumerate(panel[:-1]):
    acc[name] = 0.3 + 0.01 * i
    finished_run(root, p.run(name), {study.method: [(5000, 0.2),
                                                    (10000, acc[name])]})
  finished_run(root, p.run(panel[-1]), {"fedavgm": [(10000, 0.9)]})
  centralized_run(root, p.run(study.baseline), 0.8)
  runs = {r.name: results.read_run(root, r) for r in p.runs}
  points, label, _ = elr.study_points(study, p, runs)
  by = {pt.run: pt for pt in points}
  assert label == "relative accuracy"
  for name in panel[:-1]:
    f = p.run(name).flags
    assert by[name].value == pytest.approx(acc[name] / 0.8, abs=1e-12)
    assert by[name].eta_eff == f["client_learning_rate"] / (
        1 - f["server_momentum"])
  assert (by[panel[-1]].status, by[panel[-1]].value) == ("missing", None)
  groups = [g for g in elr.group_points(points) if g.alpha == 0.1 and
            dict(g.panel) == {"clients_per_round": 10, "client_epochs": 1}]
  assert sum(len(g.members) for g in groups) == 16
  for g in groups:
    ok = [m for m in g.members if m.run in acc]
    if ok:
      assert g.best.run == max(ok, key=lambda m: acc[m.run]).run


def test_missing_baseline_falls_back_to_accuracy_and_says_so(tmp_path):
  p = presets.get_preset("digits_effective_lr")
  (study,) = p.studies
  for name in study.runs[:3]:
    finished_run(str(tmp_path), p.run(name), {"fedavgm": [(20, 0.5)]})
  res = report.build_report(p, str(tmp_path)).studies[0]
  assert res.value_label == "test accuracy"
  assert res.notes and "central_digits is missing" in res.notes[0]
  assert [pt.value for pt in res.points[:3]] == [0.5] * 3
  assert {pt.status for pt in res.points[3:]} == {"missing"}
  paths = elr.write_study(res, str(tmp_path / "study"))
  with open(paths["effective_lr_png"], "rb") as f:
    assert f.read(8) == PNG_MAGIC


def test_sensitivity_plot(tmp_path):
  pts = [elr.Point(f"r{i}", (), 1.0, lr, b, 0.5 + lr, elr.OK)
         for i, (lr, b) in enumerate([(0.01, 0.9), (0.1, 0.9), (0.01, 0.99),
                                      (0.1, 0.99)])]
  path = elr.plot_sensitivity(pts, str(tmp_path / "s.png"), "accuracy")
  with open(path, "rb") as f:
    assert f.read(8) == PNG_MAGIC
