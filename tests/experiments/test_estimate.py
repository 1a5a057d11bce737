"""`--estimate`: the projection's arithmetic on recorded timings, the scaled
shape of a real-world run, and a 2-round smoke run of `train_main --estimate`."""

import math
import os

import numpy as np
import pytest
from absl import flags

from conftest import run_module
from federated_vision.experiment import config as config_lib
from experiments import estimate
from experiments.estimate_calibrate import Calibration
from federated_vision.data import client_data as cdl
from federated_vision.errors import ConfigError
from federated_vision.evaluation import cost

T = cost.Timing


def _reference(startup, rounds, total_rounds, every, evaluation, epochs=0,
               steps=0, step=0.0):
  """The formula of `cost`'s docstring, written out in numpy."""
  n_eval = np.floor(total_rounds / every) + (total_rounds % every != 0)
  out = (startup + total_rounds * np.sum(rounds)
         + n_eval * evaluation * len(rounds))
  return out + epochs * (steps * step + evaluation)


def test_num_evaluations_every_e_rounds_and_at_the_last():
  assert cost.num_evaluations(5000, 250) == 20
  assert cost.num_evaluations(20, 5) == 4
  assert cost.num_evaluations(21, 5) == 5
  assert cost.num_evaluations(3, 10) == 1
  with pytest.raises(ValueError):
    cost.num_evaluations(0, 5)


def test_local_batches_mirror_num_local_batches():
  for n, b, e, vc in [(13, 64, 1, None), (256, 64, 1, 256), (300, 64, 2, 256),
                      (129, 64, 1, None), (5, None, 3, None), (0, 8, 1, None)]:
    spec = cdl.TrainingSpec(batch_size=b, epochs=e, virtual_client_size=vc)
    assert cost.local_batches(n, b, e, vc) == cdl.num_local_batches(n, spec)


def test_project_matches_the_reference_on_recorded_timings():
  rounds = {"fedavg": T(0.43, 0.38), "fedavgm": T(0.82, 0.36)}
  p = cost.project(T(25.0, 20.0), rounds, 20, 5, T(0.02, 0.03),
                   centralized_epochs=30, steps_per_epoch=142,
                   step_time=T(0.017, 0.021))
  wall = _reference(25.0, [0.43, 0.82], 20, 5, 0.02, 30, 142, 0.017)
  cpu = _reference(20.0, [0.38, 0.36], 20, 5, 0.03, 30, 142, 0.021)
  assert p.num_evaluations == 4
  assert p.total.wall == pytest.approx(wall, rel=1e-12)
  assert p.total.cpu == pytest.approx(cpu, rel=1e-12)
  assert p.rounds.wall == pytest.approx(20 * (0.43 + 0.82), rel=1e-12)
  assert p.evaluations.wall == pytest.approx(4 * 0.02 * 2, rel=1e-12)
  assert p.centralized.wall == pytest.approx(30 * (142 * 0.017 + 0.02))
  no_central = cost.project(T(1.0, 1.0), {"a": T(2.0, 3.0)}, 7, 3, T(0.5, 0.5))
  assert no_central.total == T(1 + 14 + 3 * 0.5, 1 + 21 + 3 * 0.5)


def test_scales_by_local_batches_and_test_examples():
  cal = cost.Work(clients=2, batches_per_client=1, test_examples=8)
  assert cost.round_scale(cal, cost.Work(100, 4, 22_690)) == 200.0
  assert cost.round_scale(cost.Work(2, 1, 8, 4),
                          cost.Work(100, 4, 22_690, 64)) == 3200.0
  assert cost.eval_scale(cal, cost.Work(100, 4, 22_690)) == 22_690 / 8
  with pytest.raises(ValueError):
    cost.round_scale(cost.Work(2, 0, 8), cal)
  assert cost.median([3.0, 1.0, 2.0]) == 2.0
  assert cost.median([4.0, 1.0, 2.0, 3.0]) == 2.5


def _table3_like(clients: int):
  return config_lib.replace_fields(config_lib.ExperimentConfig(), dict(
      dataset="inaturalist", inat_split="user_120k", image_size=299,
      model="mobilenet_v2_gn", client_batch_size=64, client_epochs=1,
      methods=["fedavg+fedvc", "fedavg+fedir+fedvc"], virtual_client_size=256,
      clients_per_round=clients, total_rounds=5000, rounds_per_eval=250,
      centralized_epochs=0, experiment_name=f"inat_c{clients}"))


