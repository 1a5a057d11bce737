"""`--estimate` prints the client-state store's size of a method with
per-client state (SCAFFOLD): min(K, R x C) x P x 4 bytes."""

import re

import numpy as np

from federated_vision.experiment import config as config_lib
from experiments import estimate
from experiments import estimate_state
from experiments.estimate_calibrate import Calibration
from federated_vision.evaluation import cost
from federated_vision.models import digits as digits_models
from federated_vision.training import client_states

T = cost.Timing


def test_inaturalist_population_on_a_2_4m_weight_model(monkeypatch):
  config = config_lib.replace_fields(config_lib.ExperimentConfig(), dict(
      dataset="inaturalist", inat_split="user_120k", image_size=299,
      model="mobilenet_v2_gn", client_batch_size=64, methods=["scaffold"],
      clients_per_round=10, total_rounds=5000, rounds_per_eval=250,
      centralized_epochs=0))
  cal = estimate.calibration_config(config, estimate.Settings())
  recorded = Calibration(
      T(30.0, 40.0), T(10.0, 12.0), {"scaffold": T(14.0, 25.0)}, T(0.8, 1.2),
      8, 128, cost.ZERO, 120.0, num_clients=4, num_classes=3,
      input_shape=(299, 299, 3),
      client_state_copies={"scaffold": 1})  # As its built process keeps.
  built = []

  def weights(config, num_classes, input_shape):
    built.append((num_classes, input_shape))
    return 2_400_000
  monkeypatch.setattr(estimate_state, "model_weights", weights)
  e = estimate.project_run("inat", config, cal, recorded)
  # The real data's K and classes (Hsu, Qi & Brown 2020, Section 4.1), not
  # the twin's 4 clients and 3 classes.
  assert built == [(1_203, (299, 299, 3))]
  assert e.lines[-1] == (
      "    scaffold: client-state store min(K=9275, R x C=5000 x 10) clients "
      "x 1 x 2400000 weights x 4 bytes = 89040000000 bytes (89.04 GB) on "
      "disk in scaffold/client_states/, read 10 clients a round")
  no_state = config_lib.replace_fields(config, dict(methods=["fedavg"]))
  assert not estimate_state.store_lines(no_state, 9_275, lambda: 1 / 0,
                                       lambda m: 0)


def test_train_main_estimate_prints_the_store_size(tmp_path, train_in_process):
  r = train_in_process("--estimate", "--total_rounds=2", "--estimate_rounds=1",
                       "--centralized_epochs=0", "--methods=scaffold,fedavg",
                       f"--root_output_dir={tmp_path / 'out'}",
                       "--experiment_name=smoke")
  assert r.returncode == 0, r.stderr
  model = digits_models.create_digits_cnn()
  p = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
  # Digits' defaults: K = 20, C = 10; 2 rounds see min(20, 20) clients.
  size = client_states.projected_bytes(20, 2, 10, p)
  assert size == 20 * p * 4
  lines = [l for l in r.stdout.splitlines() if "client-state store" in l]
  assert lines == [
      f"    scaffold: client-state store min(K=20, R x C=2 x 10) clients x 1 "
      f"x {p} weights x 4 bytes = {size} bytes ({size / 1e9:.2f} GB) on disk "
      "in scaffold/client_states/, read 10 clients a round"]
  assert "scaffold:" in r.stdout and "fedavg:" in r.stdout
  assert re.search(r"scaffold: [\d.]+ s/round", r.stdout)
  assert not (tmp_path / "out").exists()
