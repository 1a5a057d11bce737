"""The papers' figures: `reproduce --report_only` draws them from finished runs.

Issue 35, checks 1-3: a results root of hand-made finished runs (as the
report tests write them) for Hsu 2020 Figure 4 and Figure 6, McMahan Figure
2 (and 6) and Augenstein Figure 1; each figure's CSV equals values computed
here from the runs' metrics.csv / summary.json, its PNG exists and is
linked under its table; with a run removed the figure is drawn from the
rest and says which run is missing; two reports give byte-identical PNGs.
"""

import csv
import json
import os
import shutil

import numpy as np
import pytest

from experiments import reproduce_lib
from federated_vision.reproduction import figure_spec as fs
from federated_vision.reproduction import presets
from federated_vision.reproduction import published
from federated_vision.reproduction import spec
from federated_vision.training import run_errors
from tests.fixtures.reproduction_helpers import centralized_run
from tests.fixtures.reproduction_helpers import finished_run
from tests.fixtures.reproduction_helpers import write_hparams

# preset -> the figures of it this test checks.
CHECKED = {"hsu2020_figure4": ("figure4",), "hsu2020_table2": ("figure6",),
           "mcmahan2017_table2": ("figure2", "figure6"),
           "augenstein_figure1": ("figure1",)}
REMOVED = {"hsu2020_figure4": "cifar10_c5_e1_alpha_0",
           "hsu2020_table2": "inat_user_120k_fedavgm_c10_fedvc_off_on_r12500",
           "mcmahan2017_table2": "mnist_cnn_iid_C0.1_E5_B10",
           "augenstein_figure1": "celeba_mixing_parallel"}
ROUNDS = 12


def _write_runs(root) -> None:
  """Every run of the checked presets, finished, with its own numbers: a
  noisy rising test accuracy evaluated every 3 rounds, per-label
  accuracies, an EMD and (McMahan's --full_train_loss runs) a falling
  training-set loss."""
  rng = np.random.default_rng(35)
  runs = {r.name: r for name in CHECKED
          for r in presets.get_preset(name).runs}
  for run in runs.values():
    if run.kind == spec.CENTRALIZED:
      centralized_run(root, run, round(float(rng.uniform(0.6, 0.9)), 6))
      continue
    curves, entries, losses = {}, {}, {}
    for method in run.methods():
      accs = np.clip(np.cumsum(rng.uniform(-0.02, 0.1, ROUNDS)), 0, 1)
      curves[method] = [(r, round(float(accs[r - 1]), 6))
                        for r in range(3, ROUNDS + 1, 3)]
      entries[method] = {k: round(float(rng.uniform()), 6) for k in (
          "accuracy_smiling", "accuracy_unsmiling")}
      losses[method] = {r: round(float(2.0 / r + rng.uniform(0, 0.01)), 6)
                        for r, _ in curves[method]}
    finished_run(root, run, curves, entries,
                 emd=round(float(rng.uniform(0, 2)), 6),
                 full_train_loss=(losses if run.flags.get("full_train_loss")
                                  else None))


def _report(root, refused=()) -> None:
  """`--report_only` of every checked preset; those in `refused` exit 1
  (a cell of a run of another configuration) after writing the report."""
  for name in CHECKED:
    if name in refused:
      with pytest.raises(run_errors.RunError, match="marked mismatch"):
        reproduce_lib.reproduce(name, str(root), {}, report_only=True,
                                echo=lambda _: None)
    else:
      reproduce_lib.reproduce(name, str(root), {}, report_only=True,
                              echo=lambda _: None)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  out = tmp_path_factory.mktemp("figures")
  _write_runs(out)
  _report(out)
  return out


def _summary(root, run):
  with open(os.path.join(root, run, "summary.json")) as f:
    return json.load(f)


def _metrics(root, run, method):
  with open(os.path.join(root, run, method, "metrics.csv"), newline="") as f:
    return list(csv.DictReader(f))