def test_real_world_run_is_scaled_from_its_twin_calibration():
  settings = estimate.Settings(rounds=3, scaled_rounds=1, clients=2)
  c10, c100 = _table3_like(10), _table3_like(100)
  cal = estimate.calibration_config(c10, settings)
  # C = 10 and C = 100 share one calibration (the shape's key), and so do
  # FedAvgM and FedAvg (the same client work).
  assert cal == estimate.calibration_config(c100, settings)
  fedavgm = config_lib.replace_fields(c10, dict(
      methods=["fedavgm+fedvc", "fedavgm+fedir+fedvc"]))
  assert estimate.calibration_config(fedavgm, settings) == cal
  assert estimate.same_client_work("fedavgm+fedir+fedvc") == "fedavg+fedir+fedvc"
  assert cal.data.dataset == "synthetic_inaturalist"
  assert (cal.data.image_size, cal.data.num_clients,
          cal.data.examples_per_client) == (299, 2, 4)
  assert (cal.methods.virtual_client_size, cal.methods.client_batch_size) == (
      4, 4)
  assert (cal.training.clients_per_round, cal.training.total_rounds) == (2, 2)
  recorded = Calibration(
      build=T(30.0, 40.0), warmup_excess=T(10.0, 12.0),
      rounds={"fedavg+fedvc": T(14.0, 25.0), "fedavg+fedir+fedvc": T(15.0, 26.0)},
      evaluation=T(0.8, 1.2), test_examples=8, train_examples=128,
      step=cost.ZERO, seconds=120.0)
  e = estimate.project_run("inat_c100", c100, cal, recorded)
  # Per round: (100 clients x 256/64 = 4 batches x 64) / (2 x 1 x 4) = 3200.
  wall = _reference(40.0, [14.0 * 3200, 15.0 * 3200], 5000, 250,
                    0.8 * 22_690 / 8)
  cpu = _reference(52.0, [25.0 * 3200, 26.0 * 3200], 5000, 250,
                   1.2 * 22_690 / 8)
  assert e.projection.num_evaluations == 20
  assert e.projection.total.wall == pytest.approx(wall, rel=1e-12)
  assert e.projection.total.cpu == pytest.approx(cpu, rel=1e-12)
  text = "\n".join(e.lines)
  assert "synthetic twin synthetic_inaturalist" in text
  assert "-> x3200; C=100 x 4 batches of B=64 (25600 examples)" in text


# A two-point scaled calibration (rounds of 1 and of 4 clients), recorded.
TWO_POINT = Calibration(
    build=T(30.0, 40.0), warmup_excess=T(10.0, 12.0),
    rounds={"fedavg+fedvc": T(6.0, 11.0), "fedavg+fedir+fedvc": T(7.0, 12.0)},
    evaluation=T(0.9, 1.3), test_examples=8, train_examples=128,
    step=cost.ZERO, seconds=120.0,
    rounds_one={"fedavg+fedvc": T(3.0, 5.0),
                "fedavg+fedir+fedvc": T(4.0, 6.0)},
    evaluation_half=T(0.6, 0.9), half_examples=4)


def _two_point_projection(run, cal_units: float, units: float):
  """(the estimate of `run` from TWO_POINT, the reference wall and CPU
  seconds): each round on the line through 1 x and 4 x `cal_units`
  examples, at the run's `units` examples; an evaluation on the line
  through 4 and 8 test examples, at 22,690."""
  cal = estimate.calibration_config(
      run, estimate.Settings(rounds=3, scaled_rounds=2, clients=4))
  e = estimate.project_run("inat_c10", run, cal, TWO_POINT)
  def line(small, large, u_small=cal_units, u_large=4 * cal_units, at=units):
    unit = (large - small) / (u_large - u_small)
    return small - u_small * unit + at * unit
  ev = lambda small, large: line(small, large, 4, 8, 22_690)
  wall = _reference(40.0, [line(3.0, 6.0), line(4.0, 7.0)], 5000, 250,
                    ev(0.6, 0.9))
  cpu = _reference(52.0, [line(5.0, 11.0), line(6.0, 12.0)], 5000, 250,
                   ev(0.9, 1.3))
  return e, wall, cpu


