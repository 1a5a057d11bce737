"""A researcher's own components, each one module outside the package
(issue 27, acceptance 1): tests/extra_algorithm.py (an algorithm with its
own --clip_norm), tests/extra_client_variant.py (a client-work variant with
its own --update_scale) and tests/extra_server_optimizer.py (a server
optimizer with its own --server_clip_norm), loaded with --extra_modules.

Each trains through train_main (2 rounds; here 3 with a Ctrl-C before the
third and a rerun), its flags show in --help, its values are recorded in
hparams.json / summary.json, a bad value is one line and exit 2 before
TensorFlow is imported, and the rerun after Ctrl-C ends with the
uninterrupted run's metrics.csv. The runs happen in a child process: the
components register process-wide and must stay out of the pytest process
(other tests list the registries).
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from test_startup import _probe

MODULES = "extra_algorithm,extra_client_variant,extra_server_optimizer"
METHODS = "fedavg_clip,fedavg+scaled,fedavg@clipped_sgd"
OWN = ["--clip_norm=0.5", "--update_scale=0.8", "--server_clip_norm=2"]
TINY = ["--num_clients=4", "--clients_per_round=2", "--client_batch_size=20",
        "--centralized_epochs=0", "--seed=3", "--rounds_per_eval=1",
        "--rounds_per_checkpoint=1", "--total_rounds=3"]

_DRIVER = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
import in_process
from conftest import metric_rows
from federated_vision.algorithms import sampling
root, args = sys.argv[2], sys.argv[3:]

def run(name):
  return in_process.run("experiments.train_main", f"--root_output_dir={root}",
                        f"--experiment_name={name}", *args)

whole = run("whole")
select = sampling.UniformSampler.select
def ctrl_c_before_round_3(self, round_num):
  if round_num == 3:
    raise KeyboardInterrupt
  return select(self, round_num)
sampling.UniformSampler.select = ctrl_c_before_round_3
killed = run("split")
sampling.UniformSampler.select = select
resumed = run("split")
methods = ["fedavg_clip", "fedavg+scaled", "fedavg@clipped_sgd"]
rows = {n: {m: metric_rows(f"{root}/{n}/{m}/metrics.csv") for m in methods}
        for n in ("whole", "split")}
print("RESULT", json.dumps({
    "codes": [whole.returncode, killed.returncode, resumed.returncode],
    "stderr": (whole.stderr + killed.stderr + resumed.stderr)[-3000:],
    "resumed_out": resumed.stdout,
    "same": rows["whole"] == rows["split"],
    "rounds": {m: [r["round"] for r in rows["split"][m]] for m in methods}}))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp("extending")
  proc = subprocess.run(
      [sys.executable, "-c", _DRIVER, REPO, str(root),
       f"--extra_modules={MODULES}", f"--methods={METHODS}", *OWN, *TINY],
      cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
      env=dict(os.environ, PYTHONPATH=os.pathsep.join(
          [REPO, os.path.join(REPO, "tests")])))
  line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
  assert line, proc.stderr[-3000:]
  return root, json.loads(line[-1][len("RESULT "):])


def test_each_component_trains_and_a_rerun_after_ctrl_c_is_identical(runs):
  root, result = runs
  assert result["codes"] == [0, 130, 0], result["stderr"]
  assert "resuming from the checkpoint of round 2" in result["resumed_out"]
  assert result["same"]
  assert all(r == ["1", "2", "3"] for r in result["rounds"].values())
  # Each method ran its own component (not a built-in under its name).
  summary = json.loads((root / "whole" / "summary.json").read_text())
  settings = summary["methods"]
  assert settings["fedavg_clip"]["settings"]["clip_norm"] == 0.5
  assert settings["fedavg_clip"]["settings"]["algorithm"] == "fedavg_clip"
  assert settings["fedavg+scaled"]["settings"]["update_scale"] == 0.8
  assert settings["fedavg+scaled"]["settings"]["client_work"] == "scaled"
  opt = settings["fedavg@clipped_sgd"]["settings"]
  assert (opt["server_optimizer"], opt["server_clip_norm"]) == (
      "clipped_sgd", 2.0)
  # The three train differently (none fell back to another's process).
  from conftest import metric_rows  # pylint: disable=g-import-not-at-top
  losses = {m: tuple(r["train_loss"] for r in metric_rows(
      root / "whole" / m / "metrics.csv")) for m in settings}
  assert len(set(losses.values())) == 3, losses


def test_own_values_are_recorded_in_hparams_and_summary(runs):
  root, _ = runs
  hparams = json.loads((root / "whole" / "hparams.json").read_text())
  summary = json.loads((root / "whole" / "summary.json").read_text())
  for flag, value in (("clip_norm", 0.5), ("update_scale", 0.8),
                      ("server_clip_norm", 2.0)):
    assert hparams[flag] == value
    assert summary["config"]["methods"][flag] == value


def test_their_flags_show_in_help_without_tensorflow():
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [REPO, os.path.join(REPO, "tests")]))
  proc = subprocess.run(
      [sys.executable, "-m", "experiments.train_main",
       f"--extra_modules={MODULES}", "--help"], cwd=REPO, env=env,
      capture_output=True, text=True, timeout=120, check=False)
  assert proc.returncode == 0, proc.stderr[-2000:]
  methods = proc.stdout.split("== methods:")[1].split("\n== ")[0]
  for line in ("--clip_norm: fedavg_clip: L2 norm every client's model delta",
               "--update_scale: scaled: multiplies every client's model delta",
               "--server_clip_norm: clipped_sgd: largest global L2 norm"):
    assert line in methods, methods


@pytest.mark.parametrize("args, error", [
    (["--methods=fedavg_clip", "--clip_norm=-1"],  # absl's bound.
     "flag --clip_norm=-1: -1.0 is not a non-negative number (--help lists "
     "the flags)"),
    (["--methods=fedavg_clip", "--clip_norm=0"],
     "--clip_norm=0.0: must be a finite number > 0"),
    (["--methods=fedavg+scaled", "--update_scale=0"],
     "--update_scale=0.0: must be a finite number > 0"),
    (["--methods=fedavg@clipped_sgd", "--server_clip_norm=0"],
     "--server_clip_norm=0.0: must be a finite number > 0"),
    (["--methods=fedavg", "--clip_norm=2"],
     "--clip_norm: not used: read by fedavg_clip; this run's methods are "
     "fedavg"),
])
def test_a_bad_value_is_one_line_and_exit_2_before_tensorflow(args, error,
                                                             monkeypatch):
  monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
      [REPO, os.path.join(REPO, "tests")]))
  code, tf, tff, _, err = _probe("experiments.train_main",
                                 f"--extra_modules={MODULES}", *args)
  assert code == 2, err[-2000:]
  errors = [l for l in err.splitlines() if "error:" in l]
  assert len(errors) == 1 and errors[0].endswith(error), err
  assert "Traceback" not in err and not tf and not tff