def _expected(root, panel: fs.Panel, series: fs.Series):
  """The (x, y) points a series should draw, computed from the files."""
  if panel.kind == fs.CURVE:
    (run, method), = series.points
    rows = [r for r in _metrics(root, run, method) if r["test_accuracy"]]
    column = "test_accuracy" if panel.y == fs.TEST_ACCURACY else panel.y
    ys = np.array([float(r[column]) for r in rows])
    if panel.best_so_far:
      ys = np.maximum.accumulate(ys)
    scale = 100.0 if panel.y == fs.TEST_ACCURACY else 1.0
    return [(float(r[panel.x]), scale * y) for r, y in zip(rows, ys)]
  out = []
  for k, (run, method) in enumerate(series.points):
    summary = _summary(root, run)
    entry = summary["methods"][method]
    key = (series.metric.key if series.metric is not None
           else "final_accuracy")
    x = summary["emd"] if panel.x == fs.EMD_X else float(k)
    out.append((x, 100.0 * entry[key]))
  return out


def _csv(root, preset, key):
  with open(os.path.join(root, f"{preset}_{key}.csv"), newline="") as f:
    return list(csv.DictReader(f))


def _drawn(rows, panel, series):
  return [(float(r["x"]), float(r["y"])) for r in rows
          if r["kind"] == "point" and r["panel"] == panel.title
          and r["series"] == series.label and r["status"] == "ok"]


def test_each_figure_is_its_runs_numbers_linked_under_its_table(root):
  """Check 1: every drawn point equals the files' value; reference lines
  are the centralized runs' accuracies and the target; PNG and CSV are
  linked in the markdown under the figure's table."""
  for name, keys in CHECKED.items():
    preset = presets.get_preset(name)
    with open(os.path.join(root, f"{name}.md")) as f:
      markdown = f.read()
    for figure in preset.figures:
      if figure.key not in keys:
        continue
      rows = _csv(root, name, figure.key)
      assert all(r["status"] == "ok" for r in rows if r["kind"] != "paper")
      for panel in figure.panels:
        for series in panel.series:
          got, want = _drawn(rows, panel, series), _expected(root, panel,
                                                             series)
          assert len(got) == len(want) > 0, (figure.key, series.label)
          np.testing.assert_allclose(got, want, rtol=1e-12)
        for line in panel.lines:
          (row,) = [r for r in rows if r["kind"] == "reference"
                    and r["panel"] == panel.title and r["series"] == line.label]
          want = (100 * _summary(root, line.baseline)["centralized"]
                  ["accuracy"] if line.baseline else line.value)
          assert float(row["y"]) == pytest.approx(want, rel=1e-12)
      png = os.path.join(root, f"{name}_{figure.key}.png")
      assert os.path.getsize(png) > 10_000
      with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
      link = f"![{figure.title}]({name}_{figure.key}.png)"
      title = next(t.title for t in preset.tables if t.key == figure.table)
      assert markdown.index(f"## {title}") < markdown.index(link)
      assert f"[{name}_{figure.key}.csv]({name}_{figure.key}.csv)" in markdown
  # The layouts: Figure 4 per data set 4 report goals x FedAvg/FedAvgM, one
  # point per alpha; McMahan's curves monotone against the 99 % target.
  fig4 = presets.get_preset("hsu2020_figure4").figures[0]
  assert [p.title for p in fig4.panels] == ["CIFAR-10", "CIFAR-100"]
  assert [len(s.points) for p in fig4.panels for s in p.series] == [8] * 16
  fig2 = _csv(root, "mcmahan2017_table2", "figure2")
  assert {r["y"] for r in fig2 if r["kind"] == "reference"} == {"99.0"}
  curve = [float(r["y"]) for r in fig2 if r["series"] == "FedSGD E=1 B=∞"
           and r["panel"] == "IID" and r["kind"] == "point"]
  assert curve == sorted(curve) and len(curve) == ROUNDS // 3
  # The paper's Table 2 rounds to 99 % sit on its curves: (rounds, 99).
  paper = {(r["panel"], r["series"]): (float(r["x"]), float(r["y"]))
           for r in fig2 if r["kind"] == "paper"}
  assert len(paper) == 18 and paper["IID", "FedSGD E=1 B=∞"] == (626, 99)
  assert paper["non-IID", "FedAvg E=20 B=10"] == (
      published.PUBLISHED["mcmahan2017", "table2_cnn", "FedAvg E=20 B=10",
                          "non-IID"].value, 99)


