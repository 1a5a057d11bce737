"""McMahan et al. 2017 Figure 1 (`evaluation.model_averaging`): the mixture
maths against numpy, the parents' samples, a tiny figure's equivalences,
and its preset (`reproduce --preset=mcmahan2017_figure1`): the dry run, a
run on a random-image archive and the figure drawn from its files."""

import csv
import dataclasses
import json

import numpy as np
import pytest

from experiments import reproduce_lib
from federated_vision.experiment import averaging_runner
from federated_vision.experiment import report_lib
from federated_vision.evaluation import model_averaging as ma
from federated_vision.reproduction import plan
from federated_vision.reproduction import presets
from tests.fixtures.mnist_fixture import write_mnist

PRESET = "mcmahan2017_figure1"


def test_mix_is_theta_w_plus_one_minus_theta_w_prime():
  rng = np.random.default_rng(0)
  w = [rng.normal(size=(3, 2)), rng.normal(size=(2,))]
  w2 = [rng.normal(size=(3, 2)), rng.normal(size=(2,))]
  for theta in (-0.2, 0.0, 0.5, 1.2):
    got = ma.mix(w, w2, theta)
    for g, a, b in zip(got, w, w2):
      np.testing.assert_array_equal(g, theta * a + (1 - theta) * b)
  np.testing.assert_array_equal(ma.mix(w, w2, 1.0)[0], w[0])
  with pytest.raises(ValueError, match="shapes"):
    ma.mix(w, [w2[0].T, w2[1]], 0.5)
  with pytest.raises(ValueError, match="tensors"):
    ma.mix(w, w2[:1], 0.5)


def test_thetas_and_disjoint_samples():
  t = ma.thetas()
  assert len(t) == 50 and t[0] == -0.2 and t[-1] == 1.2
  np.testing.assert_allclose(np.diff(t), 1.4 / 49)
  a, b = ma.disjoint_samples(2000, 600, seed=3)
  assert len(a) == len(b) == 600 and not set(a) & set(b)
  with pytest.raises(ValueError, match="disjoint"):
    ma.disjoint_samples(1000, 600, 0)
  with pytest.raises(ValueError, match="num_thetas"):
    ma.thetas(1)


def test_tiny_figure1_endpoints_are_the_parents(tmp_path):
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  digits = datasets.load_digits()
  x = (digits.images / 16.0).astype(np.float32)[..., None]
  y = digits.target.astype(np.int64)

  def model_fn(seed):
    init = tf.keras.initializers.GlorotUniform(seed=seed)
    return tf.keras.Sequential([
        tf.keras.layers.Flatten(input_shape=(8, 8, 1)),
        tf.keras.layers.Dense(16, activation="relu", kernel_initializer=init),
        tf.keras.layers.Dense(10, kernel_initializer=init)])

  c = ma.figure1(model_fn, x, y, seed=1, num_thetas=15, parent_examples=100,
                 epochs=3)
  assert c.thetas[2] == pytest.approx(0.0) and c.thetas[12] == pytest.approx(
      1.0) and c.thetas[7] == pytest.approx(0.5)
  for panel in ("independent", "shared"):
    losses = getattr(c, panel)
    loss_w, loss_w_prime = c.parents[panel]
    assert losses[12] == pytest.approx(loss_w, rel=1e-5)        # theta = 1
    assert losses[2] == pytest.approx(loss_w_prime, rel=1e-5)   # theta = 0
    assert losses[7] == pytest.approx(c.average[panel], rel=1e-5)
  assert c.settings["updates_per_parent"] == 3 * 2  # E x ceil(100 / 50).
  recorded = ma.to_summary(c, "digits")  # What an averaging run records.
  assert len(recorded["thetas"]) == 15 and recorded["data"] == "digits"
  assert recorded["shared"][2] == c.shared[2]
  assert recorded["independent"] == [float(v) for v in c.independent]
  assert recorded["settings"]["parent_examples"] == 100
  for panel in ma.INITIALISATIONS:
    assert recorded["best_parent_loss"][panel] == min(c.parents[panel])


def _dry_run():
  out = []
  reproduce_lib.reproduce(PRESET, "/r", {}, dry_run=True, echo=out.append)
  return " ".join("\n".join(out).split())


def test_figure1_preset_dry_run_lists_its_settings_and_sources():
  (run,) = presets.get_preset(PRESET).runs
  flags = run.flags  # §2: 240 updates of 50 on 600 examples each.
  assert flags["client_epochs"] * -(-flags["examples_per_client"] //
                                    flags["client_batch_size"]) == 240
  text = _dry_run()
  assert ("averaging mnist_2nn_figure1_averaging: --client_batch_size=50 "
          "--client_epochs=20 --client_learning_rate=0.1 --dataset=mnist "
          "--examples_per_client=600 --model=mnist_2nn --seed=0 [not "
          "train_main: McMahan 2017 Figure 1's model averaging") in text
  assert "base (every run" not in text  # No train_main defaults listed.
  assert ("Training was via SGD with a fixed learning rate of 0.1 for 240 "
          "updates on minibatches of size 50") in text
  assert "non-overlapping IID samples of 600 examples" in text
  said = []  # --estimate projects train_main runs; this one is said.
  assert reproduce_lib.estimable((run,), said.append) == []
  assert said == [f"{run.name}: not estimated: not a train_main run "
                  f"({averaging_runner.PROGRAM}; {averaging_runner.COST})"]


