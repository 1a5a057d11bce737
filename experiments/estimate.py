"""`train_main --estimate` / `reproduce --estimate`: a run's cost, before it runs.

Calibrates a few rounds per distinct run shape on this machine, on the
given TFF workers, in a temporary directory (no experiment directory is
created or touched), then prints per run the projected wall time and
CPU-hours (`federated_vision.evaluation.cost`, whose docstring states the
formula):

  T = T_start + sum_m [R * t_round_m + n_eval * t_eval]
      + epochs * (ceil(N_train / B) * t_step + t_eval)

A shape is what sets a round's cost: task, model and its options, image
size, clients per round, examples per client / N_VC, B, E, the method set.
Runs of one shape share one calibration (`calibration_config` is its key).

Two ways to calibrate:
  * direct: the run's own config (its data, C, B, ...) for 1 warm-up round
    and --estimate_rounds timed rounds; nothing is scaled except the
    evaluation (by test examples).
  * scaled, on the task's synthetic twin (ours: the real-world tasks always,
    MobileNetV2-GN at 299 px is too slow to calibrate at full size and its
    B = 64 step does not fit this machine's memory; any task whose data is
    not on this machine): --estimate_clients clients of one local batch
    each (examples per client = N_VC = B_cal = min(B,
    --estimate_batch_size)) at the run's image size and model, 1 warm-up +
    --estimate_scaled_rounds rounds, alternately of 1 and of C_cal
    clients; a round's time is then the line through those two points
    extrapolated to the examples the run's round trains, C * E * n (n = N_VC
    under FedVC, else the mean examples per client), and an evaluation's
    the line through half and all of the twin's test set, at N_test
    (`cost.linear_fit`; proportional scaling when the points are noise).
    Per-example cost at B_cal is taken for B (ours: on CPU a larger batch
    is at most as costly per example, so this errs high); a centralized
    step is scaled by B / B_cal. FedAvgM shares FedAvg's calibration
    (`same_client_work`). The real data's sizes (mean examples per
    client, training and test examples) come from --split_csv / --test_csv
    when given, else from `PUBLISHED_SIZES`.

Wall time is for the workers given (calibrated on them); CPU seconds are this
process's plus its local workers' (remote workers' CPU is not counted). A
method with per-client state adds its client-state store's size
(`estimate_state`).
"""

import dataclasses
import math
import time
from typing import Callable, Dict, List, Mapping, NamedTuple, Tuple

from absl import flags

from federated_vision.experiment import config as config_lib
from experiments import estimate_calibrate as calib
from experiments.estimate_shape import (  # pylint: disable=unused-import
    PUBLISHED_SIZES, REAL_WORLD, Target, calibration_config, is_scaled,
    real_sizes, same_client_work, twin_of)
from experiments import estimate_state
from experiments.estimate_calibrate import Calibration
from federated_vision import methods as methods_lib
from federated_vision import tasks
from federated_vision.errors import ConfigError
from federated_vision.evaluation import cost
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.tasks import presence

Printer = Callable[[str], None]
def define_flags() -> None:
  """--estimate, --estimate_rounds, --estimate_scaled_rounds,
  --estimate_clients (idempotent)."""
  if "estimate" in flags.FLAGS:
    return
  flags.DEFINE_bool("estimate", False, "Calibrate a few rounds per run shape "
                    "in a temporary directory, print the projected wall time "
                    "and CPU-hours, and exit without training.")
  flags.DEFINE_integer("estimate_rounds", 3, "--estimate: timed rounds after "
                       "1 warm-up round (direct calibration).", lower_bound=1)
  flags.DEFINE_integer("estimate_scaled_rounds", 2, "--estimate: timed rounds "
                       "after 1 warm-up of a scaled calibration (synthetic "
                       "twin, one batch per client), alternately of 1 client "
                       "and of --estimate_clients.", lower_bound=2)
  flags.DEFINE_integer("estimate_clients", 4, "--estimate: clients per round "
                       "of a scaled calibration.", lower_bound=2)
  flags.DEFINE_integer("estimate_batch_size", 4, "--estimate: largest B of a "
                       "scaled calibration (MobileNetV2-GN at 299 px and "
                       "B=64 needs ~21 GB).", lower_bound=1)
  for name in SETTING_FLAGS:  # Given without --estimate: refused, not ignored.
    flags.register_validator(
        name, lambda _, name=name: _given_with_estimate(name),
        message="only with --estimate (a setting of its calibration)")