def test_a_missing_run_is_named_and_the_rest_drawn(root, tmp_path):
  """Check 2: one run removed per preset (and a McMahan run recorded
  before --full_train_loss existed): each figure is drawn from the others,
  the CSV and the markdown name what is not drawn, and nothing else moves."""
  partial = tmp_path / "partial"
  shutil.copytree(root, partial)
  for run in REMOVED.values():
    shutil.rmtree(partial / run)
  old = presets.get_preset("mcmahan2017_table2").run(
      "mnist_cnn_shards_C0.1_E1_B10")
  write_hparams(str(partial / old.name), {
      k: v for k, v in old.flags.items() if k != "full_train_loss"})
  _report(partial, refused=("mcmahan2017_table2",))
  for name, keys in CHECKED.items():
    with open(partial / f"{name}.md") as f:
      markdown = f.read()
    for key in keys:
      before, after = _csv(root, name, key), _csv(partial, name, key)
      gone = {REMOVED[name]} | ({old.name} if name == "mcmahan2017_table2"
                                else set())
      assert ([r for r in before if r["run"] not in gone] ==
              [r for r in after if r["run"] not in gone]), key
      lacking = [r for r in after if r["status"] not in ("ok", "paper")]
      assert lacking and {r["run"] for r in lacking} == gone, key
      assert {r["status"] for r in lacking if r["run"] == REMOVED[name]} == {
          "missing"}
      section = markdown[markdown.index(f"({name}_{key}.png)"):]
      assert "- Not drawn" in section.split("###")[0]
      assert REMOVED[name] in section.split("###")[0]
      assert os.path.getsize(partial / f"{name}_{key}.png") > 10_000
  fig6 = _csv(partial, "mcmahan2017_table2", "figure6")
  (why,) = {r["detail"] for r in fig6 if r["run"] == old.name}
  assert "--full_train_loss" in why


def test_two_reports_give_byte_identical_pngs(root):
  """Check 3: a second report of the same results root writes the same
  bytes (no time or version in a PNG): McMahan's curves (with reference
  lines) and Augenstein's bars (the per-run figures: check 1's PNGs)."""
  names = ("mcmahan2017_table2", "augenstein_figure1")
  pngs = sorted(n for n in os.listdir(root) if n.endswith(".png")
                and n.startswith(names))
  first = {n: (root / n).read_bytes() for n in pngs}
  for name in names:
    reproduce_lib.reproduce(name, str(root), {}, report_only=True,
                            echo=lambda _: None)
  assert len(pngs) == 5  # + Table 2's Figure 2 LSTM panels (issue 34).
  for name in pngs:
    assert (root / name).read_bytes() == first[name], name


def _run(name="r", methods=("fedavg",), kind=spec.FEDERATED):
  flags = {"algorithm": methods, "alpha": 1.0}
  if kind == spec.CENTRALIZED:
    flags["centralized_epochs"] = 1
  return spec.Run(name, flags, kind)


@pytest.mark.parametrize("build, words", [
    (lambda: fs.Panel("p", fs.CURVE, (fs.Series("s", (("r", "fedavg"),
                                                      ("q", "fedavg"))),)),
     "a curve series reads one"),
    (lambda: fs.Panel("p", fs.CURVE, (fs.curve("s", "r", "fedavg"),),
                      y=fs.RELATIVE_ACCURACY), "names its baseline run"),
    (lambda: fs.Panel("p", fs.BARS, (fs.Series("s", (("r", "fedavg"),)),),
                      categories=("a", "b")), "one (run, method) per"),
    (lambda: fs.Panel("p", fs.PER_RUN, (fs.Series("s", (("r", "fedavg"),)),)),
     "needs an x"),
    (lambda: fs.Panel("p", fs.PER_RUN, (fs.Series("s", (("r", "fedavg"),)),),
                      x=fs.EMD_X, paper=(fs.PaperValue("t", 0, 1, "1",
                                                       "x"),)),
     "names no series"),
    (lambda: fs.FigureSpec("Fig 1", "t", "src", ()), "[a-z0-9_]+"),
])
def test_a_bad_declaration_is_refused_naming_what(build, words):
  with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(
      ")", r"\)").replace("[", r"\[").replace("+", r"\+").replace(
          "]", r"\]")):
    build()


@pytest.mark.parametrize("series, words", [
    (fs.curve("s", "nope", "fedavg"), "unknown runs"),
    (fs.curve("s", "r", "fedprox"), "has no method 'fedprox'"),
])
def test_a_preset_refuses_a_figure_of_runs_it_lacks(series, words):
  figure = fs.FigureSpec("f", "t", "ours: a test figure of two runs",
                         (fs.Panel("p", fs.CURVE, (series,)),))
  with pytest.raises(ValueError, match=f"preset x: figure f.*{words}"):
    spec.Preset("x", "digits", "d", (_run(),), figures=(figure,))
