"""`--seeds=N` (issue 28, check 4): the interval arithmetic on recorded
values (t quantiles against a printed table written here), the repetitions'
names and seeds, and a tiny preset run with --seeds=3 whose report cells are
recomputed from the three metrics.csv files."""

import csv
import dataclasses
import json
import math
import os

import numpy as np
import pytest

from federated_vision.experiment import config as config_lib
from experiments import repeat
from experiments import reproduce_lib
from federated_vision.reproduction import intervals
from federated_vision.reproduction import presets
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.reproduction import spec
from federated_vision.reproduction import spread as spread_lib

# t_{0.975, df} as printed in standard tables (e.g. NIST/SEMATECH
# e-Handbook of Statistical Methods, table 1.3.6.7.2, 3 decimals).
T975_2 = 4.302652730  # t_{0.975, 2}, scipy.stats.t.ppf(0.975, 2).
PRINTED_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447,
                7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228, 15: 2.131,
                20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000,
                100: 1.984}


def test_t_quantiles_match_the_printed_table():
  for df, printed in PRINTED_T975.items():
    assert round(intervals.t_quantile_975(df), 3) == printed, df
  # Table and expansion agree where they meet, and tend to z = 1.96.
  assert intervals.t_quantile_975(31) < intervals.t_quantile_975(30)
  assert intervals.t_quantile_975(10**6) == pytest.approx(1.959964, abs=1e-5)
  for bad in (0, -1, 2.5, True):
    with pytest.raises(ValueError, match="degrees of freedom"):
      intervals.t_quantile_975(bad)


def test_t_interval_on_recorded_values():
  # Final accuracies (%) of three seeds: mean 60, s = 2, n = 3.
  iv = intervals.t_interval([58.0, 60.0, 62.0])
  assert (iv.n, iv.mean, iv.sd) == (3, 60.0, 2.0)
  assert iv.half_width == pytest.approx(4.303 * 2 / math.sqrt(3), abs=1e-3)
  assert iv.half_width == intervals.T_975[2] * 2.0 / math.sqrt(3)
  assert (iv.low, iv.high) == (60.0 - iv.half_width, 60.0 + iv.half_width)
  assert iv.contains(56.0) and not iv.contains(55.0)
  # Five values against numpy's sample standard deviation.
  values = [0.812, 0.795, 0.830, 0.801, 0.822]
  iv = intervals.t_interval(values)
  sd = float(np.std(values, ddof=1))
  assert iv.mean == pytest.approx(float(np.mean(values)), abs=1e-15)
  assert iv.half_width == pytest.approx(2.776 * sd / math.sqrt(5), rel=1e-3)
  # Identical values: a zero-width interval.
  assert intervals.t_interval([5.0, 5.0]).half_width == 0.0
  with pytest.raises(ValueError, match=">= 2 values"):
    intervals.t_interval([1.0])
  with pytest.raises(ValueError, match="finite"):
    intervals.t_interval([1.0, float("nan")])


def test_spread_keeps_seeds_without_a_number_out_of_the_mean():
  ok = lambda v: type("V", (), {"value": v, "status": "ok", "detail": ""})()
  missing = type("V", (), {"value": None, "status": "missing",
                           "detail": "no directory /r/x_seed2"})()
  s = spread_lib.Spread.of([ok(10.0), ok(14.0), missing])
  assert (s.n, s.total, s.mean) == (2, 3, 12.0)
  assert s.count_text() == "n=2 of 3"
  half = intervals.T_975[1] * math.sqrt(8) / math.sqrt(2)
  assert s.text(lambda v: f"{v:.2f}") == f"12.00 ± {half:.2f} (n=2 of 3)"
  assert s.details[2] == "no directory /r/x_seed2"
  one = spread_lib.Spread.of([ok(3.0), missing, missing])
  assert one.interval is None and one.text(str) == "3.0 (n=1 of 3)"


