"""Hsu, Qi & Brown 2020 Tables 1-5: presets, published numbers and report.

Issue 20, checks 1 and 2 (Hsu 2020 part):
  * every setting of every Table 1-5 preset has a source (a quote of the
    paper with its section, or "ours: <reason>"), and the key ones are the
    paper's (§6.5: client learning rate 0.01, B = 64 / 32);
  * each preset trains exactly the methods its table shows;
  * the package's published numbers equal the paper's tables as printed
    (copied verbatim below from the paper's text and parsed here), every
    preset cell finds exactly one, in its unit;
  * the report with no results prints every cell "not run / <paper>",
    Table 5's ratios recomputed from the rounds, "50k" / "20k" as not reached.
"""

import pytest

from experiments import reproduce_lib
from federated_vision.reproduction import presets
from federated_vision.reproduction import published
from federated_vision.reproduction import published_hsu2020
from federated_vision.reproduction import report
from federated_vision.reproduction import report_text
from federated_vision.reproduction import spec

# The paper's printed table rows, verbatim from its text (Table 1's rows
# without the "Synthetic" / "Real-World" group lines; Tables 2-5 as printed,
# including the extraction's trailing '|' cells).
T1_PRINTED = """\
CIFAR-10 | 100 | ✗ | 10 | 50,000 | 86.16% | |||||
CIFAR-100 | 100 | ✗ | 100 | 50,000 | 55.21% | |||||
iNaturalist Geo Splits | 11 to 3606 | ✓ | 1,203 | 120,300 | 57.90% | |||||
iNaturalist-User-120k | 9,275 | ✓ | 1,203 | 120,300 | 57.90% | |||||
Landmarks-User-160k | 1,262 | ✓ | 2,028 | 164,172 | 67.05% |
"""

T2_PRINTED = """\
Geo-3k | FedAvg | ✗ | 10 | 47.0 | 47.9 | 48.7 | 37.8 | 44.4 | 46.5 |
FedAvgM | ✗ | 10 | 47.2 | 50.4 | 45.0 | 42.5 | 47.1 | 44.9 | |
FedAvg | ✓ | 10 | 37.4 | 46.2 | 52.8 | 46.2 | 53.1 | 55.5 | |
FedAvgM | ✓ | 10 | 49.7 | 54.8 | 56.7 | 54.8 | 56.7 | 57.1 | |
User-120k | FedAvg | ✗ | 10 | 34.7 | 39.7 | 41.3 | 37.8 | 39.8 | 42.9 |
FedAvgM | ✗ | 10 | 31.9 | 39.2 | 41.3 | 32.3 | 41.6 | 43.4 | |
FedAvg | ✓ | 10 | 31.3 | 39.7 | 43.9 | 39.7 | 48.9 | 52.8 | |
FedAvgM | ✓ | 10 | 37.9 | 43.7 | 49.1 | 43.7 | 47.4 | 54.6 | |
Centralized | 57.9 |
"""

T3_PRINTED = """\
FedAvg | ✓ | ✗ | 10 | 31.3 | 39.7 | 43.9 |
FedAvg | ✓ | ✗ | 100 | 36.9 | 46.5 | 51.4 |
FedAvg | ✓ | ✓ | 10 | 30.1 | 41.3 | 47.5 |
FedAvg | ✓ | ✓ | 100 | 35.5 | 44.8 | 49.8 |
FedAvgM | ✓ | ✗ | 10 | 37.9 | 43.7 | 49.1 |
FedAvgM | ✓ | ✗ | 100 | 53.0 | 56.1 | 57.2 |
FedAvgM | ✓ | ✓ | 10 | 38.4 | 42.1 | 47.0 |
FedAvgM | ✓ | ✓ | 100 | 51.3 | 54.3 | 56.2 |
Centralized | 57.9 |
"""

