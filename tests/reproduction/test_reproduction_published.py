"""The published numbers: sources present, internally consistent, and each in
a cell of some preset table (no orphan numbers)."""

import re

from federated_vision.reproduction import presets
from federated_vision.reproduction import published
from federated_vision.reproduction import report
from federated_vision.reproduction import report_text


def _cell_keys():
  keys = set()
  for name in presets.preset_names():
    for t in presets.get_preset(name).tables:
      keys.update(t.key + (c.row, c.column) for c in t.cells)
  return keys


def test_every_published_number_has_a_source_and_a_cell():
  keys = _cell_keys()
  assert set(published.PUBLISHED) <= keys
  assert set(published.UNVERIFIED) <= keys
  assert not set(published.PUBLISHED) & set(published.UNVERIFIED)
  for key, v in published.PUBLISHED.items():
    assert key[0] in published.PAPERS
    assert v.quote and v.via and v.text, key
    assert v.unit in ("%", "rounds", "count", "")
    if v.unit in ("count", ""):  # Hsu 2020 Table 1's data columns.
      assert key[:2] == ("hsu2020", "table1"), key
      assert v.value == (float(v.text.replace(",", ""))
                         if v.text.replace(",", "").isdigit() else None), key
    elif v.value is None:  # McMahan's "—" (Table 3's "N/A"); Hsu 2020
      # Table 5's "50k" / "20k".
      if key[:2] == ("mcmahan2017", "table3"):
        assert v.text == "N/A", key
      else:
        assert v.text == "—" or v.text == f"{v.not_reached_within // 1000}k"
    else:
      assert float(v.text.split()[0].rstrip("%")) == v.value
  # McMahan 20 + 20 + 18, Hsu 2019 2, Hsu 2020 Tables 1-5: 5 x 5 + (48 + 1)
  # + (24 + 1) + (72 + 2) + 24 (each + its printed "Centralized" row);
  # McMahan Table 3 (3 x 3) and the slides' runs (4); McMahan Table 2's
  # Shakespeare LSTM rows (6 x 2, issue 34).
  assert len(published.PUBLISHED) == (20 + 20 + 18 + 2 + 25 + 49 + 25 + 74
                                      + 24 + 9 + 4 + 12)


def test_mcmahan_printed_speedups_agree_with_printed_rounds():
  checked = 0
  for (paper, table, row, column), v in published.PUBLISHED.items():
    m = re.fullmatch(r"(\d+) \((\d+\.\d)x\)", v.text)
    if paper != "mcmahan2017" or m is None:
      continue
    rows = (published.MCMAHAN_C_ROWS if table.startswith("table1") else
            published.MCMAHAN_TABLE3_ROWS if table == "table3" else
            published.MCMAHAN_LSTM_ROWS if table == "table2_lstm" else
            published.MCMAHAN_EB_ROWS)
    ref = published.PUBLISHED[(paper, table, rows[0], column)].value
    ratio = round(ref / float(m.group(1)), 1)
    if (paper, table, row, column) in published.INCONSISTENT_SPEEDUPS:
      assert ratio != float(m.group(2))
    else:
      assert ratio == float(m.group(2)), (table, row, column, v.text)
      checked += 1
  # Table 3: FedSGD 80 / 82 %, FedAvg 80 / 82 / 85 % over SGD; Table 2's
  # LSTM rows: 5 FedAvg rows x 2 (issue 34).
  assert checked == 12 + 14 + 16 + 5 + 10


def test_known_values():
  cnn = published.PUBLISHED[("mcmahan2017", "table2_cnn", "FedAvg E=20 B=10",
                             "non-IID")]
  assert (cnn.value, cnn.text) == (173.0, "173 (2.8x)")
  assert published.PUBLISHED[("mcmahan2017", "table1_2nn", "C = 0.5",
                              "IID, B = ∞")].value is None
  hsu = published.PUBLISHED[("hsu2019", "cifar10_alpha",
                             "C = 0.05, E = 1, α = 0", "FedAvgM")]
  assert hsu.value == 76.9 and "from 30.1% to 76.9%" in hsu.quote
  # The comparison's cells run at C = 0.05 (5 of 100 clients), E = 1.
  p = presets.get_preset("hsu2019_cifar10_alpha")
  (table,) = p.tables
  keyed = [c for c in table.cells
           if table.key + (c.row, c.column) in published.PUBLISHED]
  assert [c.column for c in keyed] == ["FedAvg", "FedAvgM"]
  for cell in keyed:
    flags = p.run(cell.run).flags
    assert (flags["clients_per_round"], flags["client_epochs"],
            flags["alpha"]) == (5, 1, 0.0)
  cifar = published.PUBLISHED[("hsu2020", "table1", "CIFAR-100",
                                "Centralized Accuracy")]
  assert (cifar.value, cifar.text, cifar.unit) == (55.21, "55.21%", "%")


def test_hsu2020_table1_cells_show_the_printed_numbers(tmp_path):
  # Read in the paper's text now (they were issue 12's unverified quotes).
  assert not published.UNVERIFIED
  rep = report.build_report(presets.get_preset("hsu2020_table1"), str(tmp_path))
  md = report_text.format_markdown(rep)
  assert ("| iNaturalist-User-120k | not run / 9,275 | — / ✓ | not run / "
          "1,203 | not run / 120,300 | not run / 57.90% |") in md
  assert ("| CIFAR-100 | not run / 100 | — / ✗ | not run / 100 | not run / "
          "50,000 | not run / 55.21% |") in md
  assert all(c.difference is None for c in rep.cells)
