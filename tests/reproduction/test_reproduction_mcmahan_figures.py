"""McMahan et al. 2017's figures on fabricated finished runs: Figure 9
against minibatch gradient computations, and each curve at the learning
rate its table chooses in a `_lr_grid` preset (one rate otherwise, said).

Every drawn number is checked against values computed here from the
paper's definitions and the fabricated curves (numpy), never read back from
the package's own helpers. No TensorFlow.
"""

import csv
import math
import os

import numpy as np
import pytest

from federated_vision.evaluation import curves
from federated_vision.reproduction import figure_rates
from federated_vision.reproduction import figure_spec as fs
from federated_vision.reproduction import lr_grid
from federated_vision.reproduction import presets
from federated_vision.reproduction import report
from federated_vision.reproduction import report_text
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import mcmahan2017 as mcmahan
from tests.fixtures.reproduction_helpers import finished_run

BALANCED = {"partition_stats": {"examples_per_client_min": 500,
                                "examples_per_client_max": 500}}


def _report(preset, root):
  """The report and its figures, as `reproduce --report_only` writes them
  (without its TensorBoard sweep)."""
  report_text.write_report(report.build_report(preset, str(root)), str(root))


def _figure_csv(root, preset, key):
  with open(os.path.join(root, f"{preset}_{key}.csv"), newline="") as f:
    return list(csv.DictReader(f))


def _drawn(rows, series):
  return [(float(r["x"]), float(r["y"])) for r in rows
          if r["kind"] == "point" and r["series"] == series
          and r["status"] == "ok"]


def test_minibatch_gradients_are_the_running_sum_of_clients_times_batches():
  rows = [{"round": 1, "clients": 10, "batch_budget": 50},
          {"round": 2, "clients": 1, "batch_budget": 10},
          {"round": 3, "clients": 10, "batch_budget": 0}]
  assert curves.minibatch_gradients(rows) == [500, 510, 510]
  with pytest.raises(ValueError, match="round 2: clients=None"):
    curves.minibatch_gradients([rows[0], {"round": 2, "batch_budget": 1}])


def test_figure9_draws_accuracy_against_minibatch_gradient_computations(
    tmp_path):
  """SGD at its minibatch updates; each FedAvg run at u = E * 500 / 50
  gradients per client (McMahan 2017 §2's u_k = E n_k / B) times its
  max(C * 100, 1) clients per round, summed over the rounds so far; a run
  whose clients differ in size is not drawn, saying why."""
  preset = presets.get_preset("mcmahan2017_figure9")
  sgd, *fedavg = preset.runs
  (figure,) = preset.figures
  assert figure.panels[0].x == fs.GRADIENTS and figure.table == (
      "mcmahan2017", "figure9")
  rng = np.random.default_rng(9)
  want = {}
  for run in fedavg:
    c, e = run.flags["client_fraction"], run.flags["client_epochs"]
    clients, u = max(int(c * 100), 1), e * math.ceil(500 / 50)
    accs = np.round(rng.uniform(0.3, 0.86, 8), 6)
    curve = [(10 * (k + 1), float(a)) for k, a in enumerate(accs)]
    finished_run(str(tmp_path), run, {"fedavg": curve},
                 batches_per_round=u, clients=clients, hparams=BALANCED)
    want[f"FedAvg C={c:g} E={e}"] = [
        (r * clients * u, 100 * a) for r, a in curve]
  history = [float(a) for a in np.round(rng.uniform(0.3, 0.86, 6), 6)]
  run_dir = finished_run(str(tmp_path), sgd, {"fedavg": [(1, 0.1)]},
                         centralized=history[-1])
  _write_sgd(run_dir, history, 1000)  # 50,000 / 50 updates an epoch.
  want["SGD B=50"] = [(1000 * (k + 1), 100 * a) for k, a in
                      enumerate(history)]
  _report(preset, tmp_path)
  rows = _figure_csv(tmp_path, preset.name, "figure9")
  for label, points in want.items():
    np.testing.assert_allclose(_drawn(rows, label), points, rtol=1e-12)
  markdown = open(tmp_path / f"{preset.name}.md").read()
  assert figure_rates.ONE_RATE_NOTE in markdown
  assert os.path.getsize(tmp_path / f"{preset.name}_figure9.png") > 10_000
  # Clients of 400-600 examples: a round's gradients are not counted.
  finished_run(str(tmp_path), fedavg[0], {"fedavg": [(10, 0.5)]},
               batches_per_round=10, clients=1, hparams={"partition_stats": {
                   "examples_per_client_min": 400,
                   "examples_per_client_max": 600}})
  _report(preset, tmp_path)
  rows = _figure_csv(tmp_path, preset.name, "figure9")
  (lacking,) = [r for r in rows if r["status"] not in ("ok", "paper")]
  assert lacking["run"] == fedavg[0].name and lacking["status"] == \
      "unavailable"
  assert "clients of 400-600 examples" in lacking["detail"]
  np.testing.assert_allclose(_drawn(rows, "SGD B=50"), want["SGD B=50"])


