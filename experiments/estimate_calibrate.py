"""Calibration of `experiments.estimate`: timed rounds in a temporary directory.

`calibrate(config, central)` runs a calibration config (1 warm-up round, then
timed rounds, one evaluation at the last) on the config's TFF workers in a
temporary directory and records, per method, the mean timed round's wall and CPU
seconds (this process + its local workers, `/proc/<pid>/stat`), one
evaluation, the build time up to each method's first round, the first
round's and first evaluation's excess over a steady one and, if asked, one
centralized SGD step (Keras `fit`, as `centralized.train_centralized`).
"""

import os
import tempfile
import time
from typing import Dict, List, NamedTuple, Optional, Tuple

from federated_vision.experiment import config as config_lib
from federated_vision.experiment import outputs
from federated_vision.experiment import runner
from federated_vision.evaluation import cost
from federated_vision.runtime import live_workers

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _pid_cpu(pid: int) -> float:
  try:
    with open(f"/proc/{pid}/stat") as f:
      fields = f.read().rsplit(")", 1)[1].split()
  except OSError:
    return 0.0
  return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def _worker_pids() -> List[int]:
  return live_workers.live_worker_pids()


def now() -> cost.Timing:
  """(wall, CPU of this process + its local workers) seconds, now."""
  return cost.Timing(time.perf_counter(), time.process_time() + sum(
      _pid_cpu(p) for p in _worker_pids()))


def process_age() -> float:
  """Seconds since this process started (/proc/self/stat starttime)."""
  with open("/proc/self/stat") as f:
    start = int(f.read().rsplit(")", 1)[1].split()[19]) / _CLK_TCK
  with open("/proc/uptime") as f:
    return float(f.read().split()[0]) - start


def _minus(a: cost.Timing, b: cost.Timing) -> cost.Timing:
  return cost.Timing(a.wall - b.wall, a.cpu - b.cpu)


class Calibration(NamedTuple):
  """Recorded timings of one shape (`calibrate`)."""
  build: cost.Timing            # Workers, data, each method's process.
  warmup_excess: cost.Timing    # Sum over methods + first evaluation.
  rounds: Dict[str, cost.Timing]  # Method -> mean timed round.
  evaluation: cost.Timing
  test_examples: int
  train_examples: int
  step: cost.Timing             # One centralized SGD step (ZERO if unused).
  seconds: float                # The calibration's own wall time.
  # Two-point calibrations only: method -> mean round of ONE client, and
  # one evaluation of the first `half_examples` test examples.
  rounds_one: Dict[str, cost.Timing] = {}
  evaluation_half: Optional[cost.Timing] = None
  half_examples: int = 0
  # The calibrated data: K, classes, one example's shape (`estimate_state`).
  num_clients: int = 0
  num_classes: int = 0
  input_shape: Tuple[int, ...] = ()
  # Method -> model-sized values its process keeps per client (its store).
  client_state_copies: Dict[str, int] = {}


class _TimedSampler:
  """Records `now()` at the start of every round (`round_keys`); with
  `two_point`, the even rounds after the warm-up train only the first
  client drawn."""

  def __init__(self, sampler, marks, two_point: bool = False):
    self._sampler, self._marks, self._two_point = sampler, marks, two_point

  def round_keys(self, round_num):
    self._marks.append(now())
    keys = self._sampler.round_keys(round_num)
    return keys[:1] if self._two_point and round_num % 2 == 0 else keys

  def __getattr__(self, name):
    return getattr(self._sampler, name)


def _evaluate_fn(exp):
  # Local: TF / TFF only when --estimate calibrates (not at start-up).
  from federated_vision.evaluation import keras_eval  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  fed = exp.fed_data
  eval_ds = cdl.build_eval_dataset(fed.test_data, fed.eval_map_fn)
  if exp.scenario is None:
    return eval_ds, keras_eval.build_keras_evaluate_fn(exp.keras_model_fn,
                                                          eval_ds)
  # Local: TF / TFF only when --estimate calibrates (not at start-up).
  from federated_vision.mixing import scenarios as mixing_scenarios  # pylint: disable=g-import-not-at-top
  return eval_ds, mixing_scenarios.build_group_evaluate_fn(
      exp.keras_model_fn, eval_ds, fed.num_classes, exp.scenario.groups)


def _central_step(exp, steps_cap: int = 20) -> Tuple[cost.Timing, cost.Timing]:
  """(one centralized SGD step, the first epoch's excess): Keras fit as in
  `centralized.train_centralized`, one warm epoch then one timed."""
  # Local: TF / TFF only when --estimate calibrates (not at start-up).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from federated_vision import centralized  # pylint: disable=g-import-not-at-top
  c = exp.config
  b = c.methods.client_batch_size or 32
  model = exp.keras_model_fn()
  model.compile(optimizer=tf.keras.optimizers.SGD(c.methods.client_learning_rate),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True))
  ds = centralized.pooled_training_dataset(exp.fed_data, b, 0, 0).take(steps_cap)
  steps = sum(1 for _ in ds)
  t0 = now()
  model.fit(ds, epochs=1, verbose=0)
  t1 = now()
  model.fit(ds, epochs=1, verbose=0)
  t2 = now()
  step = _minus(t2, t1).scaled(1 / steps)
  return step, _minus(_minus(t1, t0), _minus(t2, t1))


