"""McMahan Table 2's Shakespeare LSTM rows, Figures 2 (LSTM panels) and 3:
the dry run lists the runs with their settings and sources; the report puts
ours beside the published cells, whose speedups agree with their rounds and
with §3's "95x speedup vs 13x"."""

import numpy as np
import pytest

from experiments import reproduce_lib
from federated_vision.reproduction import presets
from federated_vision.reproduction import published
from federated_vision.reproduction import report
from federated_vision.reproduction import report_text
from federated_vision.reproduction.presets import mcmahan2017_shakespeare as lstm
from tests.fixtures.reproduction_helpers import finished_run
from tests.fixtures.reproduction_helpers import listing_runs
from tests.fixtures.reproduction_helpers import listing_settings


def _lstm_cells():
  return {k[2:]: v for k, v in published.PUBLISHED.items()
          if k[:2] == ("mcmahan2017", "table2_lstm")}


def test_table2_lstm_transcription_agrees_with_its_speedups_and_the_text():
  cells = _lstm_cells()
  assert len(cells) == 12
  for row in published.MCMAHAN_LSTM_ROWS[1:]:
    for column in published.MCMAHAN_EB_COLUMNS:
      printed = float(cells[row, column].text.split("(")[1].rstrip("x)"))
      fedsgd = cells[published.MCMAHAN_LSTM_ROWS[0], column].value
      assert round(fedsgd / cells[row, column].value, 1) == printed
  # §3: "(a 95x speedup vs 13x for the balanced IID data)".
  last = published.MCMAHAN_LSTM_ROWS[-1]
  assert round(3906 / cells[last, "non-IID"].value) == 95
  assert round(2488 / cells[last, "IID"].value) == 13


def test_table2_dry_run_lists_the_shakespeare_runs_with_settings():
  out = []
  reproduce_lib.reproduce("mcmahan2017_table2", "/r", {}, dry_run=True,
                          echo=out.append)
  lines = "\n".join(out).splitlines()
  text = " ".join("\n".join(lines).split())
  assert "out of scope" not in text
  listed = listing_runs(lines)
  base = listing_settings(listed["base"])
  for partition in ("iid", "role"):
    for (e, b) in lstm.EB_ROWS:
      name = (f"shakespeare_lstm_{partition}_C0.1_E{e}_"
              f"B{'inf' if b is None else b}")
      shown = dict(base, **listing_settings(listed[name]))
      assert (shown["dataset"], shown["model"], shown["shakespeare_split"],
              shown["client_fraction"], shown["target_accuracy"]) == (
                  "shakespeare", "char_lstm", partition, "0.1", "0.54")
      assert shown["algorithm"] == ("fedsgd" if b is None and e == 1
                                    else "fedavg")
      if shown["algorithm"] == "fedavg":
        assert (shown["client_epochs"], shown["client_batch_size"]) == (
            str(e), "0" if b is None else str(b))
  assert "with a fixed learning rate η = 1.47" in text
  assert "each speaking role in each play with at least two lines" in text
  preset = presets.get_preset("mcmahan2017_table2")
  assert not preset.unsourced()
  assert {f.key for f in preset.figures} >= {"figure2_lstm"}


def test_figure3_runs_large_e_at_the_captions_settings():
  preset = presets.get_preset("mcmahan2017_figure3")
  assert not preset.unsourced()
  table2 = {r.name for r in presets.get_preset("mcmahan2017_table2").runs}
  got = {}
  for run in preset.runs:
    f = run.flags
    assert (f["shakespeare_split"], f["client_batch_size"],
            f["client_fraction"], f["client_learning_rate"]) == (
                "role", 10, 0.1, 1.47)  # The caption's.
    got[f["client_epochs"]] = (run.name in table2, f["total_rounds"])
  assert got == {1: (True, 5000), 5: (True, 5000), 10: (False, 1000),
                 20: (False, 1000), 50: (False, 1000)}
  (figure,) = preset.figures
  assert "with a fixed learning rate η = 1.47" in figure.source


def test_table2_lstm_report_puts_ours_beside_the_paper(tmp_path):
  preset = presets.get_preset("mcmahan2017_table2")
  rounds = np.array([100., 200, 300, 400])
  curves = {"role": ((0.40, 0.50, 0.53, 0.56), (0.50, 0.55, 0.56, 0.57)),
            "iid": ((0.40, 0.45, 0.50, 0.55), (0.45, 0.52, 0.56, 0.58))}
  for partition, (sgd, avg) in curves.items():
    finished_run(str(tmp_path), lstm.shakespeare_run(partition, 1, None),
                 {"fedsgd": list(zip(rounds.astype(int), sgd))})
    finished_run(str(tmp_path), lstm.shakespeare_run(partition, 5, 10),
                 {"fedavg": list(zip(rounds.astype(int), avg))})
  rep = report.build_report(preset, str(tmp_path))
  cells = {(r.cell.row, r.cell.column): r for r in rep.cells
           if r.cell.run.startswith("shakespeare_lstm")}
  assert len(cells) == 12

  def crossing(accs):
    i = int(np.argmax(np.asarray(accs) >= lstm.TARGET))
    return rounds[i - 1] + (lstm.TARGET - accs[i - 1]) / (
        accs[i] - accs[i - 1]) * 100

  for column, partition in lstm.PARTITIONS.items():
    sgd, avg = curves[partition]
    cell = cells["FedAvg E=5 B=10", column]
    assert cell.ours.value == pytest.approx(crossing(avg))
    assert cell.speedup.value == pytest.approx(crossing(sgd) / crossing(avg))
  assert cells["FedAvg E=5 B=10", "non-IID"].paper.text == "41 (95.3x)"
  assert cells["FedSGD E=1 B=∞", "IID"].paper.value == 2488
  assert cells["FedAvg E=1 B=50", "IID"].ours.value is None  # Not run.
  markdown = report_text.format_markdown(rep)
  assert "41 (95.3×)" in markdown and "SHAKESPEARE LSTM, 54% ACCURACY" in \
      markdown
