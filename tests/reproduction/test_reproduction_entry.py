"""experiments/reproduce.py: dry-run listing of every preset, one-line errors,
and a real (scaled-down) digits effective-learning-rate sweep with its
contour, grouped table and TensorBoard HParams (issue 12 acceptance 1, 3, 5).
"""

import csv
import dataclasses
import os
import subprocess
import sys

import pytest

from federated_vision.experiment import config as config_lib
from experiments import reproduce_lib
from federated_vision.errors import ConfigError
from federated_vision.reproduction import presets
from federated_vision.reproduction import spec
from tests.fixtures.reproduction_helpers import listing_runs
from tests.fixtures.reproduction_helpers import listing_settings

from conftest import REPO as ROOT


def _lines(preset):
  out = []
  reproduce_lib.reproduce(preset, "/nonexistent", {}, dry_run=True,
                          echo=out.append)
  return "\n".join(out).splitlines()


@pytest.mark.parametrize("name", presets.preset_names())
def test_dry_run_lists_every_run_with_full_config(name):
  """Every setting of every run: in the base (listed once) or, where the run
  differs from it, on the run's line (issue 19: no more full config per run)."""
  preset = presets.get_preset(name)
  listed = listing_runs(_lines(name))
  if all(r.kind == spec.AVERAGING for r in preset.runs):
    # McMahan Figure 1's run is not train_main's: exactly what it reads.
    assert list(listed) == [r.name for r in preset.runs]
    for run in preset.runs:
      assert listing_settings(listed[run.name]) == {
          k: reproduce_lib._show(v) for k, v in run.flags.items()}  # pylint: disable=protected-access
    return
  assert list(listed) == ["base"] + [r.name for r in preset.runs]
  base = listing_settings(listed["base"])
  assert base["root_output_dir"] == "/nonexistent"
  fields = config_lib.field_sections()
  for run in preset.runs:
    shown = dict(base, **listing_settings(listed[run.name]),
                 experiment_name=run.name)
    assert set(shown) == set(fields), run.name  # Defaults included.
    for flag, value in reproduce_lib.full_config(
        run, "/nonexistent").items():
      assert shown[flag] == reproduce_lib._show(value), (run.name, flag)  # pylint: disable=protected-access
    for flag, value in run.flags.items():  # The preset's own values.
      assert shown[flag] == reproduce_lib._show(value), (run.name, flag)  # pylint: disable=protected-access


def test_dry_run_lists_mixing_runs_with_their_strategy():
  listed = listing_runs(_lines("digits_claims"))
  mixing = [n for n in listed if "digits_claims_mixing_" in n]
  assert len(mixing) == 5
  for strategy, n in zip(("none", "parallel", "example_transfer",
                          "gradient_transfer", "oracle"), mixing):
    shown = listing_settings(listed[n])
    assert shown["mixing"] == strategy and shown["missing_classes"] == "8,9"


def test_a_preset_flag_train_main_lacks_is_an_error():
  bad = spec.Run("bad", {"dataset": "digits", "no_such_flag": 1})
  with pytest.raises(ConfigError, match="--no_such_flag: not a setting"):
    reproduce_lib.full_config(bad)


def test_dry_run_only_selects():
  lines = _lines(dataclasses.replace(
      presets.get_preset("digits_claims")))  # A Preset object works too.
  assert len(listing_runs(lines)) == 1 + 13
  out = []
  reproduce_lib.reproduce("digits_claims", "/x", {}, only=["*alpha_0*"],
                          dry_run=True, echo=out.append)
  names = list(listing_runs(out[0].splitlines()))[1:]
  assert names == ["digits_claims_alpha_0.1", "digits_claims_alpha_0",
                   "digits_claims_fedir_alpha_0.05"]