def test_fedvc_with_several_epochs_and_seeds_is_priced_exactly():
  """FedVC, E = 3, N_VC = 256, B = 64, C = 10, --seeds=3: a client's round
  trains E * N_VC = 768 examples (12 batches), so a round E * C * N_VC =
  7,680; the seeds multiply the total (every earlier estimate test had
  E = 1 and one seed: dropping E under FedVC went unnoticed)."""
  e_local, n_vc, seeds = 3, 256, 3
  run = config_lib.replace_fields(_table3_like(10), dict(
      client_epochs=e_local, virtual_client_size=n_vc))
  cal = estimate.calibration_config(run, estimate.Settings(
      rounds=3, scaled_rounds=2, clients=4))
  assert (cal.methods.client_epochs, cal.methods.virtual_client_size,
          cal.methods.client_batch_size) == (e_local, 4, 4)
  # Calibration points: 1 client and 4 clients of E x 4 = 12 examples; the
  # run: C x E x N_VC.
  e, wall, cpu = _two_point_projection(run, e_local * 4, 10 * e_local * n_vc)
  assert e.projection.total.wall == pytest.approx(wall, rel=1e-12)
  assert e.projection.total.cpu == pytest.approx(cpu, rel=1e-12)
  text = "\n".join(e.lines)
  assert "C=10 x 12 batches of B=64 (7680 examples)" in text
  assert f"of 3 batch(es) of B=4" in text  # E x N_VC_cal / B_cal.
  # --seeds=3: three repetitions of that run.
  out = []
  estimate.report([e._replace(seeds=seeds)], "1 local worker(s)",
                  out.append, process_startup=2.0)
  assert e._replace(seeds=seeds).total == T(seeds * wall, seeds * cpu)
  total = [l for l in out if l.startswith("total: ")][0]
  assert total.startswith(f"total: {seeds} run(s), wall ")
  assert f"({seeds * wall + 2.0:.0f} s)" in total
  assert "per seed; x 3 seeds: wall " in out[1]


def test_linear_fit_through_two_points_and_its_noise_fallback():
  fixed, unit = cost.linear_fit(T(3.0, 5.0), T(6.0, 11.0), 4, 16)
  assert fixed == T(2.0, 3.0) and unit == T(0.25, 0.5)
  assert cost.on_line(fixed, unit, 256) == T(2.0 + 64.0, 3.0 + 128.0)
  # A larger point faster than the smaller one: proportional to the larger.
  fixed, unit = cost.linear_fit(T(6.0, 5.0), T(5.0, 11.0), 4, 16)
  assert fixed == T(0.0, 3.0) and unit == T(5.0 / 16, 0.5)
  with pytest.raises(ValueError):
    cost.linear_fit(T(1.0, 1.0), T(2.0, 2.0), 4, 4)


def test_two_point_calibration_extrapolates_the_line():
  # Points at 1 x 4 and 4 x 4 examples; the run: 10 x 4 x 64 = 2560.
  e, wall, cpu = _two_point_projection(_table3_like(10), 4, 2560)
  assert e.projection.total.wall == pytest.approx(wall, rel=1e-12)
  assert e.projection.total.cpu == pytest.approx(cpu, rel=1e-12)
  assert "(2560 examples)" in "\n".join(e.lines)


def test_centralized_run_uses_published_training_examples():
  central = config_lib.replace_fields(_table3_like(10), dict(
      methods=[], algorithm=["fedavg"], total_rounds=1, rounds_per_eval=1,
      centralized_epochs=30))
  target = estimate.real_sizes(central, estimate.tasks.get_task("inaturalist"))
  assert (target.train_examples, target.test_examples) == (120_300, 22_690)
  assert target.examples_per_client == pytest.approx(120_300 / 9_275)
  recorded = Calibration(T(1.0, 1.0), cost.ZERO, {"fedavg": T(2.0, 2.0)},
                         T(0.5, 0.5), 8, 128, T(0.25, 0.5), 10.0)
  cal = estimate.calibration_config(central, estimate.Settings())
  e = estimate.project_run("central", central, cal, recorded)
  steps = math.ceil(120_300 / 64)
  # One plain round: 4 clients x 4 examples -> 10 clients x 12.97 (one
  # batch each, not full); a centralized step: 64/4 x.
  ev = 0.5 * 22_690 / 8
  wall = _reference(1.0, [2.0 * 10 * (120_300 / 9_275) / 16], 1, 1, ev, 30,
                    steps, 0.25 * 16)
  assert e.projection.total.wall == pytest.approx(wall, rel=1e-12)


