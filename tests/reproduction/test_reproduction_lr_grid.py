"""McMahan et al. 2017 §3's learning-rate protocol (`reproduction.lr_grid`).

The grid's rates, the choice of the rate whose monotone curve reaches the
target first, and a report over finished (fabricated) runs: the chosen rate,
its rounds and the speedup are checked against values computed here with
numpy from the same curves.
"""

import csv

import numpy as np
import pytest

from federated_vision.reproduction import lr_grid
from federated_vision.reproduction import presets
from federated_vision.reproduction import report
from federated_vision.reproduction import report_text
from federated_vision.reproduction import results
from federated_vision.reproduction import seeds
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import mcmahan2017 as mcmahan
from tests.fixtures.reproduction_helpers import finished_run


def test_grid_rates_are_the_papers_multiplicative_grid():
  rates = lr_grid.PAPER_GRID.rates(0.1)
  want = 0.1 * 10 ** (np.arange(-6, 7) / 3)
  assert len(rates) == 13 and rates[6] == 0.1
  np.testing.assert_allclose(rates, want, rtol=5e-4)  # 4 significant digits.
  assert rates[0] == 0.001 and rates[-1] == 10.0 and rates[5] == 0.04642
  fine = lr_grid.Grid(6, 2, 1).rates(0.25)
  np.testing.assert_allclose(fine, 0.25 * 10 ** (np.arange(-2, 2) / 6),
                             rtol=5e-4)
  for bad in (dict(steps_per_decade=4), dict(below=-1), dict(below=0, above=0)):
    with pytest.raises(ValueError):
      lr_grid.Grid(**bad)
  with pytest.raises(ValueError, match="center"):
    lr_grid.Grid().rates(0.0)


def test_choose_fewest_rounds_ties_to_the_smaller_rate_none_if_unreached():
  choice = lr_grid.choose({0.1: 40.0, 0.03: 25.5, 0.3: 25.5, 1.0: None},
                          {0.03: "a", 0.1: "b", 0.3: "c", 1.0: "d"})
  assert (choice.rate, choice.run, choice.rounds) == (0.03, "a", 25.5)
  assert choice.grid == ((0.03, 25.5), (0.1, 40.0), (0.3, 25.5), (1.0, None))
  assert choice.text() == "η = 0.03 of 0.03–1 (4 rates)"
  none = lr_grid.choose({0.1: None, 1.0: None})
  assert none.rate is None and none.rounds is None
  assert none.text() == "no η of 0.1–1 (2 rates) reaches it"


def _mini_preset():
  """Table 2's IID FedAvg E=5 B=10 cell and its FedSGD reference, each over
  a 3-rate grid around 0.1 (resolution 10^(1/3))."""
  fedavg = mcmahan.mcmahan_run("mnist_cnn", "iid", 0.1, 5, 10)
  fedsgd = mcmahan.mcmahan_run("mnist_cnn", "iid", 0.1, 1, None)
  cells = (mcmahan.mcmahan_cell("FedAvg E=5 B=10", "IID", fedavg, fedsgd),
           mcmahan.mcmahan_cell("FedSGD E=1 B=∞", "IID", fedsgd, fedsgd))
  table = spec.TableSpec(("mcmahan2017", "table2_cnn"), "mini",
                         ("FedSGD E=1 B=∞", "FedAvg E=5 B=10"), ("IID",),
                         cells)
  one_rate = spec.Preset("mini", "mcmahan2017", "d", (fedavg, fedsgd),
                         (table,))
  return lr_grid.expand(one_rate, lr_grid.Grid(3, 1, 1)), fedavg, fedsgd


def _rounds(rounds, accs, target):
  """McMahan's rounds to target, written here with numpy: running max, then
  linear interpolation between the evaluations around the crossing."""
  best = np.maximum.accumulate(np.asarray(accs, float))
  i = int(np.flatnonzero(best >= target)[0]) if (best >= target).any() else None
  if i is None:
    return None
  if i == 0 or best[i] == target:
    return float(rounds[i])
  return float(rounds[i - 1] + (target - best[i - 1]) / (best[i] - best[i - 1])
               * (rounds[i] - rounds[i - 1]))


