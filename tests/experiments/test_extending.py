"""A researcher's own components, preset and sweep, each one module outside
the package, loaded with --extra_modules (issue 27, acceptance 1, 4 and 6):

* tests/fixtures/extra_algorithm.py (an algorithm, --clip_norm),
  tests/fixtures/extra_client_variant.py (a client-work variant,
  --update_scale), tests/fixtures/extra_server_optimizer.py (a server optimizer,
  --server_clip_norm): each trains through train_main, its values are recorded,
  a rerun after Ctrl-C ends with the uninterrupted run's metrics.csv;
* tests/fixtures/extra_preset.py (`register_preset`): reproduce plans, runs,
  reports and resumes it;
* `reproduce --preset=digits_claims --extra_methods=fedavg@clipped_sgd`: the
  new rows sit beside the paper layout's, labelled as a reader knows the
  method, from a run with the compared run's settings, read at the
  compared run's batch budget; with fedavg_clip, which the mixing
  strategies do not compose, the claim 5 runs are listed as skipped (plan
  and report) and the command exits 0;
* tests/fixtures/extra_sweep.py (`register_sweep`): the researcher's
  hyper-parameter is the sweep's axis and a report_main column;
* docs/extending.md: every module and command of the page runs as written;
* their flags / names show in --help, and bad values are one line and exit
  2 before TensorFlow is imported.

The runs happen in child processes (tests/fixtures/extending_driver.py:
components register process-wide and must stay out of the pytest process), each
scenario through its binary's parser and main, TensorFlow imported once.
"""

import csv
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, REPO, TEST_PYTHONPATH, metric_rows
from test_startup import _probe

PYTHONPATH = TEST_PYTHONPATH
MODULES = "extra_algorithm,extra_client_variant,extra_server_optimizer"
COMPARED = "digits_claims_fedvc_imbalanced"
EXTRA = "fedavg@clipped_sgd"
# The report's label of EXTRA (its components' labels; clipped_sgd has none).
EXTRA_LABEL = "FedAvg with clipped_sgd"


def _driver(work, *scenarios):
  proc = subprocess.run(
      [sys.executable, os.path.join(FIXTURES, "extending_driver.py"),
       REPO, str(work), *scenarios], cwd=REPO, capture_output=True,
      text=True, timeout=1500, check=False,
      env=dict(os.environ, PYTHONPATH=PYTHONPATH))
  line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
  assert line, proc.stderr[-3000:]
  return json.loads(line[-1][len("RESULT "):])


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
  work = tmp_path_factory.mktemp("extending")
  return work, _driver(work, "components", "presets", "docs", "sweep")


# --- components -------------------------------------------------------------

def test_each_component_trains_and_a_rerun_after_ctrl_c_is_identical(ran):
  work, result = ran
  r = result["components"]
  assert r["codes"] == [0, 130, 0], r["stderr"]
  assert "resuming from the checkpoint of round 1" in r["resumed_out"]
  assert r["same"]
  assert all(rounds == ["1", "2"] for rounds in r["rounds"].values())
  root = work / "components" / "whole"
  settings = json.loads((root / "summary.json").read_text())["methods"]
  assert settings["fedavg_clip"]["settings"]["clip_norm"] == 0.5
  assert settings["fedavg_clip"]["settings"]["algorithm"] == "fedavg_clip"
  assert settings["fedavg+scaled"]["settings"]["update_scale"] == 0.8
  assert settings["fedavg+scaled"]["settings"]["client_work"] == "scaled"
  opt = settings["fedavg@clipped_sgd"]["settings"]
  assert (opt["server_optimizer"], opt["server_clip_norm"]) == (
      "clipped_sgd", 2.0)
  # The three train differently (none fell back to another's process).
  losses = {m: tuple(r["train_loss"] for r in metric_rows(
      root / m / "metrics.csv")) for m in settings}
  assert len(set(losses.values())) == 3, losses


def test_own_values_are_recorded_in_hparams_and_summary(ran):
  work, _ = ran
  root = work / "components" / "whole"
  hparams = json.loads((root / "hparams.json").read_text())
  summary = json.loads((root / "summary.json").read_text())
  for flag, value in (("clip_norm", 0.5), ("update_scale", 0.8),
                      ("server_clip_norm", 2.0)):
    assert hparams[flag] == value
    assert summary["config"]["methods"][flag] == value