SETTING_FLAGS = ("estimate_rounds", "estimate_scaled_rounds",
                 "estimate_clients", "estimate_batch_size")


def _given_with_estimate(name: str) -> bool:
  """False when --<name> is on the command line without --estimate."""
  return flags.FLAGS["estimate"].value or not flags.FLAGS[name].present


class Settings(NamedTuple):
  rounds: int = 3
  scaled_rounds: int = 2
  clients: int = 4
  batch_size: int = 4


def settings_from_flags(flag_values) -> Settings:
  return Settings(flag_values.estimate_rounds,
                  flag_values.estimate_scaled_rounds,
                  flag_values.estimate_clients,
                  flag_values.estimate_batch_size)


# ------------------------------------------------------------------ shapes
class Estimate(NamedTuple):
  """A run's projection; `seeds` repetitions of it (`--seeds`) cost
  `seeds` times as much (`total`)."""
  name: str
  projection: cost.Projection
  lines: List[str]
  seeds: int = 1

  @property
  def total(self) -> cost.Timing:
    return self.projection.total.scaled(self.seeds)


def _method_config(config, method_name: str):
  """The `MethodConfig` of one of `config`'s methods, by its name."""
  for m in config.methods.expand():
    if m.name == method_name:
      return m
  raise KeyError(method_name)


def _examples_per_epoch(method, n: float) -> float:
  """What a client of n examples trains on per epoch: n, or what the
  method's spec, built by its data-side variants, says (FedVC: N_VC)."""
  spec = methods_lib.build.method_spec(method)
  if spec.virtual_client_size is not None:
    n = spec.virtual_client_size
  return n if spec.max_elements is None else min(n, spec.max_elements)


def _method_batches(config, method_name: str, n: float) -> int:
  m = _method_config(config, method_name)
  return cost.local_batches(_examples_per_epoch(m, n),
                            m.client_batch_size or None, m.client_epochs)


def _client_examples(config, method_name: str, n: float) -> float:
  """E * (N_VC under FedVC, else n): the examples one client trains."""
  m = _method_config(config, method_name)
  return m.client_epochs * _examples_per_epoch(m, n)