def _scaled():
  """The preset with parents of 100 examples trained 2 epochs (ours: a
  test's budget; everything else as the preset)."""
  preset = presets.get_preset(PRESET)
  (run,) = preset.runs
  return dataclasses.replace(preset, runs=(dataclasses.replace(
      run, flags=dict(run.flags, examples_per_client=100,
                      client_epochs=2)),))


def test_figure1_preset_runs_and_draws_from_its_files(tmp_path):
  """The preset (scaled: 100 examples, E = 2) on a random-image MNIST
  archive (the machinery, not the figure): without data one line naming
  the flag; the run records the caption's 50 thetas and its E x ceil(n /
  B) updates per parent; the figure's CSV is the run's numbers, its
  endpoints the parents', its line the best parent; --report_only redraws
  byte-identical PNGs."""
  with pytest.raises(plan.PlanError, match="--dataset=mnist: "
                     "tensorflow-datasets 'mnist' not prepared.*--data_dir"):
    reproduce_lib.reproduce(PRESET, str(tmp_path), {"data_dir": str(
        tmp_path)}, echo=lambda _: None)
  write_mnist(str(tmp_path / "mnist"), n_train=300, n_test=10)
  out = []
  preset = _scaled()
  reproduce_lib.reproduce(preset, str(tmp_path / "root"), {
      "data_source": "archive", "archive_path": str(tmp_path / "mnist")},
                          echo=out.append)
  assert any("1/2 w + 1/2 w' vs the better parent" in line for line in out)
  root = tmp_path / "root"
  with open(root / "mnist_2nn_figure1_averaging" / "summary.json") as f:
    recorded = json.load(f)[ma.SUMMARY_KEY]
  assert recorded["settings"]["updates_per_parent"] == 2 * 2  # E ceil(n/B)
  assert recorded["settings"]["parent_examples"] == 100
  thetas = np.array(recorded["thetas"])
  np.testing.assert_allclose(thetas, np.linspace(-0.2, 1.2, 50))
  with open(root / f"{PRESET}_figure1.csv", newline="") as f:
    rows = list(csv.DictReader(f))
  for panel, title in (("independent", "independent initialisation (left)"),
                       ("shared", "shared initialisation (right)")):
    points = [(float(r["x"]), float(r["y"])) for r in rows
              if r["panel"] == title and r["kind"] == "point"]
    np.testing.assert_allclose(points, list(zip(thetas, recorded[panel])))
    loss_w, loss_w_prime = recorded["parents"][panel]
    at = dict(points)
    assert at[thetas[42]] == pytest.approx(loss_w, rel=1e-5)       # 1.0
    assert at[thetas[7]] == pytest.approx(loss_w_prime, rel=1e-5)  # 0.0
    (line,) = [r for r in rows if r["panel"] == title
               and r["series"] == "best parent"]
    assert float(line["y"]) == min(loss_w, loss_w_prime)
  png = root / f"{PRESET}_figure1.png"
  first = png.read_bytes()
  assert len(first) > 10_000
  markdown = (root / f"{PRESET}.md").read_text()
  assert f"![Figure 1: loss on the full MNIST training set" in markdown
  reproduce_lib.reproduce(preset, str(root), {}, report_only=True,
                          echo=lambda _: None)
  assert png.read_bytes() == first
  # report_main tabulates train_main runs: this one is named, not misread.
  with pytest.raises(report_lib.ReportError, match="an averaging run"):
    report_lib.gather(str(root))


def test_an_averaging_run_refuses_other_models_and_foreign_directories(
    tmp_path):
  """Before any data is read or file written: one ConfigError naming the
  flag, or the file no run writes."""
  (run,) = presets.get_preset(PRESET).runs
  values = dict(run.flag_dict(), root_output_dir=str(tmp_path),
                experiment_name=run.name)
  from federated_vision.errors import ConfigError  # pylint: disable=g-import-not-at-top
  with pytest.raises(ConfigError, match="--model=mnist_cnn: an averaging "
                     "run .* trains --model=mnist_2nn"):
    averaging_runner.settings(dict(values, model="mnist_cnn"))
  (tmp_path / run.name).mkdir()
  (tmp_path / run.name / "notes.txt").write_text("mine")
  with pytest.raises(ConfigError, match="holds notes.txt, which no run "
                     "writes"):
    averaging_runner.run(values)
  assert sorted(p.name for p in (tmp_path / run.name).iterdir()) == [
      "notes.txt"]