def test_repetitions_are_named_and_seeded():
  assert seeds_lib.seed_values(7, 3) == (7, 8, 9)
  assert seeds_lib.replica_names("run", 7, 3) == ("run", "run_seed8",
                                                  "run_seed9")
  p = presets.get_preset("digits_claims")
  assert seeds_lib.expand(p, 1) is p
  e = seeds_lib.expand(p, 3)
  assert len(e.runs) == 3 * len(p.runs) and seeds_lib.num_seeds(e) == 3
  for base in p.runs:
    names = seeds_lib.replicas(e, base.name)
    assert names == (base.name, f"{base.name}_seed1", f"{base.name}_seed2")
    for k, name in enumerate(names):
      run = e.run(name)
      assert dict(run.flags, seed=0) == dict(base.flags)  # Only the seed.
      assert run.flags["seed"] == k
  assert e.tables == p.tables  # Cells name the base runs.
  groups = seeds_lib.group_by_base(e, [r for r in e.runs
                                       if not r.name.endswith("_seed2")])
  assert [(r.name, n) for r, n in groups] == [(r.name, 2) for r in p.runs]
  with pytest.raises(ValueError, match="--seeds=0"):
    seeds_lib.expand(p, 0)
  with pytest.raises(ValueError, match="repetitions of"):
    dataclasses.replace(p, replicas_of={p.runs[0].name: ("nope",)})


def test_train_main_and_sweep_repetitions():
  config = config_lib.replace_fields(config_lib.ExperimentConfig(), {
      "seed": 3, "experiment_name": "exp"})
  reps = repeat.configs(config, 3)
  assert [(c.training.seed, c.output.experiment_name) for c in reps] == [
      (3, "exp"), (4, "exp_seed4"), (5, "exp_seed5")]
  assert reps[0] == config  # --seeds=1 is the run itself.


def test_sweep_seeds_are_points(parse, tmp_path):
  from experiments import sweep_lib  # pylint: disable=g-import-not-at-top
  from experiments import sweep_main  # pylint: disable=g-import-not-at-top,unused-import
  f = parse("--sweep=mcmahan_mnist_grid", f"--root_output_dir={tmp_path}",
            "--only=cnn_iid_C0.1_E5_B10", "--dataset=synthetic_mnist",
            "--seeds=3", "--seed=2")
  _, exp_dir, rows = sweep_lib.plan(f)
  assert [(pt.name, c.training.seed, out) for pt, c, out, _ in rows] == [
      (name, seed, os.path.join(exp_dir, name)) for name, seed in (
          ("cnn_iid_C0.1_E5_B10", 2), ("cnn_iid_C0.1_E5_B10_seed3", 3),
          ("cnn_iid_C0.1_E5_B10_seed4", 4))]


# The tiny preset's run: FedAvg alone (one method built per seed, not two).
# Its table cells take the seeds' values of the run's method; which method
# fills which column over seeds (FedAvg vs FedAvg + FedIR, distinct values)
# is tests/reproduction/test_reproduction_comparisons.py's
# test_report_and_summary_json_hold_each_comparison, on finished runs.
TINY_RUN = "tiny_fedavg_alpha_0.05"


def _tiny_preset() -> spec.Preset:
  """digits_claims' claim-3 run and table reduced to FedAvg, 2 rounds on 4
  clients; its table: the final accuracy of FedAvg."""
  p = presets.get_preset("digits_claims")
  run = p.run("digits_claims_fedir_alpha_0.05")
  run = dataclasses.replace(run, name=TINY_RUN, flags=dict(
      run.flags, fedir=False, total_rounds=2, rounds_per_eval=1,
      rounds_per_checkpoint=2, num_clients=4, clients_per_round=2))
  (table,) = [t for t in p.tables if t.key[1] == "claim3"]
  (cell,) = [c for c in table.cells if c.method == "fedavg"]
  table = dataclasses.replace(table, columns=(cell.column,), cells=(
      dataclasses.replace(cell, run=TINY_RUN),))
  return spec.Preset("tiny_seeds", "digits", "tiny", (run,), (table,))