# (round, accuracy) curves per rate; the 0.2154 curve falls after reaching
# 99% (the
# monotone curve keeps its best), 0.04642 never reaches 99%.
FEDAVG_CURVES = {
    0.04642: [(10, 0.95), (20, 0.97), (30, 0.985), (40, 0.989)],
    0.1: [(10, 0.97), (20, 0.985), (30, 0.992), (40, 0.995)],
    0.2154: [(10, 0.98), (20, 0.995), (30, 0.96), (40, 0.97)],
}
FEDSGD_CURVES = {
    0.04642: [(100, 0.9), (200, 0.95), (300, 0.991), (400, 0.992)],
    0.1: [(100, 0.93), (200, 0.985), (300, 0.9905), (400, 0.993)],
    0.2154: [(100, 0.95), (200, 0.97), (300, 0.975), (400, 0.98)],
}


def _fabricate(root, preset, base, method, curves, skip=()):
  for name in preset.lr_grids[base.name]:
    run = preset.run(name)
    rate = run.flags["client_learning_rate"]
    if rate not in skip:
      finished_run(str(root), run, {method: curves[rate]})


def test_report_picks_the_rate_reaching_the_target_first(tmp_path):
  preset, fedavg, fedsgd = _mini_preset()
  assert preset.name == "mini_lr_grid"
  names = preset.lr_grids[fedavg.name]
  assert names == (fedavg.name + "_lr0.04642", fedavg.name,
                   fedavg.name + "_lr0.2154")
  assert [preset.run(n).flags["client_learning_rate"] for n in names] == [
      0.04642, 0.1, 0.2154]
  _fabricate(tmp_path, preset, fedavg, "fedavg", FEDAVG_CURVES)
  _fabricate(tmp_path, preset, fedsgd, "fedsgd", FEDSGD_CURVES)

  def best(curves):
    rounds = {rate: _rounds(*zip(*curve), 0.99) for rate, curve in
              curves.items()}
    reached = {r: v for r, v in rounds.items() if v is not None}
    rate = min(reached, key=lambda r: (reached[r], r))
    return rate, reached[rate]

  fedavg_rate, fedavg_rounds = best(FEDAVG_CURVES)
  fedsgd_rate, fedsgd_rounds = best(FEDSGD_CURVES)
  assert (fedavg_rate, fedsgd_rate) == (0.2154, 0.1)  # The curves' design.

  rep = report.build_report(preset, str(tmp_path))
  cells = {r.cell.row: r for r in rep.cells}
  avg, sgd = cells["FedAvg E=5 B=10"], cells["FedSGD E=1 B=∞"]
  assert avg.ours.choice.rate == fedavg_rate
  assert avg.ours.value == pytest.approx(fedavg_rounds, abs=1e-9)
  assert sgd.ours.choice.rate == fedsgd_rate
  assert sgd.ours.value == pytest.approx(fedsgd_rounds, abs=1e-9)
  # Speedup: each side at its own best rate ("selected individually").
  assert avg.speedup.value == pytest.approx(fedsgd_rounds / fedavg_rounds)
  assert avg.paper.text == "20 (31.3x)"  # Still the published cell.

  paths = report_text.write_report(rep, str(tmp_path / "out"))
  with open(paths["csv"], newline="") as f:
    rows = {r["row"]: r for r in csv.DictReader(f)}
  assert float(rows["FedAvg E=5 B=10"]["learning_rate"]) == fedavg_rate
  grid = dict(item.split(":") for item in
              rows["FedAvg E=5 B=10"]["learning_rate_grid"].split(";"))
  assert grid["0.04642"] == ""  # Not reached.
  assert float(grid["0.1"]) == pytest.approx(_rounds(
      *zip(*FEDAVG_CURVES[0.1]), 0.99))
  markdown = open(paths["markdown"]).read()
  assert f"[η = {fedavg_rate} of 0.04642–0.2154 (3 rates)]" in markdown


