"""McMahan et al. 2017 Figure 1 (`evaluation.model_averaging`): the mixture
maths against numpy, the parents' samples, a tiny figure's equivalences, and
the binary's smoke run."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from federated_vision.evaluation import model_averaging as ma


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
  paths = ma.write_curves(c, "digits", str(tmp_path))
  rows = list(csv.reader(open(paths[0])))
  assert tuple(rows[0]) == ma.CSV_COLUMNS and len(rows) == 16
  assert float(rows[3][2]) == c.shared[2]
  assert json.load(open(paths[1]))["settings"]["parent_examples"] == 100


def test_binary_smoke_and_one_line_error(tmp_path):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  binary = [sys.executable, "-m", "experiments.figure1_main"]
  bad = subprocess.run(binary + ["--synthetic", "--data_dir=/x"], cwd=REPO,
                       env=env, capture_output=True, text=True, check=False)
  assert bad.returncode == 2 and "Traceback" not in bad.stderr
  assert bad.stderr.strip().endswith(
      "give one of --data_dir, --archive_path or --synthetic (got "
      "--data_dir, --synthetic)")
  ok = subprocess.run(binary + ["--synthetic", "--num_thetas=3",
                                f"--output_dir={tmp_path}"], cwd=REPO,
                      env=env, capture_output=True, text=True, check=False)
  assert ok.returncode == 0, ok.stderr[-2000:]
  rows = list(csv.reader(open(tmp_path / "figure1.csv")))
  assert len(rows) == 4
  np.testing.assert_allclose([float(r[0]) for r in rows[1:]], [-0.2, 0.5, 1.2])
  saved = json.load(open(tmp_path / "figure1.json"))
  assert saved["settings"]["updates_per_parent"] == 240  # §2: 240 updates.
  assert "1/2 w + 1/2 w'" in ok.stdout