def test_real_world_run_without_data_is_still_validated():
  # No --split_csv etc.: calibrated on the twin, but every other flag is
  # checked (here an unknown method).
  values = config_lib.flat(_table3_like(10))
  assert estimate.run_config(values).data.dataset == "inaturalist"
  with pytest.raises(ConfigError, match="--methods"):
    estimate.run_config(dict(values, methods=["nosuch+fedvc"]))


def test_train_main_estimate_smoke_creates_no_directory(tmp_path,
                                                        train_in_process):
  root = tmp_path / "out"
  # In this process (conftest's train_in_process): its output, not the
  # process.
  r = train_in_process("--estimate", "--total_rounds=2",
                       "--estimate_rounds=1", "--centralized_epochs=1",
                       "--rounds_per_eval=1", "--algorithm=fedavg",
                       f"--root_output_dir={root}", "--experiment_name=smoke")
  assert r.returncode == 0, r.stderr
  out = r.stdout
  assert "[estimate] calibration took" in out
  assert "run smoke: wall" in out and "CPU" in out
  assert "fedavg:" in out and "s/round" in out
  assert "= start-up" in out and "2 rounds" in out
  assert "total: 1 run(s), wall" in out
  assert "nothing was trained or written" in out
  assert not root.exists()


def test_reproduce_estimate_refuses_dry_run():
  r = run_module("experiments.reproduce", "--preset=hsu2020_table3",
                 "--estimate", "--dry_run", timeout=120)
  assert r.returncode == 2
  assert r.stderr.strip().splitlines()[-1] == (
      "reproduce.py: error: --estimate: not with --dry_run or --report_only")
  assert "Traceback" not in r.stderr


def test_estimate_settings_need_estimate(parse):
  # Were accepted and ignored without --estimate (issue: friction).
  estimate.define_flags()
  parsed = parse("--estimate", "--estimate_rounds=1", "--estimate_clients=3")
  assert estimate.settings_from_flags(parsed) == estimate.Settings(
      rounds=1, scaled_rounds=2, clients=3, batch_size=4)
  assert not parse().estimate  # Defaults, no --estimate: accepted.
  for name in estimate.SETTING_FLAGS:
    with pytest.raises(flags.IllegalFlagValueError) as e:
      parse(f"--{name}=5")
    assert str(e.value) == (f"flag --{name}=5: only with --estimate (a "
                            "setting of its calibration)")


def test_full_train_loss_prices_each_evaluation_over_the_training_set_too():
  """An evaluation of a --full_train_loss run also passes over the 120,300
  training examples: the projection adds, per method and evaluation, the
  calibrated test-set evaluation scaled by 120,300 / 8 examples."""
  settings = estimate.Settings(rounds=3, scaled_rounds=1, clients=2)
  recorded = Calibration(
      build=T(30.0, 40.0), warmup_excess=T(10.0, 12.0),
      rounds={"fedavg+fedvc": T(14.0, 25.0),
              "fedavg+fedir+fedvc": T(15.0, 26.0)},
      evaluation=T(0.8, 1.2), test_examples=8, train_examples=128,
      step=cost.ZERO, seconds=120.0)
  plain = _table3_like(10)
  full = config_lib.replace_fields(plain, dict(full_train_loss=True))
  e_plain, e_full = (estimate.project_run(
      "inat", run, estimate.calibration_config(run, settings), recorded)
                     for run in (plain, full))
  extra = 20 * 2 * 0.8 * 120_300 / 8  # evaluations x methods x seconds
  assert e_full.projection.total.wall - e_plain.projection.total.wall == (
      pytest.approx(extra, rel=1e-12))
  assert "(142990 examples, test and training)" in "\n".join(e_full.lines)