def test_a_grid_cell_waits_for_every_rate_and_skips_diverged_ones(tmp_path):
  preset, fedavg, fedsgd = _mini_preset()
  _fabricate(tmp_path, preset, fedavg, "fedavg", FEDAVG_CURVES, skip=(0.1,))
  _fabricate(tmp_path, preset, fedsgd, "fedsgd", FEDSGD_CURVES)
  cells = {r.cell.row: r for r in report.build_report(
      preset, str(tmp_path)).cells}
  pending = cells["FedAvg E=5 B=10"].ours
  assert pending.value is None and pending.status == results.MISSING
  assert "2 of 3 rates finished" in pending.detail
  # The missing rate diverges: the others decide.
  run = preset.run(fedavg.name)
  finished_run(str(tmp_path), run, {"fedavg": [(10, 0.5), (20, float("nan"))]},
               entries={"fedavg": {"status": "diverged"}})
  cells = {r.cell.row: r for r in report.build_report(
      preset, str(tmp_path)).cells}
  ours = cells["FedAvg E=5 B=10"].ours
  assert ours.choice.rate == 0.2154
  assert ours.choice.grid[1] == (0.1, None)


def test_grid_presets_are_registered_and_refuse_seeds():
  for table in ("table1", "table2", "table4", "table3"):
    one = presets.get_preset(f"mcmahan2017_{table}")
    grid = presets.get_preset(f"mcmahan2017_{table}_lr_grid")
    tuned = set(grid.lr_grids)
    assert tuned and all(len(v) == 13 for v in grid.lr_grids.values())
    # Every one-rate run is in the grid preset under its own name.
    assert {r.name for r in one.runs} <= {r.name for r in grid.runs}
    assert "one learning rate" not in " ".join(grid.notes)
    with pytest.raises(ValueError, match="--seeds=2"):
      seeds.expand(grid, 2)
  with pytest.raises(ValueError, match="no cell reads rounds"):
    lr_grid.expand(presets.get_preset("mcmahan2017_slides"))


def test_reproduce_goes_on_past_a_diverged_rate_of_a_grid_only(tmp_path):
  from experiments import reproduce_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.training import run_errors as errors  # pylint: disable=g-import-not-at-top
  digits = presets.get_preset("digits_claims")
  run = digits.run("digits_claims_rounds_iid")
  (cell,) = [c for t in digits.tables for c in t.cells
             if c.run == run.name and c.method == "fedavg"]
  one_rate = spec.Preset("grid_entry", "digits", "d", (run,), (spec.TableSpec(
      ("digits", "claim4"), "t", (cell.row,), (cell.column,), (cell,)),))
  grid = lr_grid.expand(one_rate, lr_grid.Grid(3, 1, 0))
  low = grid.lr_grids[run.name][0]
  ran, out = [], []

  def run_fn(flags):
    ran.append(flags["experiment_name"])
    if flags["experiment_name"] == low:
      raise errors.DivergenceError("fedavg", 3, ["loss nan"])

  outcome = reproduce_lib.reproduce(grid, str(tmp_path), {}, run_fn=run_fn,
                                    echo=out.append)
  assert outcome == {low: "diverged", run.name: "ran"} and ran == [low,
                                                                    run.name]
  assert any(reproduce_lib.GRID_DIVERGED in line for line in out)
  with pytest.raises(errors.DivergenceError):  # Not a grid: it stops.
    reproduce_lib.reproduce(one_rate, str(tmp_path / "one"), {},
                            run_fn=lambda f: run_fn(dict(
                                f, experiment_name=low)), echo=out.append)