def _write_sgd(run_dir, history, updates_per_epoch):
  """The centralized run's per-epoch history and its minibatch updates."""
  import json  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  path = os.path.join(run_dir, "summary.json")
  with open(path) as f:
    summary = json.load(f)
  summary["centralized"].update(
      history=history, minibatch_updates=[
          updates_per_epoch * (k + 1) for k in range(len(history))])
  reporting.write_json(path, summary)


# (round, accuracy) per rate. FedAvg: 0.2154 reaches 99 % first (then
# falls: the monotone curve keeps its best); FedSGD: 0.1 first; E=20: no
# rate reaches 99 %, 0.04642 reaches the highest accuracy.
FEDAVG = {0.04642: [(10, 0.95), (20, 0.97), (30, 0.985), (40, 0.989)],
          0.1: [(10, 0.97), (20, 0.985), (30, 0.992), (40, 0.995)],
          0.2154: [(10, 0.98), (20, 0.995), (30, 0.96), (40, 0.97)]}
FEDSGD = {0.04642: [(10, 0.9), (20, 0.95), (30, 0.991), (40, 0.992)],
          0.1: [(10, 0.93), (20, 0.985), (30, 0.9905), (40, 0.993)],
          0.2154: [(10, 0.95), (20, 0.97), (30, 0.975), (40, 0.98)]}
UNREACHED = {0.04642: [(10, 0.95), (20, 0.975)],
             0.1: [(10, 0.96), (20, 0.97)],
             0.2154: [(10, 0.975), (20, 0.96)]}


def _grid_preset():
  """Three IID CNN settings of Table 2 with a Figure 2 of best-so-far
  curves, over a 3-rate grid around 0.1 (and its one-rate original)."""
  runs = {e_b: mcmahan.mcmahan_run("mnist_cnn", "iid", 0.1, *e_b)
          for e_b in ((5, 10), (1, None), (20, 10))}
  rows = {(5, 10): "FedAvg E=5 B=10", (1, None): "FedSGD E=1 B=∞",
          (20, 10): "FedAvg E=20 B=10"}
  cells = tuple(mcmahan.mcmahan_cell(rows[k], "IID", run, runs[1, None])
                for k, run in runs.items())
  table = spec.TableSpec(("mcmahan2017", "table2_cnn"), "mini",
                         tuple(rows.values()), ("IID",), cells)
  figure = fs.FigureSpec(
      "figure2", "Figure 2", "ours: a test's figure of three settings",
      (fs.Panel("IID", fs.CURVE, tuple(
          fs.curve(rows[k], run.name, run.methods()[0])
          for k, run in runs.items()), best_so_far=True),),
      table=table.key, best_rate=True)
  one_rate = spec.Preset("mini", "mcmahan2017", "d", tuple(runs.values()),
                         (table,), figures=(figure,))
  return one_rate, lr_grid.expand(one_rate, lr_grid.Grid(3, 1, 1)), runs