T4_PRINTED = """\
FedAvg | ✗ | 10 | 4.2 | 14.6 | 24.6 | 18.2 | 38.1 | 49.7 |
FedAvg | ✗ | 50 | 4.5 | 16.5 | 26.0 | 20.9 | 42.0 | 53.3 |
FedAvg | ✗ | 100 | 4.9 | 16.5 | 26.3 | 21.9 | 42.3 | 53.4 |
FedAvg | ✓ | 10 | 6.3 | 17.4 | 26.6 | 19.6 | 38.5 | 51.7 |
FedAvg | ✓ | 50 | 7.4 | 19.7 | 28.8 | 26.0 | 45.2 | 55.0 |
FedAvg | ✓ | 100 | 7.2 | 20.1 | 29.0 | 26.5 | 45.7 | 55.2 |
FedAvgM | ✗ | 10 | 23.0 | 30.1 | 30.8 | 29.4 | 44.1 | 53.7 |
FedAvgM | ✗ | 50 | 29.9 | 36.4 | 38.6 | 55.2 | 62.0 | 64.8 |
FedAvgM | ✗ | 100 | 31.9 | 37.4 | 39.6 | 56.3 | 63.4 | 65.0 |
FedAvgM | ✓ | 10 | 26.5 | 32.1 | 31.3 | 27.9 | 45.1 | 53.5 |
FedAvgM | ✓ | 50 | 31.6 | 37.5 | 38.9 | 53.1 | 61.6 | 63.2 |
FedAvgM | ✓ | 100 | 33.7 | 38.3 | 39.8 | 57.7 | 64.1 | 65.9 |
Centralized | 40.27 | 67.05 |
"""

T5_PRINTED = """\
Geo-3k | FedAvg | pretrained | 10 | 165 (1.0) | 669 (4.1) | 4912 (29.8) |
FedAvg | pretrained | 100 | 165 (1.0) | 567 (3.4) | 3780 (22.9) | |
FedAvgM | pretrained | 10 | 79 (1.0) | 249 (3.2) | 1505 (19.1) | |
FedAvgM | pretrained | 100 | 60 (1.0) | 116 (1.9) | 420 (6.9) | |
FedAvg | scratch | 10 | 9005 (1.0) | 39236 (4.4) | 50k | |
FedAvg | scratch | 100 | 7793 (1.0) | 20k | 20k | |
FedAvgM | scratch | 10 | 1463 (1.0) | 5788 (4.0) | 50k | |
FedAvgM | scratch | 100 | 977 (1.0) | 3733 (3.8) | 20k |
"""

TABLES = ("table1", "table2", "table3", "table4", "table5")
# Table 1's columns (the ✓ / ✗ one is unnamed in the extraction's header).
T1_COLUMNS = ("Clients", "✓/✗ (name lost)", "Classes", "Examples",
              "Centralized Accuracy")
OURS = spec.OURS


def _cells(line):
  return [c.strip() for c in line.split("|") if c.strip()]


def _mark(text):
  return {"✓": True, "✗": False}[text]


def parse_printed():
  """{(table, row label, column label): printed text} from the rows above,
  labelled as the paper's columns are (the test's own labels)."""
  out = {}
  for line in T1_PRINTED.splitlines():
    c = _cells(line)
    assert len(c) == 6
    out.update({("table1", c[0], col): v for col, v in zip(T1_COLUMNS, c[1:])})
  rounds = ("Acc@Round 1k", "Acc@Round 2.5k", "Acc@Round 5k")
  batches = ("Acc@Batch 10k", "Acc@Batch 25k", "Acc@Batch 50k")
  data = None
  for line in T2_PRINTED.splitlines():
    c = _cells(line)
    if c[0] == "Centralized":
      out[("table2", "Centralized", rounds[0])] = c[1]
      continue
    if c[0] in ("Geo-3k", "User-120k"):
      data, c = c[0], c[1:]
    method, fedvc, clients, values = c[0], c[1], c[2], c[3:]
    assert len(values) == 6
    row = f"{data}, {method}, FedVC {fedvc}, C = {clients}"
    out.update({("table2", row, col): v
                for col, v in zip(rounds + batches, values)})
  for line in T3_PRINTED.splitlines():
    c = _cells(line)
    if c[0] == "Centralized":
      out[("table3", "Centralized", rounds[0])] = c[1]
      continue
    method, fedvc, fedir, clients, values = c[0], c[1], c[2], c[3], c[4:]
    assert len(values) == 3 and _mark(fedvc)
    row = f"{method}, FedVC {fedvc}, FedIR {fedir}, C = {clients}"
    out.update({("table3", row, col): v for col, v in zip(rounds, values)})
  layers = tuple(f"{m}, {r}" for m in ("Two layers", "All layers")
                 for r in rounds)
  for line in T4_PRINTED.splitlines():
    c = _cells(line)
    if c[0] == "Centralized":
      out[("table4", "Centralized", layers[0])] = c[1]
      out[("table4", "Centralized", layers[3])] = c[2]
      continue
    method, fedir, clients, values = c[0], c[1], c[2], c[3:]
    assert len(values) == 6
    row = f"{method}, FedIR {fedir}, C = {clients}"
    out.update({("table4", row, col): v for col, v in zip(layers, values)})
  columns = tuple(f"Rounds@{p}% relative accuracy" for p in (10, 50, 90))
  for line in T5_PRINTED.splitlines():
    c = _cells(line)
    if c[0] == "Geo-3k":
      c = c[1:]
    method, init, clients, values = c[0], c[1], c[2], c[3:]
    assert len(values) == 3
    row = f"Geo-3k, {method}, {init}, C = {clients}"
    out.update({("table5", row, col): v for col, v in zip(columns, values)})
  return out