def _timed_pair(fn, weights) -> Tuple[object, cost.Timing]:
  a = now()
  result = fn(weights)
  return result, _minus(now(), a)


def calibrate(cal: config_lib.ExperimentConfig, central: bool,
              two_point: bool = False) -> Calibration:
  """Runs `cal` (a `calibration_config`) in a temporary directory.

  With `two_point`, rounds 2, 4, ... train one client (`rounds_one`) and
  rounds 3, 5, ... all C_cal (`rounds`); an evaluation of half the test set
  is timed beside the full one."""
  # Local: TF / TFF only when --estimate calibrates (not at start-up).
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import keras_eval  # pylint: disable=g-import-not-at-top
  start = now()
  with tempfile.TemporaryDirectory(prefix="fv_estimate_") as tmp:
    cal = config_lib.replace_fields(cal, {"root_output_dir": tmp})
    with cal.execution.context():
      exp = runner.build_experiment(cal)
      outputs.write_partition_report(exp)  # Part of a run's start-up.
      eval_ds, evaluate = _evaluate_fn(exp)
      test_examples = sum(int(b["y"].shape[0]) for b in eval_ds)
      half_n = test_examples // 2 if two_point and exp.scenario is None else 0
      if half_n:
        evaluate_half = keras_eval.build_keras_evaluate_fn(
            exp.keras_model_fn, eval_ds.unbatch().take(half_n).batch(half_n))
      spent: List[cost.Timing] = []  # Each call's whole duration.
      full: List[cost.Timing] = []   # [0]: the first (tracing) evaluation.
      halves: List[cost.Timing] = []

      def timed_evaluate(weights):
        a = now()
        if not full:
          full.append(_timed_pair(evaluate, weights)[1])
          if half_n:
            halves.append(_timed_pair(evaluate_half, weights)[1])
        if half_n:
          halves.append(_timed_pair(evaluate_half, weights)[1])
        result, t = _timed_pair(evaluate, weights)
        full.append(t)
        spent.append(_minus(now(), a))
        return result

      rounds, excess, gaps, previous = {}, cost.ZERO, cost.ZERO, start
      rounds_one: Dict[str, cost.Timing] = {}
      copies: Dict[str, int] = {}
      t = cal.training
      for method in exp.methods:
        marks: List[cost.Timing] = []
        spent_before = len(spent)
        fed = exp.fed_data if method.fed_data is None else method.fed_data
        loop_config = training_loop.LoopConfig(
            total_rounds=t.total_rounds, output_dir=os.path.join(
                tmp, "calibration", method.name),
            rounds_per_eval=t.rounds_per_eval,
            rounds_per_checkpoint=t.rounds_per_checkpoint)
        opened = training_loop.open_run(method.process, fed, method.spec,
                                        loop_config, log_fn=None)
        copies[method.name] = getattr(opened.training_process,
                                      "client_state_copies", 0)
        training_loop.run_federated_training(
            method.name, method.process, fed, method.spec,
            _TimedSampler(method.sampler, marks, two_point), timed_evaluate,
            loop_config, log_fn=None, opened=opened)
        marks.append(now())
        # Building (workers, data, this method's process) up to its round 1.
        gaps, previous = gaps + _minus(marks[0], previous), marks[-1]
        spans = [_minus(b, a) for a, b in zip(marks, marks[1:])]
        for e in spent[spent_before:]:  # Evaluations ran in the last round.
          spans[-1] = _minus(spans[-1], e)
        # spans[r - 1] is round r; with two_point even rounds had 1 client.
        timed = [(r, sp) for r, sp in enumerate(spans, 1) if r > 1]
        steady = _mean([sp for r, sp in timed
                        if not two_point or r % 2 == 1])
        rounds[method.name] = steady
        if two_point:
          rounds_one[method.name] = _mean([sp for r, sp in timed
                                           if r % 2 == 0])
        excess = excess + _minus(spans[0], steady)
      evaluation = full[-1]
      excess = excess + _minus(full[0], evaluation)
      if half_n:
        excess = excess + _minus(halves[0], halves[-1])
      step = cost.ZERO
      if central:
        step, central_excess = _central_step(exp)
        excess = excess + central_excess
      train_examples = sum(exp.fed_data.client_sizes.values())
  end = now()
  fed = exp.fed_data
  return Calibration(gaps, excess, rounds, evaluation,
                     test_examples, train_examples, step, end.wall - start.wall,
                     rounds_one, halves[-1] if half_n else None, half_n,
                     len(fed.client_data.client_ids), fed.num_classes,
                     tuple(fed.input_shape), copies)


def _mean(timings: List[cost.Timing]) -> cost.Timing:
  """The mean (a run's total is a sum: the mean, not the median, projects
  it; rounds slowed by other processes count)."""
  return cost.Timing(sum(t.wall for t in timings) / len(timings),
                     sum(t.cpu for t in timings) / len(timings))