def test_grid_figure_draws_each_curve_at_its_cells_rate(tmp_path):
  """Each curve is the monotone curve of the rate whose curve reaches the
  target first (the table cell's choice, computed here), named in the
  legend; without any rate reaching it, the rate of the highest accuracy;
  a rate still missing leaves the curve undrawn, named."""
  one_rate, grid, runs = _grid_preset()
  data = {(5, 10): ("fedavg", FEDAVG), (1, None): ("fedsgd", FEDSGD),
          (20, 10): ("fedavg", UNREACHED)}
  for key, run in runs.items():
    method, per_rate = data[key]
    for name in grid.lr_grids[run.name]:
      member = grid.run(name)
      finished_run(str(tmp_path), member, {
          method: per_rate[member.flags["client_learning_rate"]]})

  def first_to(per_rate, target=0.99):
    """The rate reaching `target` first on its monotone, interpolated
    curve (ties: the smaller rate); None if none does."""
    best = {}
    for rate, curve in per_rate.items():
      rounds, accs = map(np.asarray, zip(*curve))
      top = np.maximum.accumulate(accs)
      if (top >= target).any():
        i = int(np.argmax(top >= target))
        best[rate] = rounds[i] if i == 0 else rounds[i - 1] + (
            target - top[i - 1]) / (top[i] - top[i - 1]) * (
                rounds[i] - rounds[i - 1])
    return min(best, key=lambda r: (best[r], r)) if best else None

  chosen = {"FedAvg E=5 B=10": first_to(FEDAVG),
            "FedSGD E=1 B=∞": first_to(FEDSGD),
            "FedAvg E=20 B=10": max(UNREACHED, key=lambda r: max(
                a for _, a in UNREACHED[r]))}
  assert chosen == {"FedAvg E=5 B=10": 0.2154, "FedSGD E=1 B=∞": 0.1,
                    "FedAvg E=20 B=10": 0.04642}  # The curves' design.
  rep = report.build_report(grid, str(tmp_path))
  report_text.write_report(rep, str(tmp_path))  # One report, read twice.
  rows = _figure_csv(tmp_path, grid.name, "figure2")
  per_label = {"FedAvg E=5 B=10": FEDAVG, "FedSGD E=1 B=∞": FEDSGD,
               "FedAvg E=20 B=10": UNREACHED}
  for label, rate in chosen.items():
    curve = per_label[label][rate]
    want = [(r, 100 * a) for r, a in zip(
        [r for r, _ in curve],
        np.maximum.accumulate([a for _, a in curve]))]
    np.testing.assert_allclose(_drawn(rows, label), want, rtol=1e-12)
    base = runs[next(k for k, (_, c) in data.items()
                     if c is per_label[label])]
    assert {r["run"] for r in rows if r["series"] == label
            and r["kind"] == "point"} == {
        lr_grid.member_name(base.name, 0.1, rate)}
  (figure,) = rep.figures
  assert figure.legend(0, "FedAvg E=5 B=10") == "FedAvg E=5 B=10, η = 0.2154"
  assert figure.legend(0, "FedAvg E=20 B=10") == (
      "FedAvg E=20 B=10, η = 0.04642")
  texts = {label: rate.text for _, label, rate in figure.rates}
  assert texts["FedAvg E=5 B=10"] == ("η = 0.2154 of 0.04642–0.2154, 3 "
                                      "rates: first to 99 %")
  assert texts["FedAvg E=20 B=10"] == (
      "η = 0.04642 of 0.04642–0.2154, 3 rates: none reaches 99 %, the "
      "highest accuracy")
  assert figure.rate_note == ""
  markdown = open(tmp_path / "mini_lr_grid.md").read()
  assert "IID, FedSGD E=1 B=∞: drawn at η = 0.1 of" in markdown
  # The one-rate preset: each run's own rate, said.
  one = report.build_report(one_rate, str(tmp_path)).figures[0]
  assert one.rate_note == figure_rates.ONE_RATE_NOTE and not one.rates
  np.testing.assert_allclose(
      [p.y for p in one.drawn(0, "FedAvg E=5 B=10")],
      100 * np.maximum.accumulate([a for _, a in FEDAVG[0.1]]))
  # A rate of the grid not finished: that curve waits, named.
  os.remove(tmp_path / grid.lr_grids[runs[5, 10].name][0] / "summary.json")
  partial = report.build_report(grid, str(tmp_path)).figures[0]
  assert not partial.drawn(0, "FedAvg E=5 B=10")
  (why,) = [m for m in partial.not_drawn() if "2 of 3 rates" in m]
  assert why.startswith(runs[5, 10].name)
  assert partial.drawn(0, "FedSGD E=1 B=∞")


def test_mcmahan_figures_follow_the_papers_rate_rule():
  """Figures 2, 4, 6, 7, 9 at the best rate of a grid (§3: "we plot metrics
  for the best performing rate"), Figure 8 at each run's own (§3 on large
  E: "we report results for a fixed learning rate"); in the grid presets
  every curve of Figures 2, 4, 6, 7 reads a tuned run of the figure's table."""
  declared = {}
  for name in ("mcmahan2017_table2_lr_grid", "mcmahan2017_table4_lr_grid",
               "mcmahan2017_table3_lr_grid", "mcmahan2017_figure4",
               "mcmahan2017_figure9"):
    preset = presets.get_preset(name)
    for figure in preset.figures:
      declared[figure.key] = figure.best_rate
      if figure.best_rate and preset.lr_grids:
        for panel in figure.panels:
          for series in panel.series:
            ((run, method),) = series.points
            assert len(preset.lr_grids[run]) == 13, (name, series.label)
            assert any((c.run, c.method) == (run, method)
                       for t in preset.tables if t.key == figure.table
                       for c in t.cells)
  assert declared == {"figure2": True, "figure4": True, "figure6": True,
                      "figure7": True, "figure8": False, "figure9": True,
                      # Issue 34: Figure 2's Shakespeare LSTM panels.
                      "figure2_lstm": True}