PRINTED = parse_printed()


def _hsu2020_published():
  return {k[1:]: v for k, v in published.PUBLISHED.items()
          if k[0] == "hsu2020"}


def test_printed_tables_parse_to_every_cell():
  per_table = {t: sum(1 for k in PRINTED if k[0] == t) for t in TABLES}
  # Tables 2-4 with their printed "Centralized" row.
  assert per_table == {"table1": 5 * 5, "table2": 48 + 1, "table3": 24 + 1,
                       "table4": 72 + 2, "table5": 24}


def test_package_numbers_equal_the_printed_tables():
  pub = _hsu2020_published()
  assert set(pub) == set(PRINTED)
  for key, printed in PRINTED.items():
    v = pub[key]
    assert v.text == printed, key
    if key[0] == "table1" and key[2] != "Centralized Accuracy":
      number = printed.replace(",", "")
      assert v.value == (float(number) if number.isdigit() else None), key
      assert v.unit == ("" if key[2].startswith("✓/✗") else "count"), key
      assert v.not_reached_within is None
    elif printed.endswith("k"):  # Table 5: not reached within 50k / 20k rounds.
      assert v.value is None and v.not_reached_within == int(printed[:-1]) * 1000
      assert v.unit == "rounds"
    else:
      assert v.value == float(printed.split()[0].rstrip("%")), key
      assert v.not_reached_within is None
      assert v.unit == ("rounds" if key[0] == "table5" else "%")
    assert v.quote.endswith(f": {printed}") and v.via == published_hsu2020.VIA


def test_table5_printed_ratios_are_the_rounds_ratios():
  """'(k.k)' = rounds / rounds at 10 %, to one decimal, except the one
  inconsistent print (420 / 60 = 7.0, printed 6.9)."""
  checked = 0
  for (table, row, col), printed in PRINTED.items():
    if table != "table5" or "(" not in printed:
      continue
    rounds, ratio = printed.split()
    first = float(PRINTED[(table, row, "Rounds@10% relative accuracy")]
                  .split()[0])
    recomputed = round(float(rounds) / first, 1)
    if ("hsu2020", table, row, col) in published_hsu2020.INCONSISTENT_RATIOS:
      assert (recomputed, ratio) == (7.0, "(6.9)")
    else:
      assert f"({recomputed:.1f})" == ratio, (row, col)
      checked += 1
  assert checked == 19 - 1


@pytest.mark.parametrize("name, method_cells, centralized_cells", [
    ("hsu2020_table1", 0, 5 * 5), ("hsu2020_table2", 48, 1),
    ("hsu2020_table3", 24, 1), ("hsu2020_table4", 72, 2),
    ("hsu2020_table5", 24, 0)])
def test_every_preset_cell_has_exactly_one_published_value(
    name, method_cells, centralized_cells):
  p = presets.get_preset(name)
  (table,) = p.tables
  keys = [table.key + (c.row, c.column) for c in table.cells]
  assert len(keys) == len(set(keys)) == method_cells + centralized_cells
  assert sum(c.method is not None for c in table.cells) == method_cells
  for c, key in zip(table.cells, keys):
    v = published.PUBLISHED[key]
    assert v.unit == c.metric.unit, key
  # ... and no published number of this table without a cell.
  assert {k for k in published.PUBLISHED if k[:2] == table.key} == set(keys)


def test_each_preset_trains_exactly_its_tables_methods():
  for name in ("hsu2020_table2", "hsu2020_table3", "hsu2020_table4",
               "hsu2020_table5"):
    p = presets.get_preset(name)
    (table,) = p.tables
    shown = {(c.run, c.method) for c in table.cells if c.method}
    trained = {(r.name, m) for r in p.runs if r.kind == spec.FEDERATED
               for m in r.methods()}
    assert trained == shown, name
  t3 = presets.get_preset("hsu2020_table3")
  assert {m for r in t3.runs if r.kind == spec.FEDERATED
          for m in r.methods()} == {"fedavg+fedvc", "fedavg+fedir+fedvc",
                                    "fedavgm+fedvc@nesterov",
                                    "fedavgm+fedir+fedvc@nesterov"}