def _last_accuracy(path):
  with open(path, newline="") as f:
    rows = [r for r in csv.DictReader(f) if r["test_accuracy"]]
  return 100 * float(rows[-1]["test_accuracy"])


def test_tiny_preset_with_three_seeds_reports_mean_and_interval(tmp_path):
  root = str(tmp_path / "r")
  out = []
  outcome = reproduce_lib.reproduce(_tiny_preset(), root, {}, seeds=3,
                                    echo=out.append)
  base = TINY_RUN
  assert outcome == {base: "ran", f"{base}_seed1": "ran",
                     f"{base}_seed2": "ran"}
  for k in range(3):  # Each an ordinary run with its seed.
    name = base if k == 0 else f"{base}_seed{k}"
    with open(os.path.join(root, name, "hparams.json")) as f:
      assert json.load(f)["seed"] == k
  with open(os.path.join(root, "tiny_seeds.csv"), newline="") as f:
    rows = {r["column"]: r for r in csv.DictReader(f)}
  assert list(rows) == ["FedAvg"]
  md = open(os.path.join(root, "tiny_seeds.md")).read()
  values = [_last_accuracy(os.path.join(
      root, base if k == 0 else f"{base}_seed{k}", "fedavg", "metrics.csv"))
            for k in range(3)]
  assert len(set(values)) > 1  # Three seeds, three runs: an interval.
  mean = sum(values) / 3
  sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 2)
  half = 4.302652730 * sd / math.sqrt(3)
  row = rows["FedAvg"]
  assert (row["n"], row["n_seeds"]) == ("3", "3")
  assert float(row["ours"]) == pytest.approx(mean, abs=1e-9)
  assert float(row["ci_low"]) == pytest.approx(mean - half, abs=1e-6)
  assert float(row["ci_high"]) == pytest.approx(mean + half, abs=1e-6)
  assert [float(v) for v in row["seed_values"].split(";")] == (
      pytest.approx(values, abs=1e-9))
  assert f"| {mean:.2f} ± {half:.2f} (n=3) " in md or (
      f" {mean:.2f} ± {half:.2f} (n=3) |" in md)
  assert "Over 3 seeds (`--seeds=3`)" in md
  # A rerun trains nothing; --report_only reads all three.
  ran = []
  again = reproduce_lib.reproduce(_tiny_preset(), root, {}, seeds=3,
                                  run_fn=ran.append, echo=out.append)
  assert not ran and set(again.values()) == {"finished"}
  # A seed run's own file damaged (its summary.json cut short): reproduce
  # re-finishes it as the same train_main command would (from its checked
  # metrics.csv and checkpoint; no round trained again): the same results.
  damaged = os.path.join(root, f"{base}_seed1", "summary.json")
  with open(damaged, "rb") as f:
    data = f.read()
  before = json.loads(data)["methods"]["fedavg"]
  with open(damaged, "wb") as f:
    f.write(data[:-30])
  out.clear()
  again = reproduce_lib.reproduce(_tiny_preset(), root, {}, seeds=3,
                                  echo=out.append)
  assert again == {base: "finished", f"{base}_seed1": "ran",
                   f"{base}_seed2": "finished"}
  assert any(l.startswith(f"[2/3] {base}_seed1: re-finishing ({damaged}: "
                          "not valid JSON (") for l in out), out
  with open(damaged) as f:
    after = json.load(f)["methods"]["fedavg"]
  assert after["resumed_from_round"] == 2  # Nothing trained again.
  for key in ("final_accuracy", "rounds", "acc_at_round", "status"):
    assert after[key] == before[key], key