def test_their_flags_show_in_help_without_tensorflow(monkeypatch):
  monkeypatch.setenv("PYTHONPATH", PYTHONPATH)
  code, tf, tff, out, err = _probe("experiments.train_main",
                                   f"--extra_modules={MODULES}", "--help")
  assert code == 0 and not tf and not tff, err[-2000:]
  methods = out.split("== methods:")[1].split("\n== ")[0]
  for line in ("--clip_norm: fedavg_clip: L2 norm every client's model delta",
               "--update_scale: scaled: multiplies every client's model delta",
               "--server_clip_norm: clipped_sgd: largest global L2 norm"):
    assert line in methods, methods


@pytest.mark.parametrize("module, args, error", [
    ("experiments.train_main", ["--methods=fedavg_clip", "--clip_norm=-1"],
     "flag --clip_norm=-1: -1.0 is not a non-negative number (--help lists "
     "the flags)"),  # absl's bound.
    ("experiments.train_main", ["--methods=fedavg_clip", "--clip_norm=0"],
     "--clip_norm=0.0: must be a finite number > 0"),
    ("experiments.train_main", ["--methods=fedavg+scaled", "--update_scale=0"],
     "--update_scale=0.0: must be a finite number > 0"),
    ("experiments.train_main", ["--methods=fedavg@clipped_sgd",
                                "--server_clip_norm=0"],
     "--server_clip_norm=0.0: must be a finite number > 0"),
    ("experiments.train_main", ["--methods=fedavg", "--clip_norm=2"],
     "--clip_norm: not used: read by fedavg_clip; this run's methods are "
     "fedavg"),
    ("experiments.reproduce", ["--extra_modules=extra_preset",
                               "--preset=my_digits_table",
                               "--extra_methods=fedavg@nope"],
     "--extra_methods=fedavg@nope: 'fedavg@nope': unknown server optimizer "
     "'nope'; one of"),
])
def test_a_bad_value_is_one_line_and_exit_2_before_tensorflow(
    module, args, error, monkeypatch):
  monkeypatch.setenv("PYTHONPATH", PYTHONPATH)
  if module == "experiments.train_main":
    args = [f"--extra_modules={MODULES}", *args]
  code, tf, tff, _, err = _probe(module, *args)
  assert code == 2, err[-2000:]
  errors = [l for l in err.splitlines() if "error:" in l]
  assert len(errors) == 1 and error in errors[0], err
  assert "Traceback" not in err and not tf and not tff


# --- presets and the papers' tables ------------------------------------------

def test_a_registered_preset_runs_reports_and_resumes(ran):
  work, result = ran
  r = result["presets"]
  assert r["codes"][:3] == [0, 130, 0], r["stderr"]
  assert r["same"] and r["rounds"] == ["1", "2"]
  root = work / "presets" / "whole"
  report = (root / "my_digits_table.md").read_text()
  assert "My table: Acc@Round 2 on digits" in report
  summary = json.loads((root / "my_digits_table_run" /
                        "summary.json").read_text())
  assert summary["methods"]["fedavg@clipped_sgd"]["settings"][
      "server_clip_norm"] == 2.0
  for row, method in (("FedAvg", "fedavg"),
                      ("FedAvg, clipped server step", "fedavg@clipped_sgd")):
    value = 100 * summary["methods"][method]["acc_at_round"]
    assert f"| {row} | {value:.2f} |" in report, report
  # Its figure, under its table: each curve is the run's metrics.csv.
  assert report.index("## My table") < report.index(
      "![My figure: test accuracy vs rounds](my_digits_table_curves.png)")
  assert (root / "my_digits_table_curves.png").stat().st_size > 10_000
  with open(root / "my_digits_table_curves.csv", newline="") as f:
    drawn = list(csv.DictReader(f))
  for row, method in (("FedAvg", "fedavg"),
                      ("FedAvg, clipped server step", "fedavg@clipped_sgd")):
    with open(root / "my_digits_table_run" / method / "metrics.csv",
              newline="") as f:
      want = [(float(r["round"]), 100 * float(r["test_accuracy"]))
              for r in csv.DictReader(f)]
    assert [(float(r["x"]), float(r["y"])) for r in drawn
            if r["series"] == row] == want