@pytest.mark.parametrize("name", [f"hsu2020_table{i}" for i in range(1, 6)])
def test_every_setting_has_its_source(name):
  p = presets.get_preset(name)
  settings = p.settings()
  assert p.unsourced() == ()
  assert set(p.sources) == set(settings)  # No source for an unset flag.
  listing = {flag: (values, p.sources[flag]) for flag, values in
             sorted(settings.items())}
  for flag, (values, source) in listing.items():
    for part in source.split(" | "):
      if part.startswith(OURS):
        assert len(part) > len(OURS) + 20, (flag, part)  # A reason.
      else:
        assert part.startswith("Hsu 2020 ") and '"' in part, (flag, part)
  real = [r for r in p.runs if r.flags["dataset"] in ("inaturalist",
                                                      "landmarks")]
  for run in real:
    f = run.flags
    assert f["client_learning_rate"] == 0.01
    assert f["client_batch_size"] == (32 if f["dataset"] == "landmarks"
                                      else 64)
    assert f["image_size"] == (224 if f["dataset"] == "landmarks" else 299)
    assert f["bottleneck_dim"] == (64 if f["dataset"] == "landmarks" else 0)
    methods = run.methods()
    # A setting only where a method uses it.
    assert ("server_momentum" in f) == any(
        m.startswith("fedavgm") for m in methods) or run.kind == spec.CENTRALIZED
    assert ("virtual_client_size" in f) == any("fedvc" in m for m in methods)
    assert ("fedir_target" in f) == any("fedir" in m for m in methods)
  if real:
    assert '"Unless otherwise stated, the client learning rate is 0.01' in (
        listing["client_learning_rate"][1])
    assert "32 for Landmarks-User-160k and 64 for others" in (
        listing["client_batch_size"][1])
    assert listing["client_epochs"][1].startswith(OURS + "§6.2")
    assert "extraction lost" in listing["client_epochs"][1]
  if "virtual_client_size" in listing:
    assert listing["virtual_client_size"][0] == (256,)
    assert listing["virtual_client_size"][1].startswith(OURS)
    assert "extraction lost" in listing["virtual_client_size"][1]
  if "server_momentum" in listing and name != "hsu2020_table1":
    assert listing["server_momentum"][1].startswith(OURS + "§6.5")


def test_table3_dry_run_shows_the_papers_settings_for_both_algorithms(tmp_path):
  lines = []
  reproduce_lib.reproduce("hsu2020_table3", str(tmp_path), {}, dry_run=True,
                          echo=lines.append)
  out = "\n".join(lines)
  assert "--client_learning_rate=0.01" in out
  assert "--client_batch_size=64" in out
  assert "--client_learning_rate=0.05" not in out
  assert "--methods=fedavg+fedvc,fedavg+fedir+fedvc" in out
  assert ("--methods=fedavgm+fedvc@nesterov,fedavgm+fedir+fedvc@nesterov"
          in out)
  for algorithm in ("fedavg", "fedavgm"):
    for clients in (10, 100):
      assert f"inat_user_120k_{algorithm}_c{clients}_" in out
  assert "fedavgm+fedir " not in out and "fedavgm+fedir," not in out
  assert "fedavgm+fedvc," not in out  # FedAvgM is Nesterov's everywhere.
  assert not tmp_path.joinpath("inat_user_120k_fedavg_c10_fedvc_fedir_off_on_"
                               "r5000").exists()


def _grid(markdown, title):
  lines = markdown.splitlines()
  i = lines.index(f"## {title}")
  rows = [l for l in lines[i + 1:] if l.startswith("| ")]
  header = [c.strip() for c in rows[0].strip("|").split("|")][1:]
  out = {}
  for line in rows[1:]:
    cells = [c.strip() for c in line.strip("|").split(" | ")]
    if cells[0] in {r for r in presets.get_preset(
        "hsu2020_table" + title.split()[1].rstrip(":")).tables[0].rows}:
      out.update({(cells[0], col): t for col, t in zip(header, cells[1:])})
    if len(out) and cells[0] == "Centralized":
      break
  return out