def _binary(*args):
  return subprocess.run(
      [sys.executable, "-m", "experiments.reproduce", *args], cwd=ROOT,
      capture_output=True, text=True, timeout=120, check=False,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def test_binary_dry_run_and_one_line_errors(tmp_path):
  ok = _binary("--preset=hsu2020_table3", "--dry_run")
  assert ok.returncode == 0, ok.stderr
  assert "inat_user_120k" in ok.stdout and "--split_csv" in ok.stdout
  # Data missing: says which flag before any run starts; nothing written.
  root = tmp_path / "r"
  bad = _binary("--preset=hsu2020_table3", f"--results_root={root}")
  assert bad.returncode == 2
  assert bad.stderr.strip().splitlines() == [
      "reproduce.py: error: run inat_user_120k_fedavg_c10_fedvc_fedir_off_on_"
      "r5000 needs --split_csv (data is never downloaded)"]
  assert not root.exists()
  # A data file that does not exist is named.
  bad = _binary("--preset=hsu2020_table3", f"--results_root={root}",
                f"--split_csv={tmp_path}/nope.csv")
  assert bad.returncode == 2
  assert bad.stderr.strip().splitlines() == [
      f"reproduce.py: error: --split_csv={tmp_path}/nope.csv: no such file"]
  unknown = _binary("--preset=nope", "--dry_run")
  assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
  assert "no preset 'nope'" in unknown.stderr


def test_mismatched_run_directory_stops_before_running(tmp_path):
  preset = presets.get_preset("digits_claims")
  run = preset.runs[0]
  d = tmp_path / run.name
  d.mkdir()
  flags = dict(run.flag_dict(), alpha=7.0)
  import json  # pylint: disable=g-import-not-at-top
  (d / "hparams.json").write_text(json.dumps(flags))
  ran = []
  with pytest.raises(reproduce_lib.ReproduceError, match=run.name):
    reproduce_lib.reproduce("digits_claims", str(tmp_path), {},
                            run_fn=ran.append, echo=lambda s: None)
  assert not ran


# The runs of the effective-LR preset the real sweep trains (alpha, eta,
# beta): at alpha 0.1, eta 0.1 with beta 0 and eta 0.05 with beta 0.5 --
# eta/(1-beta) 0.1 both, one group of two whose best member the table must
# pick (Hsu 2020 Appendix A.1: "each grid point showing the best result over
# all combinations that give the same eta_eff") -- and at alpha 10 one run
# whose eta/(1-beta) = 0.1 must not join alpha 0.1's group. The whole
# 2 x 3 x 2 grid's grouping, best per group and contour (with its filled
# contours) are checked on finished runs without training
# (tests/reproduction/test_reproduction_effective_lr.py); here that real runs
# train the settings the study reads and their numbers reach its table.
SMALL_SWEEP = ((0.1, 0.05, 0.5), (0.1, 0.1, 0.0), (10.0, 0.1, 0.0))


def _small(preset: spec.Preset) -> spec.Preset:
  """The digits effective-LR preset with tiny runs (same run names): the
  SMALL_SWEEP runs of its study and its centralized baseline."""
  runs = []
  for r in preset.runs:
    if r.kind != spec.CENTRALIZED and (
        r.flags["alpha"], r.flags["client_learning_rate"],
        r.flags["server_momentum"]) not in SMALL_SWEEP:
      continue
    flags = dict(r.flags, total_rounds=2, rounds_per_eval=2,
                 rounds_per_checkpoint=2, num_clients=4, clients_per_round=2)
    if r.kind == spec.CENTRALIZED:
      flags.update(total_rounds=1, rounds_per_eval=1, rounds_per_checkpoint=1,
                   centralized_epochs=1)
    runs.append(dataclasses.replace(r, flags=flags))
  kept = {r.name for r in runs}
  (study,) = preset.studies
  study = dataclasses.replace(
      study, runs=tuple(n for n in study.runs if n in kept))
  assert len(study.runs) == len(SMALL_SWEEP)
  return dataclasses.replace(preset, runs=tuple(runs), studies=(study,))


def test_effective_lr_sweep_really_runs(tmp_path):
  """SMALL_SWEEP's 3 runs on digits + baseline, 2 rounds each: every run
  trained the (alpha, eta, beta) the study groups it by; contour PNG,
  grouped table (best of a real group of two, relative to the real
  baseline) and HParams sessions; a rerun trains nothing."""
  import json  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import hparams  # pylint: disable=g-import-not-at-top
  preset = _small(presets.get_preset("digits_effective_lr"))
  root = str(tmp_path / "elr")
  out = []
  outcome = reproduce_lib.reproduce(preset, root, {}, echo=out.append)
  assert set(outcome.values()) == {"ran"} and len(outcome) == 4
  prefix = os.path.join(root, "digits_effective_lr_effective_lr")
  with open(prefix + ".png", "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
  with open(prefix + ".csv") as f:
    rows = list(csv.DictReader(f))
  # eta/(1-beta): 0.1 at alpha 0.1 (= .1/1 = .05/.5, one group of two);
  # 0.1 alone at alpha 10.
  assert sorted((float(r["alpha"]), round(float(r["eta_eff"]), 6),
                 int(r["members"])) for r in rows) == [
                     (0.1, 0.1, 2), (10.0, 0.1, 1)]
  assert all(r["status"] == "ok" for r in rows)
  central = presets.get_preset("digits_effective_lr").runs[-1].name
  with open(os.path.join(root, central, "summary.json")) as f:
    central_acc = json.load(f)["centralized"]["accuracy"]
  sessions = hparams.read_hparams(root)
  (study,) = preset.studies
  relative = {}  # run -> its final accuracy / the centralized accuracy.
  for name in study.runs:
    claimed = preset.run(name).flags
    with open(os.path.join(root, name, "hparams.json")) as f:
      recorded = json.load(f)
    # What the run trained is what the study reads from the preset.
    for flag in ("alpha", "client_learning_rate", "server_momentum"):
      assert recorded[flag] == pytest.approx(claimed[flag]), (name, flag)
    with open(os.path.join(root, name, "summary.json")) as f:
      entry = json.load(f)["methods"]["fedavgm"]
    assert entry["rounds"] == 2, name
    relative[name] = entry["final_accuracy"] / central_acc
    # HParams: one session per (run, method), readable from the sweep's root.
    s = sessions[f"{name}/fedavgm/tensorboard"]
    for flag in ("alpha", "client_learning_rate", "server_momentum"):
      assert s["hparams"][flag] == pytest.approx(claimed[flag]), (name, flag)
    assert s["status"] == "success"
    assert s["metrics"]["final_accuracy"] == pytest.approx(
        entry["final_accuracy"])
  assert len([v for v in sessions.values() if v["hparams"]]) == 4
  for r in rows:  # Best of the group, relative to our centralized run.
    members = [n for n in study.runs
               if preset.run(n).flags["alpha"] == float(r["alpha"])]
    best = max(members, key=lambda n: relative[n])
    assert float(r["best_value"]) == pytest.approx(relative[best])
    assert relative[r["best_run"]] == relative[best]
  assert "client_learning_rate" in sessions["."]["experiment"]
  # Rerun: everything finished, nothing trains; report rebuilt.
  ran = []
  outcome = reproduce_lib.reproduce(preset, root, {}, run_fn=ran.append,
                                    echo=out.append)
  assert not ran and set(outcome.values()) == {"finished"}
