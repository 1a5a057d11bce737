"""Exact-value tests of rounds-to-target and McMahan et al. 2017's knobs."""

import math

import numpy as np
import pytest

from federated_vision.evaluation import convergence as cv


def test_best_so_far_is_running_max_ignoring_nan():
  np.testing.assert_array_equal(cv.best_so_far([0.1, 0.3, 0.2, 0.5, 0.4]),
                                [0.1, 0.3, 0.3, 0.5, 0.5])
  np.testing.assert_array_equal(cv.best_so_far([0.2, np.nan, 0.1, 0.3]),
                                [0.2, 0.2, 0.2, 0.3])
  assert cv.best_so_far([]).size == 0
  with pytest.raises(ValueError, match="accuracies"):
    cv.best_so_far([[0.1]])


def test_rounds_to_target_linear_interpolation_uneven_rounds():
  rounds = [1, 5, 20, 100]
  acc = [0.1, 0.5, 0.7, 0.9]
  # Between (5, .5) and (20, .7): 5 + (.6 - .5)/(.2) * 15 = 12.5.
  assert cv.rounds_to_target(rounds, acc, 0.6) == pytest.approx(12.5)
  # Between (20, .7) and (100, .9): 20 + .25 * 80 = 40.
  assert cv.rounds_to_target(rounds, acc, 0.75) == pytest.approx(40.0)


def test_rounds_to_target_exact_hit_returns_that_round():
  assert cv.rounds_to_target([1, 5, 20], [0.1, 0.5, 0.7], 0.5) == 5.0
  assert cv.rounds_to_target([1, 5, 20], [0.1, 0.5, 0.7], 0.7) == 20.0


def test_rounds_to_target_first_point_already_above():
  assert cv.rounds_to_target([3, 6], [0.8, 0.9], 0.5) == 3.0


def test_rounds_to_target_never_reached_is_none():
  assert cv.rounds_to_target([1, 2, 3], [0.1, 0.2, 0.3], 0.31) is None
  assert cv.rounds_to_target([], [], 0.5) is None


def test_rounds_to_target_uses_monotone_curve():
  # Raw curve dips: .6 at round 10, .4 at 20, .8 at 30. Best-so-far is
  # .6, .6, .8, so .7 is reached between 20 (.6) and 30 (.8): 25.
  assert cv.rounds_to_target([10, 20, 30], [0.6, 0.4, 0.8], 0.7) == \
      pytest.approx(25.0)
  # A dip below the target after reaching it does not matter.
  assert cv.rounds_to_target([10, 20, 30], [0.2, 0.8, 0.1], 0.8) == 20.0


def test_rounds_to_target_nan_evaluations():
  # NaN at round 20 is skipped by the running max: segment (10,.5)-(20,.5)
  # stays .5, then (20,.5)-(30,.9): 20 + .5 * 10 = 25 for target .7.
  assert cv.rounds_to_target([10, 20, 30], [0.5, np.nan, 0.9], 0.7) == \
      pytest.approx(25.0)
  # Nothing finite before the first hit: that round.
  assert cv.rounds_to_target([10, 20], [np.nan, 0.9], 0.7) == 20.0


def test_rounds_to_target_validation():
  with pytest.raises(ValueError, match="strictly increasing"):
    cv.rounds_to_target([1, 1, 2], [0.1, 0.2, 0.3], 0.2)
  with pytest.raises(ValueError, match="equal length"):
    cv.rounds_to_target([1, 2], [0.1], 0.2)
  with pytest.raises(ValueError, match="target"):
    cv.rounds_to_target([1, 2], [0.1, 0.2], float("nan"))


def test_speedup():
  assert cv.speedup(100.0, 25.0) == 4.0
  assert cv.speedup(None, 25.0) is None
  assert cv.speedup(100.0, None) is None
  with pytest.raises(ValueError, match="rounds"):
    cv.speedup(100.0, 0.0)
  with pytest.raises(ValueError, match="reference_rounds"):
    cv.speedup(-1.0, 2.0)
  ref = ([10, 20, 30, 40], [0.2, 0.4, 0.6, 0.8])  # .6 at round 30.
  run = ([1, 2, 3], [0.3, 0.5, 0.7])  # .6 at round 2.5.
  assert cv.speedup_to_target(ref, run, 0.6) == pytest.approx(12.0)
  assert cv.speedup_to_target(ref, run, 0.75) is None  # run never gets .75.


@pytest.mark.parametrize("c,k,m", [
    (0.1, 100, 10), (0.0, 100, 1), (1.0, 100, 100), (0.2, 100, 20),
    (0.5, 100, 50), (0.1, 30, 3), (0.05, 50, 3),  # 2.5 rounds half up.
    (0.01, 10, 1),  # 0.1 -> 0, then max(., 1).
    (0.14, 10, 1), (0.15, 10, 2), (0.3, 7, 2),  # 2.1 -> 2.
])
def test_clients_per_round(c, k, m):
  assert cv.clients_per_round(c, k) == m


def test_clients_per_round_validation():
  with pytest.raises(ValueError, match="client_fraction"):
    cv.clients_per_round(1.5, 10)
  with pytest.raises(ValueError, match="client_fraction"):
    cv.clients_per_round(float("nan"), 10)
  with pytest.raises(ValueError, match="num_clients"):
    cv.clients_per_round(0.1, 0)
  with pytest.raises(ValueError, match="num_clients"):
    cv.clients_per_round(0.1, 2.5)


def test_local_updates_and_fedsgd():
  # McMahan Table 2 (MNIST, n = 600 per client): B=10, E=1 -> u = 60;
  # B=50, E=5 -> 60; B=inf, E=1 -> 1 (FedSGD); B=inf, E=20 -> 20.
  assert cv.local_updates_per_round(600, 10, 1) == 60.0
  assert cv.local_updates_per_round(600, 50, 5) == 60.0
  assert cv.local_updates_per_round(600, None, 1) == 1.0
  assert cv.local_updates_per_round(600, math.inf, 20) == 20.0
  with pytest.raises(ValueError, match="batch_size"):
    cv.local_updates_per_round(600, 0, 1)
  with pytest.raises(ValueError, match="epochs"):
    cv.local_updates_per_round(600, 10, 0)
  assert cv.is_fedsgd(None, 1)
  assert not cv.is_fedsgd(None, 5) and not cv.is_fedsgd(10, 1)


def test_fedsgd_training_spec():
  # The real path: the methods registry's local data side of each algorithm.
  from federated_vision.methods import MethodConfig, client_spec
  spec = client_spec(MethodConfig("fedsgd", client_batch_size=10,
                                  client_epochs=5), seed=3)
  assert spec.batch_size is None and spec.epochs == 1 and spec.seed == 3
  from federated_vision.data import client_data
  assert client_data.num_local_batches(600, spec) == 1
  spec = client_spec(MethodConfig("fedavg", client_batch_size=10,
                                  client_epochs=5))
  assert (spec.batch_size, spec.epochs) == (10, 5)
  assert client_data.num_local_batches(600, spec) == 300
  with pytest.raises(ValueError, match="batch_size"):
    client_spec(MethodConfig("fedavg", client_batch_size=-1, client_epochs=1))
  with pytest.raises(ValueError, match="epochs"):
    client_spec(MethodConfig("fedavg", client_batch_size=10, client_epochs=0))