def test_train_main_seeds_smoke(tmp_path, train_in_process):
  """train_main --seeds=2: two ordinary runs, --seed=5 and --seed=6, the
  second in <name>_seed6, each with its own partition, init and sampling."""
  args = (f"--root_output_dir={tmp_path}", "--experiment_name=rep",
          "--seeds=2", "--seed=5", "--total_rounds=2", "--rounds_per_eval=1",
          "--algorithm=fedavg", "--centralized_epochs=0", "--num_clients=4",
          "--clients_per_round=2", "--client_batch_size=20")
  proc = train_in_process(*args)
  assert proc.returncode == 0, proc.stderr[-3000:]
  for name, seed in (("rep", 5), ("rep_seed6", 6)):
    hparams = json.loads((tmp_path / name / "hparams.json").read_text())
    assert hparams["seed"] == seed and hparams["experiment_name"] == name
    summary = json.loads((tmp_path / name / "summary.json").read_text())
    assert summary["methods"]["fedavg"]["rounds"] == 2
  assert "[seed 2/2] --seed=6 -> " in proc.stdout
  a = (tmp_path / "rep" / "fedavg" / "metrics.csv").read_text()
  b = (tmp_path / "rep_seed6" / "fedavg" / "metrics.csv").read_text()
  assert a != b  # Another seed: another partition, init and sampling.


def test_paper_number_inside_or_outside_our_interval(tmp_path):
  """Hsu 2020 Table 3 over 3 seeds: the cell shows mean ± half width (n=3),
  the paper's printed number, and whether it lies in our interval; a seed
  without a number is left out and said (n=2 of 3)."""
  from federated_vision.reproduction import report  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import report_text  # pylint: disable=g-import-not-at-top
  from tests.fixtures.reproduction_helpers import finished_run  # pylint: disable=g-import-not-at-top
  p = seeds_lib.expand(presets.get_preset("hsu2020_table3"), 3)
  (table,) = p.tables
  row = "FedAvg, FedVC ✓, FedIR ✗, C = 10"  # The paper: 31.3, 39.7, 43.9.
  run = next(c.run for c in table.cells if c.row == row)
  root = str(tmp_path)
  at_5k = [0.42, 0.44, 0.46]  # Acc@Round 5k per seed: 44 ± 4.97 ∋ 43.9.
  at_1k = [0.20, 0.21, 0.22]  # 21 ± 2.48: 31.3 outside.
  for name, a1, a5 in zip(seeds_lib.replicas(p, run), at_1k, at_5k):
    curve = [(1000, a1), (2500, 0.35), (5000, a5)]
    finished_run(root, p.run(name), {"fedavg+fedvc": curve,
                                     "fedavg+fedir+fedvc": curve})
  rep = report.build_report(p, root)
  cells = {c.cell.column: c for c in rep.cells if c.cell.row == row}
  c5 = cells["Acc@Round 5k"]
  half = T975_2 * 2.0 / math.sqrt(3)
  assert c5.interval.half_width == pytest.approx(half)
  assert c5.paper_inside is True and cells["Acc@Round 1k"].paper_inside is False
  text = report_text.cell_text(c5)
  assert text == (f"44.00 ± {half:.2f} (n=3) / 43.9 (Δ +0.10; paper inside)")
  assert report_text.cell_text(cells["Acc@Round 1k"]).endswith(
      "/ 31.3 (Δ -10.30; paper outside)")
  # The third seed's run goes missing: n=2 of 3, the footnote names it.
  import shutil  # pylint: disable=g-import-not-at-top
  shutil.rmtree(os.path.join(root, seeds_lib.replicas(p, run)[2]))
  rep = report.build_report(p, root)
  c5 = next(c for c in rep.cells if (c.cell.row, c.cell.column) == (
      row, "Acc@Round 5k"))
  assert (c5.spread["ours"].n, c5.spread["ours"].total) == (2, 3)
  assert report_text.ours_text(c5).endswith("(n=2 of 3)")
  md = report_text.format_markdown(rep)
  assert f"no directory {root}/{run}_seed2" in md