def project_run(name: str, config: config_lib.ExperimentConfig,
                cal_config: config_lib.ExperimentConfig, c: Calibration
                ) -> Estimate:
  """The projection of `config` from its shape's calibration `c`."""
  t = config.training
  lines = []
  central_b = config.methods.client_batch_size or 32  # As `runner`.
  population, classes = c.num_clients, c.num_classes
  if is_scaled(config):
    task = tasks.get_task(config.data.dataset)
    target = real_sizes(config, task)
    population = target.population
    classes = estimate_state.real_classes(config) or classes
    test = target.test_examples or c.test_examples
    cal_b = cal_config.methods.client_batch_size
    run_b = config.methods.client_batch_size or target.examples_per_client
    round_times = {}
    for method in (mc.name for mc in config.methods.expand()):
      timing = c.rounds[same_client_work(method)]
      b = _method_batches(config, method, target.examples_per_client)
      b_cal = _method_batches(cal_config, same_client_work(method), cal_b)
      c_cal = cal_config.training.clients_per_round
      # Examples a client trains in a round: E * (N_VC under FedVC, else n).
      units = target.clients * _client_examples(config, method,
                                                target.examples_per_client)
      cal_units = _client_examples(cal_config, same_client_work(method), cal_b)
      one = c.rounds_one.get(same_client_work(method))
      if one is not None:  # The line through 1 and C_cal clients.
        fixed, unit = cost.linear_fit(one, timing, cal_units,
                                      c_cal * cal_units)
        round_times[method] = cost.on_line(fixed, unit, units)
        how = (f"1 client {one.wall:.2f} s, {c_cal} clients {timing.wall:.2f}"
               f" s of {b_cal} batch(es) of B={cal_b} -> {fixed.wall:.2f} s + "
               f"{unit.wall * 1000:.1f} ms per example")
      else:
        f = cost.round_scale(cost.Work(c_cal, cal_units, c.test_examples),
                             cost.Work(1, units, test))
        round_times[method] = timing.scaled(f)
        how = (f"{timing.wall:.2f} s at C={c_cal} x {b_cal} batch of "
               f"B={cal_b} -> x{f:g}")
      lines.append(f"    {method}: {how}; C={target.clients} x {b} batches of "
                   f"B={run_b:g} ({units:g} examples): "
                   f"{round_times[method].wall:.2f} s/round "
                   f"({round_times[method].cpu:.2f} CPU-s)")
    train = target.train_examples
    step = c.step.scaled(central_b / cal_b)  # Per example, as the rounds.
    lines.insert(0, f"  calibrated on the synthetic twin "
                 f"{cal_config.data.dataset} (same model, image size "
                 f"{cal_config.data.image_size}, E), scaled by the examples in"
                 f" a round's local batches (C*b*B; the line through rounds of 1 "
                 f"and C_cal clients) and by test examples (the line through "
                 f"half and all of the twin's); real sizes from "
                 f"{target.source}: {target.examples_per_client:.1f} examples "
                 f"per client, {train} training / {test} test examples; "
                 "start-up is the twin's (loading the real images' index is "
                 "not included)")
  else:
    test, train = c.test_examples, c.train_examples
    step = c.step
    round_times = dict(c.rounds)
    for method, timing in round_times.items():
      lines.append(f"    {method}: {timing.wall:.2f} s/round "
                   f"({timing.cpu:.2f} CPU-s)")
    lines.insert(0, "  calibrated directly on this run's config")
  # --full_train_loss: every evaluation also passes over the training set
  # (the calibration timed the test set's alone).
  evaluated = test + (train if t.full_train_loss else 0)
  if c.evaluation_half is not None and evaluated != c.test_examples:
    ev = cost.on_line(*cost.linear_fit(c.evaluation_half, c.evaluation,
                                       c.half_examples, c.test_examples),
                      evaluated)
  else:
    ev = c.evaluation.scaled(cost.eval_scale(
        cost.Work(1, 1, c.test_examples), cost.Work(1, 1, evaluated)))
  steps = math.ceil(train / central_b)
  p = cost.project(c.build + c.warmup_excess, round_times, t.total_rounds,
                   t.rounds_per_eval, ev, t.centralized_epochs, steps, step)
  lines.append(f"    evaluation ({evaluated} examples"
               f"{', test and training' if t.full_train_loss else ''}): "
               f"{ev.wall:.2f} s x {p.num_evaluations} per method")
  if t.centralized_epochs:
    lines.append(f"    centralized: {t.centralized_epochs} epochs x ({steps} "
                 f"steps x {step.wall:.3f} s + an evaluation)")
  total = p.total
  lines.append(
      f"  = start-up ({p.startup.wall:.0f} s) + {t.total_rounds} rounds "
      f"({p.rounds.wall:.0f} s) + evaluations ({p.evaluations.wall:.0f} s) + "
      f"centralized ({p.centralized.wall:.0f} s): wall "
      f"{cost.duration(total.wall)}, {cost.hours(total.cpu)} CPU")
  calibrated = same_client_work if is_scaled(config) else (lambda m: m)
  lines += estimate_state.store_lines(
      config, population, lambda: (
          estimate_state.model_weights(config, classes, c.input_shape)),
      lambda m: c.client_state_copies.get(calibrated(m), 0))
  return Estimate(name, p, lines)


class Estimator:
  """Calibrates each distinct shape once, projects every run."""

  def __init__(self, settings: Settings = Settings(), echo: Printer = print):
    self.settings, self.echo = settings, echo
    self._cache: Dict[Tuple[object, bool], Calibration] = {}

  def estimate(self, name: str, config: config_lib.ExperimentConfig
               ) -> Estimate:
    cal = calibration_config(config, self.settings)
    config_lib.validate(cal)
    central = config.training.centralized_epochs > 0
    key = (cal, central)
    if key not in self._cache:
      self.echo(f"[estimate] calibrating {name}: "
                f"{cal.training.total_rounds - 1} timed round(s) after 1 "
                f"warm-up, {','.join(m.name for m in cal.methods.expand())}"
                f" on {cal.data.dataset}...")
      self._cache[key] = calib.calibrate(cal, central, is_scaled(config))
      self.echo(f"[estimate] calibration took "
                f"{self._cache[key].seconds:.1f} s")
    else:
      self.echo(f"[estimate] {name}: same shape as a calibrated run")
    return project_run(name, config, cal, self._cache[key])


FORMULA = ("projection = start-up + rounds x per-round time + evaluations "
           "(every --rounds_per_eval and at the last) x evaluation time + "
           "centralized epochs x (steps x step time + an evaluation)")