@pytest.mark.parametrize("name, count", [
    ("hsu2020_table1", 5 * 5), ("hsu2020_table2", 48 + 1),
    ("hsu2020_table3", 24 + 1), ("hsu2020_table4", 72 + 2),
    ("hsu2020_table5", 24)])
def test_report_without_results_prints_every_published_cell(
    name, count, tmp_path):
  p = presets.get_preset(name)
  (table,) = p.tables
  md = report_text.format_markdown(report.build_report(p, str(tmp_path)))
  cells = _grid(md, table.title)
  filled = {k: t for k, t in cells.items() if t}
  assert len(filled) == count
  for (row, col), text in filled.items():
    printed = PRINTED[(table.key[1], row, col)]
    ours, paper = text.split(" / ", 1)
    assert ours == ("—" if col.startswith("✓/✗") else "not run")
    if not printed.endswith("k"):  # Table 5's "50k": not reached (below).
      assert paper == printed + (" ‡" if (row, col) == T5_INCONSISTENT else "")
  assert "not transcribed" not in md
  assert "(Δ +" not in md and "(Δ -" not in md  # No difference without ours.


T5_INCONSISTENT = ("Geo-3k, FedAvgM, pretrained, C = 100",
                   "Rounds@90% relative accuracy")


def test_report_groups_table1_as_the_paper(tmp_path):
  p = presets.get_preset("hsu2020_table1")
  md = report_text.format_markdown(report.build_report(p, str(tmp_path)))
  lines = md.splitlines()
  header = next(l for l in lines if l.startswith("| | Clients"))
  assert header == ("| | Clients | ✓/✗ (name lost) | Classes | Examples | "
                    "Centralized Accuracy |")
  i = lines.index(header)
  assert [l.split(" | ")[0] for l in lines[i + 2:i + 9]] == [
      "| **Synthetic**", "| CIFAR-10", "| CIFAR-100", "| **Real-World**",
      "| iNaturalist Geo Splits", "| iNaturalist-User-120k",
      "| Landmarks-User-160k"]


def test_table5_report_prints_the_paper_and_notes_its_one_bad_ratio(
    tmp_path):
  p = presets.get_preset("hsu2020_table5")
  md = report_text.format_markdown(report.build_report(p, str(tmp_path)))
  cells = _grid(md, p.tables[0].title)
  col = "Rounds@{}% relative accuracy".format
  for (row, column), text in cells.items():
    printed = PRINTED[("table5", row, column)]
    paper = text.split(" / ", 1)[1]
    if printed.endswith("k"):
      assert paper == f"not reached within {printed} rounds"
      continue
    rounds = float(printed.split()[0])
    first = float(PRINTED[("table5", row, col(10))].split()[0])
    if (row, column) != T5_INCONSISTENT:  # Printed = recomputed.
      assert paper == printed == f"{rounds:.0f} ({rounds / first:.1f})"
  # The one printed ratio that disagrees with its rounds: as printed, marked,
  # and the ratio of its rounds in a note (as McMahan Table 1's speedup).
  assert cells[T5_INCONSISTENT] == "not run / 420 (6.9) ‡"
  assert ("- ‡ (Geo-3k, FedAvgM, pretrained, C = 100, Rounds@90% relative "
          "accuracy): the paper prints \"420 (6.9)\"; its printed rounds give "
          "420 / 60 = 7.0 (its rounds over its Rounds@10% relative accuracy "
          "rounds); ours are recomputed from rounds.") in md
  assert cells[("Geo-3k, FedAvg, scratch, C = 100", col(50))] == (
      "not run / not reached within 20k rounds")


def test_report_lists_every_setting_with_its_source(tmp_path):
  """The report ends with each setting of the preset and where it comes
  from, so a reader sees which values are the paper's and which are ours."""
  p = presets.get_preset("hsu2020_table3")
  md = report_text.format_markdown(report.build_report(p, str(tmp_path)))
  section = md.split("## Settings and their sources\n\n", 1)[1]
  lines = section.strip().splitlines()
  assert len(lines) == len(p.settings())
  assert ("- `--client_learning_rate` = 0.01: Hsu 2020 §6.5: \"Unless "
          "otherwise stated, the client learning rate is 0.01") in section
  assert "- `--client_batch_size` = 64: Hsu 2020 §6.5:" in section
  assert "- `--virtual_client_size` = 256: ours: " in section
  assert "no source" not in section