def test_extra_methods_rows_sit_beside_the_papers_with_its_settings(ran):
  work, result = ran
  assert result["presets"]["codes"][3:] == [0, 0, 0], result["presets"][
      "stderr"]
  from experiments import reproduce_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import presets  # pylint: disable=g-import-not-at-top
  claims = work / "presets" / "claims"
  report = (claims / "digits_claims.md").read_text()
  table = report.split("Claim 2:")[1].split("\n## ")[0]
  row = [l for l in table.splitlines()
         if l.startswith(f"| {EXTRA_LABEL} (as ")]
  # Beside its compared row, in the column of the compared method (FedAvg;
  # the FedVC column is another method of that run: left blank).
  assert len(row) == 1 and row[0].startswith(
      f"| {EXTRA_LABEL} (as alpha 0.5, sigma 1) | ") and row[0].endswith(
          " |  |")
  assert f"--extra_methods={EXTRA}" in report and "not in the paper" in report
  # The new row's run: the compared run's every setting, only the method
  # selection replaced.
  compared = presets.get_preset("digits_claims").run(COMPARED)
  want = reproduce_lib.full_config(compared, str(claims))
  extra_dir = claims / f"{COMPARED}+{EXTRA}"
  recorded = json.loads((extra_dir / "experiment.json").read_text())
  settings = recorded["settings"]
  got = ({k: v for section in settings.values() for k, v in section.items()}
         if all(isinstance(v, dict) for v in settings.values()) else settings)
  selection = {"methods", "algorithm", "fedir", "fedprox", "fedvc",
               "include_plain", "experiment_name", "server_clip_norm"}
  for key, value in want.items():
    if key not in selection and key in got:
      assert got[key] == value, key
  assert got["methods"] == [EXTRA]
  assert {"dataset", "num_clients", "total_rounds", "seed",
          "client_learning_rate", "imbalance_sigma"} <= set(got)
  summary = json.loads((extra_dir / "summary.json").read_text())
  assert list(summary["methods"]) == [EXTRA]
  assert summary["methods"][EXTRA]["settings"]["server_optimizer"] == (
      "clipped_sgd")


def test_extra_rows_compare_at_the_compared_budget_and_skip_what_cannot_join(
    ran):
  work, result = ran
  r = result["presets"]
  claims = work / "presets" / "claims"
  with open(claims / "digits_claims.csv", newline="") as f:
    cells = {(c["table"], c["row"], c["column"]): c for c in csv.DictReader(f)}
  added = cells[("digits/claim2", f"{EXTRA_LABEL} (as alpha 0.5, sigma 1)",
                 "FedAvg")]
  # The compared run's budget B (its summary.json's acc_at_batch_ref), read
  # off the added run's own metrics.csv: its last evaluation at or before B.
  budget = r["budget"]
  rows = metric_rows(claims / f"{COMPARED}+{EXTRA}" / EXTRA / "metrics.csv")
  at = [x for x in rows if x["test_accuracy"] and
        float(x["cumulative_batch_budget"]) <= budget["batches"]][-1]
  assert at["round"] == budget["round"]
  assert float(added["ours"]) == pytest.approx(
      100 * float(at["test_accuracy"]), abs=1e-9)
  own = json.loads((claims / f"{COMPARED}+{EXTRA}" / "summary.json"
                    ).read_text())["methods"][EXTRA]["acc_at_batch"]
  assert float(added["ours"]) != pytest.approx(100 * own)  # Not its own B.
  # fedavg_clip cannot join the mixing runs: skipped, named with the reason,
  # in the plan and the report; its other runs are planned.
  report = (claims / "digits_claims.md").read_text()
  for m in ("none", "parallel", "example_transfer", "gradient_transfer",
            "oracle"):
    name = f"digits_claims_mixing_{m}+fedavg_clip"
    assert f"  skipped {name}: " in r["plan"]
    assert f"- {name}: " in report and f"federated {name}:" not in r["plan"]
  assert "the mixing strategies compose fedavg and fedavgm only" in report
  assert f"federated {COMPARED}+fedavg_clip:" in r["plan"]
  # Its rows name it by label; its source is its own citation.
  assert "| fedavg_clip (as alpha 0.5, sigma 1) |" in report
  methods_source = [l for l in report.splitlines()
                    if l.startswith("- `--methods` = ")][0]
  assert "fedavg_clip: ours: a test algorithm" in methods_source
  assert "clipped_sgd: " in methods_source and "no source" not in \
      methods_source


def test_registered_presets_and_sweeps_show_in_help(monkeypatch):
  monkeypatch.setenv("PYTHONPATH", PYTHONPATH)
  for module, extra, name in (("experiments.reproduce", "extra_preset",
                               "my_digits_table"),
                              ("experiments.sweep_main", "extra_sweep",
                               "my_scale_sweep")):
    code, tf, _, out, err = _probe(module, f"--extra_modules={extra}",
                                   "--help")
    assert code == 0 and name in out and not tf, err[-2000:]


