"""McMahan et al. 2017's CIFAR-10 presets (Table 3, Figures 4, 9), the
slides' runs, and the SGD baseline counted in minibatch updates.

Table 3's dry run lists the SGD, FedSGD and FedAvg runs with the paper's
settings and sources; its report (on fabricated finished runs) puts ours
beside the published numbers, SGD in minibatch updates read from the
centralized run's per-epoch curve (checked against numpy here).
"""

import json
import os

import numpy as np
import pytest

from experiments import reproduce_lib
from federated_vision import centralized
from federated_vision.evaluation import reporting
from federated_vision.reproduction import presets
from federated_vision.reproduction import published
from federated_vision.reproduction import report
from federated_vision.reproduction import report_text
from tests.fixtures.reproduction_helpers import finished_run
from tests.fixtures.reproduction_helpers import listing_runs
from tests.fixtures.reproduction_helpers import listing_settings


def test_minibatch_updates_per_epoch():
  assert centralized.minibatch_updates(50_000, 100, 3) == [500, 1000, 1500]
  assert centralized.minibatch_updates(1001, 100, 2) == [11, 22]  # ceil.
  assert centralized.minibatch_updates(7, 10, 0) == []
  for bad in ((0, 10, 1), (10, 0, 1), (10, 10, -1)):
    with pytest.raises(ValueError, match="minibatch_updates"):
      centralized.minibatch_updates(*bad)


def _dry_run(name):
  out = []
  reproduce_lib.reproduce(name, "/r", {}, dry_run=True, echo=out.append)
  return "\n".join(out).splitlines()


def test_table3_dry_run_lists_sgd_fedsgd_fedavg_with_settings_and_sources():
  lines = _dry_run("mcmahan2017_table3")
  listed = listing_runs(lines)
  base = listing_settings(listed["base"])
  assert (base["dataset"], base["partition"], base["num_clients"],
          base["examples_per_client"], base["model"]) == (
              "cifar10", "iid", "100", "500", "cifar_cnn")

  def shown(run):
    return dict(base, **listing_settings(listed[run]))
  sgd = shown("cifar10_mcmahan_sgd_b100")
  assert (sgd["client_batch_size"], sgd["centralized_epochs"]) == ("100",
                                                                   "400")
  assert any(line.startswith("  centralized cifar10_mcmahan_sgd_b100:")
             for line in lines)
  fedsgd = shown("cifar10_mcmahan_fedsgd_C0.1")
  assert (fedsgd["algorithm"], fedsgd["client_fraction"]) == ("fedsgd", "0.1")
  fedavg = shown("cifar10_mcmahan_fedavg_C0.1_E5_B50")
  assert (fedavg["algorithm"], fedavg["client_fraction"],
          fedavg["client_epochs"], fedavg["client_batch_size"]) == (
              "fedavg", "0.1", "5", "50")
  text = "\n".join(lines[lines.index(reproduce_lib.SOURCES_HEADER):])
  flat = " ".join(text.split())
  assert "SGD used a minibatch size of 100. FedSGD and FedAvg used C = 0.1, " \
         "with FedAvg using E = 5 and B = 50." in flat
  assert "partitioned into 100 clients each containing 500 training" in flat
  # The paper's decay per round, in the runs and said with its source.
  assert "FedSGD --client_learning_rate_decay=0.9934, FedAvg " \
         "--client_learning_rate_decay=0.99 (eta_t" in flat
  assert (fedsgd["client_learning_rate_decay"],
          fedavg["client_learning_rate_decay"]) == ("0.9934", "0.99")
  assert "FedSGD uses a learning-rate decay of 0.9934 per round" in flat
  preset = presets.get_preset("mcmahan2017_table3")
  assert not preset.unsourced()


def _sgd_run(root, run, curve):
  """A finished SGD baseline: its per-epoch accuracies at 500 updates each."""
  run_dir = finished_run(str(root), run, {"fedavg": [(1, 0.1)]})
  path = os.path.join(run_dir, "summary.json")
  with open(path) as f:
    summary = json.load(f)
  summary["centralized"] = {
      "status": "completed", "accuracy": curve[-1], "loss": 0.5,
      "epochs": len(curve), "history": list(curve),
      "minibatch_updates": centralized.minibatch_updates(50_000, 100,
                                                        len(curve))}
  reporting.write_json(path, summary)


def _interpolated(xs, accs, target):
  best = np.maximum.accumulate(accs)
  i = int(np.argmax(best >= target))
  return xs[i - 1] + (target - best[i - 1]) / (best[i] - best[i - 1]) * (
      xs[i] - xs[i - 1])


