"""A researcher's preset and methods in the papers' tables (issue 27,
acceptance 1 (d) and 4).

* tests/extra_preset.py registers `my_digits_table` (`register_preset`)
  from --extra_modules: reproduce plans, runs (2 rounds) and reports it,
  its name shows in reproduce's --help, a bad --extra_methods value is one
  line and exit 2 before TensorFlow is imported, and a rerun after Ctrl-C
  ends with the uninterrupted run's metrics.csv.
* `reproduce --preset=digits_claims --extra_methods=fedavg@clipped_sgd`
  (the server optimizer of tests/extra_server_optimizer.py) adds rows to
  the paper layout's tables; the run behind a new row has the compared
  run's settings but its method selection.

The runs happen in a child process (components and presets register
process-wide and must stay out of the pytest process).
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from test_startup import _probe

PYTHONPATH = os.pathsep.join([REPO, os.path.join(REPO, "tests")])
COMPARED = "digits_claims_fedvc_imbalanced"
EXTRA = "fedavg@clipped_sgd"

_DRIVER = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
import in_process
from conftest import metric_rows
from federated_vision.algorithms import sampling
root = sys.argv[2]
mine = ["--extra_modules=extra_preset", "--preset=my_digits_table"]

def reproduce(name, *args):
  return in_process.run("experiments.reproduce",
                        f"--results_root={root}/{name}", *args)

whole = reproduce("whole", *mine)
select = sampling.UniformSampler.select
def ctrl_c_before_round_2(self, round_num):
  if round_num == 2:
    raise KeyboardInterrupt
  return select(self, round_num)
sampling.UniformSampler.select = ctrl_c_before_round_2
killed = reproduce("split", *mine)
sampling.UniformSampler.select = select
resumed = reproduce("split", *mine)
run = "my_digits_table_run"
rows = {n: {m: metric_rows(f"{root}/{n}/{run}/{m}/metrics.csv")
            for m in ("fedavg", "fedavg@clipped_sgd")}
        for n in ("whole", "split")}
extra = reproduce("claims", "--extra_modules=extra_server_optimizer",
                  "--preset=digits_claims", "--extra_methods=%s",
                  "--only=%s+*")
print("RESULT", json.dumps({
    "codes": [whole.returncode, killed.returncode, resumed.returncode,
              extra.returncode],
    "stderr": (whole.stderr + killed.stderr + resumed.stderr
               + extra.stderr)[-3000:],
    "same": rows["whole"] == rows["split"],
    "rounds": [r["round"] for r in rows["split"]["fedavg"]]}))
""" % (EXTRA, COMPARED)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp("presets")
  proc = subprocess.run(
      [sys.executable, "-c", _DRIVER, REPO, str(root)], cwd=REPO,
      capture_output=True, text=True, timeout=1200, check=False,
      env=dict(os.environ, PYTHONPATH=PYTHONPATH))
  line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
  assert line, proc.stderr[-3000:]
  return root, json.loads(line[-1][len("RESULT "):])


def test_a_registered_preset_runs_reports_and_resumes(runs):
  root, result = runs
  assert result["codes"][:3] == [0, 130, 0], result["stderr"]
  assert result["same"] and result["rounds"] == ["1", "2"]
  report = (root / "whole" / "my_digits_table.md").read_text()
  assert "My table: Acc@Round 2 on digits" in report
  summary = json.loads((root / "whole" / "my_digits_table_run" /
                        "summary.json").read_text())
  assert summary["methods"]["fedavg@clipped_sgd"]["settings"][
      "server_clip_norm"] == 2.0
  for row, method in (("FedAvg", "fedavg"),
                      ("FedAvg, clipped server step", "fedavg@clipped_sgd")):
    value = 100 * summary["methods"][method]["acc_at_round"]
    assert f"| {row} | {value:.2f} |" in report, report


def test_extra_methods_rows_sit_beside_the_papers_with_its_settings(runs):
  root, result = runs
  assert result["codes"][3] == 0, result["stderr"]
  from experiments import reproduce_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import presets  # pylint: disable=g-import-not-at-top
  claims = root / "claims"
  report = (claims / "digits_claims.md").read_text()
  table = report.split("Claim 2:")[1].split("\n## ")[0]
  row = [l for l in table.splitlines() if l.startswith(f"| {EXTRA} (as ")]
  # Beside its compared row, in the column of the compared method (FedAvg;
  # the FedVC column is another method of that run: left blank).
  assert len(row) == 1 and row[0].startswith(
      f"| {EXTRA} (as alpha 0.5, sigma 1) | ") and row[0].endswith(" |  |")
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


def test_the_preset_shows_in_help_and_bad_values_exit_2_before_tf(
    monkeypatch):
  monkeypatch.setenv("PYTHONPATH", PYTHONPATH)
  proc = subprocess.run(
      [sys.executable, "-m", "experiments.reproduce",
       "--extra_modules=extra_preset", "--help"], cwd=REPO,
      capture_output=True, text=True, timeout=120, check=False)
  assert proc.returncode == 0 and "my_digits_table" in proc.stdout, (
      proc.stderr[-2000:])
  code, tf, tff, _, err = _probe(
      "experiments.reproduce", "--extra_modules=extra_preset",
      "--preset=my_digits_table", "--extra_methods=fedavg@nope")
  errors = [l for l in err.splitlines() if "error:" in l]
  assert code == 2 and len(errors) == 1, err[-2000:]
  assert "--extra_methods=fedavg@nope: 'fedavg@nope': unknown server " \
      "optimizer 'nope'" in errors[0]
  assert not tf and not tff