# --- a sweep over the researcher's hyper-parameter ---------------------------

def test_a_registered_sweep_runs_and_its_axis_is_a_report_column(ran):
  work, result = ran
  r = result["sweep"]
  assert r["codes"] == [0, 0], r["stderr"]
  out = work / "sweeps" / "my_scale_sweep"
  assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
      "scale_0.5", "scale_1"]
  with open(out / "report.csv", newline="") as f:
    rows = list(csv.DictReader(f))
  assert [(r["point"], r["algorithm"], r["update_scale"]) for r in rows] == [
      ("scale_0.5", "fedavg+scaled", "0.5"), ("scale_1", "fedavg+scaled", "1.0")]
  # Only what differs: the shared client learning rate has no column.
  assert "client_learning_rate" not in rows[0]
  assert "update_scale" in r["report_header"]


# --- docs/extending.md -------------------------------------------------------

def _docs(ran, program):
  return [d for d in ran[1]["docs"] if d["args"][0] == program]


def test_every_docs_command_runs(ran):
  docs = ran[1]["docs"]
  assert len(docs) >= 4
  for d in docs:
    assert d["code"] == 0, (d["args"], d["stderr"])


def test_docs_fedadam_runs_beside_fedavgm_with_its_own_learning_rate(ran):
  work, _ = ran
  methods = json.loads((work / "docs" / "output" / "fedadam" /
                        "summary.json").read_text())["methods"]
  assert set(methods) == {"fedavgm", "fedavg@adam:server_learning_rate=0.03"}
  adam = methods["fedavg@adam:server_learning_rate=0.03"]["settings"]
  assert (adam["server_optimizer"], adam["server_learning_rate"],
          adam["adam_tau"]) == ("adam", 0.03, 0.01)
  assert methods["fedavgm"]["settings"]["server_learning_rate"] == 1.0
  assert methods["fedavgm"]["settings"]["server_optimizer"] == "sgdm"


def test_docs_clipped_variant_records_its_own_flag(ran):
  work, _ = ran
  summary = json.loads((work / "docs" / "output" / "clipped" /
                        "summary.json").read_text())
  clipped = summary["methods"]["fedavg+clipped"]["settings"]
  assert (clipped["client_work"], clipped["delta_clip"]) == ("clipped", 0.5)
  assert summary["config"]["methods"]["delta_clip"] == 0.5
  assert summary["methods"]["fedavg+clipped"]["rounds"] == 2


def test_docs_stateful_example_gives_the_builtins_numbers(ran):
  """The page's FedDyn, written from scratch on the research API, trains
  exactly as the built-in (the same maths, store and server state)."""
  work, _ = ran
  out = work / "docs" / "output" / "my_feddyn"
  mine = metric_rows(out / "my_feddyn" / "metrics.csv")
  assert [r["round"] for r in mine] == ["1", "2", "3"]
  assert mine == metric_rows(out / "feddyn" / "metrics.csv")
  states = lambda m: sorted(p.name for p in (out / m / "client_states")
                            .glob("round_*/*.npy"))
  assert states("my_feddyn") and states("my_feddyn") == states("feddyn")
  summary = json.loads((out / "summary.json").read_text())
  assert summary["methods"]["my_feddyn"]["settings"]["my_alpha"] == 0.01


def test_docs_client_output_metric_is_a_column(ran):
  work, _ = ran
  rows = metric_rows(work / "docs" / "output" / "my_norms" / "fedavg_norms" /
                     "metrics.csv")
  assert [r["round"] for r in rows] == ["1", "2"]
  assert all(float(r["update_norm"]) > 0 for r in rows)


def test_docs_scaffold_keeps_its_client_states(ran):
  work, _ = ran
  out = work / "docs" / "output" / "scaffold"
  summary = json.loads((out / "summary.json").read_text())
  assert summary["methods"]["scaffold"]["settings"]["client_state"] == (
      "control_variate")
  assert (out / "scaffold" / "client_states").is_dir()


def test_docs_table3_gains_the_new_method_with_the_compared_settings(ran):
  (plan,) = _docs(ran, "experiments.reproduce")
  method = "fedavg+fedvc@adam:server_learning_rate=0.01"
  compared = "inat_user_120k_fedavg_c10_fedvc_fedir_off_on_r5000"
  listing = plan["stdout"].split(f"federated {compared}+{method}:")[1].split(
      "  federated ")[0]
  for setting in ("--total_rounds=5000", "--virtual_client_size=256",
                  "--rounds_per_eval=250", f"--methods={method}"):
    assert setting in listing, listing