def test_table3_report_puts_sgd_updates_and_rounds_beside_the_paper(tmp_path):
  preset = presets.get_preset("mcmahan2017_table3")
  sgd, fedsgd, fedavg = preset.runs
  # SGD: 80 epochs (40,000 updates), rising to 86% and dipping once.
  sgd_curve = np.minimum(0.3 + 0.6 * (1 - np.exp(-np.arange(1, 81) / 15)),
                         0.86)
  sgd_curve[40] = 0.5
  _sgd_run(tmp_path, sgd, sgd_curve)
  finished_run(str(tmp_path), fedsgd, {"fedsgd": [
      (1000, 0.7), (2000, 0.78), (3000, 0.805), (4000, 0.815), (5000, 0.83)]})
  finished_run(str(tmp_path), fedavg, {"fedavg": [
      (100, 0.7), (200, 0.79), (300, 0.81), (400, 0.83), (500, 0.86)]})
  rep = report.build_report(preset, str(tmp_path))
  cells = {(r.cell.row, r.cell.column): r for r in rep.cells}
  updates = 500.0 * np.arange(1, 81)
  for column, target in zip(published.MCMAHAN_TABLE3_COLUMNS,
                            published.MCMAHAN_TABLE3_TARGETS):
    sgd_updates = _interpolated(updates, sgd_curve, target)
    assert cells["SGD", column].ours.value == pytest.approx(sgd_updates)
    fedavg_rounds = _interpolated(np.array([100., 200, 300, 400, 500]),
                                  np.array([0.7, 0.79, 0.81, 0.83, 0.86]),
                                  target)
    cell = cells["FedAvg", column]
    assert cell.ours.value == pytest.approx(fedavg_rounds)
    assert cell.speedup.value == pytest.approx(sgd_updates / fedavg_rounds)
  assert cells["FedSGD", "85%"].ours.status == report.NOT_REACHED
  assert cells["FedSGD", "85%"].paper.text == "N/A"
  assert cells["FedAvg", "80%"].paper.text == "280 (64.3x)"
  # The paper's speedup from its own rounds, per target: 18000 / 280.
  assert cells["FedAvg", "80%"].paper_speedup == pytest.approx(18000 / 280)
  assert cells["FedSGD", "82%"].paper_speedup == pytest.approx(31000 / 6600)
  assert cells["SGD", "85%"].paper.value == 99000
  markdown = report_text.format_markdown(rep)
  assert "280 (64.3×)" in markdown
  assert "Published numbers read in: a Markdown transcription of McMahan " \
         "et al.'s AISTATS 2017 / arXiv 1602.05629 text" in markdown
  rows = report_text.csv_rows(rep)
  assert len(rows) == 9 and all("AISTATS 2017" in r["paper_via"]
                                for r in rows)


def test_an_sgd_run_without_minibatch_updates_is_not_read(tmp_path):
  preset = presets.get_preset("mcmahan2017_table3")
  sgd = preset.runs[0]
  finished_run(str(tmp_path), sgd, {"fedavg": [(1, 0.1)]}, centralized=0.86)
  rep = report.build_report(preset, str(tmp_path))
  cell = [r for r in rep.cells if r.cell.row == "SGD"][0]
  assert cell.ours.value is None and cell.ours.status == report.UNAVAILABLE
  assert "minibatch_updates" in cell.ours.detail


def test_slides_preset_runs_the_slides_settings_beside_their_accuracies():
  preset = presets.get_preset("mcmahan2017_slides")
  assert len(preset.runs) == 4 and not preset.unsourced()
  for run in preset.runs:
    f = run.flags
    assert (f["model"], f["client_learning_rate"], f["client_batch_size"],
            f["client_fraction"]) == ("mnist_2nn", 0.01, 10, 0.1)
  by_cell = {(c.row, c.column): preset.run(c.run).flags
             for c in preset.tables[0].cells}
  assert {k: (v["client_epochs"], v["partition"]) for k, v in
          by_cell.items()} == {("E = 1", "IID"): (1, "iid"),
                               ("E = 1", "non-IID"): (1, "shards"),
                               ("E = 5", "IID"): (5, "iid"),
                               ("E = 5", "non-IID"): (5, "shards")}
  printed = {k[2:]: v.value for k, v in published.PUBLISHED.items()
             if k[0] == "mcmahan2017_slides"}
  assert printed == {("E = 1", "IID"): 97.72, ("E = 1", "non-IID"): 95.82,
                     ("E = 5", "IID"): 97.97, ("E = 5", "non-IID"): 95.31}


def test_table3_transcription_agrees_with_the_papers_text():
  """§3: "We achieved an 86% test accuracy after 197,500 minibatch updates"
  (SGD) and "FedAvg achieves a similar test accuracy of 85% after only 2,000
  communication rounds"; the speedups are SGD's rounds over each cell's."""
  cell = {k[2:]: v for k, v in published.PUBLISHED.items()
          if k[:2] == ("mcmahan2017", "table3")}
  assert cell[("FedAvg", "85%")].value == 2000
  assert cell[("SGD", "85%")].value < 197_500  # 85% before 86%.
  for row in ("FedSGD", "FedAvg"):
    for column in published.MCMAHAN_TABLE3_COLUMNS:
      v = cell[(row, column)]
      if v.value is None:
        assert v.text == "N/A"
        continue
      printed = float(v.text.split("(")[1].rstrip("x)"))
      assert round(cell[("SGD", column)].value / v.value, 1) == printed