def report(estimates: List[Estimate], workers: str, echo: Printer = print,
           process_startup: float = 0.0, started: float = 0.0) -> None:
  """Prints each run's projection and the total."""
  echo(f"cost estimate ({workers}); {FORMULA}")
  total = cost.ZERO
  for e in estimates:
    one = e.projection.total
    seeds = (f" per seed; x {e.seeds} seeds: wall "
             f"{cost.duration(e.total.wall)}, {cost.hours(e.total.cpu)} CPU"
             if e.seeds > 1 else "")
    echo(f"run {e.name}: wall {cost.duration(one.wall)}, "
         f"{cost.hours(one.cpu)} CPU{seeds}")
    for line in e.lines:
      echo(line)
    total = total + e.total
  total = total + cost.Timing(process_startup, process_startup)
  runs = sum(e.seeds for e in estimates)
  echo(f"total: {runs} run(s), wall {cost.duration(total.wall)} "
       f"({total.wall:.0f} s), {cost.hours(total.cpu)} CPU "
       f"(imports {process_startup:.1f} s once; runs one after another)")
  if started:
    echo(f"the estimate itself took {time.perf_counter() - started:.1f} s; "
         "nothing was trained or written")


def describe_workers(e: config_lib.ExecutionConfig) -> str:
  out = f"{e.local_workers} local worker(s)"
  if e.workers:
    out += f" + {len(e.workers)} remote (their CPU is not counted)"
  return out


def run_config(flag_values: Mapping[str, object]) -> config_lib.ExperimentConfig:
  """A run's config for estimating: validated, except for a real-world
  task (calibrated on its twin, so its data flags need not be given)."""
  config = config_lib.replace_fields(config_lib.ExperimentConfig(), flag_values)
  if config.data.dataset in REAL_WORLD:
    config_lib.validate(dataclasses.replace(config, data=tasks.DataConfig(
        dataset=f"synthetic_{config.data.dataset}",
        image_size=config.data.image_size)))  # Everything but the data.
    return config
  config = config_lib.from_values(flag_values)
  if not is_scaled(config):
    presence.require(config.data)
  return config


def estimate_train_main(flag_values, echo: Printer = print) -> None:
  """`train_main --estimate`: one run, from the parsed flags."""
  started, imports = time.perf_counter(), calib.process_age()
  names = list(config_lib.field_sections())
  values = {n: flag_values[n].value for n in names}
  if values["dataset"] not in REAL_WORLD:  # Flags given but unread: errors.
    config_lib.from_values(values, [n for n in names if flag_values[n].present])
  config = run_config(values)
  est = Estimator(settings_from_flags(flag_values), echo)
  e = est.estimate(config.output.experiment_name, config)
  seeds = flag_values["seeds"].value if "seeds" in flag_values else 1
  report([e._replace(seeds=seeds)], describe_workers(config.execution), echo,
         imports, started)


def estimate_preset(preset, runs, data: Mapping[str, object],
                    execution: Mapping[str, object], settings: Settings,
                    echo: Printer = print) -> List[Estimate]:
  """`reproduce --estimate`: every run of `runs` (a preset's selection),
  with the data flags given (`data`) and the workers (`execution`). The
  repetitions of one run over seeds (`--seeds`, `seeds.expand`) are
  projected once and counted as many times as they are selected."""
  started, imports = time.perf_counter(), calib.process_age()
  configs = []
  copies = {r.name: n for r, n in seeds_lib.group_by_base(preset, runs)}
  for run in (r for r in runs if r.name in copies):  # Checked first.
    values = dict(run.flag_dict(), **{n: data[n] for n in run.data_flags
                                      if data.get(n) not in (None, "", [])},
                  **execution, experiment_name=run.name)
    try:
      configs.append((run.name, run_config(values)))
    except ConfigError as e:
      raise ConfigError(f"run {run.name}: {e}", e.field) from None
  echo(f"preset {preset.name}: estimating {len(configs)} run(s)"
       f"{f' x their seeds ({len(runs)} runs)' if len(runs) > len(configs) else ''}")
  est = Estimator(settings, echo)
  out = [est.estimate(name, config)._replace(seeds=copies[name])
         for name, config in configs]
  workers = describe_workers(configs[0][1].execution) if configs else ""
  report(out, workers, echo, imports, started)
  return out
