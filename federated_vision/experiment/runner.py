"""Runs an `ExperimentConfig`: methods, centralized baseline, reports.

`run(config)` never reads flags: binaries and sweeps build the config
(`federated_vision.experiment.config`) and pass it in. It holds the experiment directory's
`training.run_lock.RunLock` for the whole run and checks the directory's
`experiment.json` (`federated_vision.experiment.run_record`) before loading data.

Local imports below: the binaries import this module before their flags are
checked, so TensorFlow/TFF (seconds) load only inside a run (a refused flag
or a dry run exits without them; docs/performance.md, "Start-up").
"""

import math
import os
import tempfile
from typing import Callable, Dict, List, NamedTuple, Optional

from federated_vision.experiment import central_baseline
from federated_vision.experiment import config as config_lib
from federated_vision.mixing import summary as mixing_report
from federated_vision.experiment import outputs
from federated_vision.experiment import resolved_run
from federated_vision.experiment import fields_read
from federated_vision.errors import bad
from federated_vision.tasks import presence

DROPPED = "clients_dropped_non_finite"


class Experiment(NamedTuple):
  """Everything `run` needs, built from a config."""
  config: config_lib.ExperimentConfig
  fed_data: object
  keras_model_fn: Callable
  methods: List[object]          # `methods.Method`s.
  output_dir: str
  resolved: resolved_run.ResolvedRun  # With K and C of the loaded data.
  partition_stats: Dict[str, object]  # `partition_report.counts_summary`.
  scenario: object = None  # `MixingScenario` with --mixing, else None.


def rounds_to_target(rows, target: float):
  """McMahan's rounds to `target` test accuracy from metric rows (or None)."""
  from federated_vision.evaluation import convergence  # pylint: disable=g-import-not-at-top
  evaluated = [(float(r["round"]), float(r["test_accuracy"])) for r in rows
               if r.get("test_accuracy") not in (None, "")]
  if not evaluated:
    return None
  rounds, accs = zip(*evaluated)
  return convergence.rounds_to_target(rounds, accs, target)


def check_output_dir(output: config_lib.OutputConfig) -> str:
  """Creates <root>/<name> (names checked by config validation) and checks
  it is writable (ConfigError if not)."""
  path = os.path.join(output.root_output_dir, output.experiment_name)
  try:
    os.makedirs(path, exist_ok=True)
    # An unnamed file: two runs racing for the directory (the loser is then
    # refused by its lock) never remove each other's probe.
    with tempfile.TemporaryFile(dir=path) as f:
      f.write(b"ok")
  except OSError as e:
    raise bad("root_output_dir", output.root_output_dir,
              f"cannot write {path} ({e.strerror or e})") from None
  return path


def build_experiment(config: config_lib.ExperimentConfig,
                     resolved: Optional[resolved_run.ResolvedRun] = None
                     ) -> Experiment:
  """Loads the data and builds every method of `config`.

  Args:
    config: the experiment.
    resolved: `config_lib.validate(config)`'s result when the caller
      validated it already (`run`); else it is validated here.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  from federated_vision import methods as methods_lib  # pylint: disable=g-import-not-at-top
  from federated_vision import tasks  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import partition_report  # pylint: disable=g-import-not-at-top
  from federated_vision.models import build_tff_model_fn  # pylint: disable=g-import-not-at-top

  if resolved is None:
    resolved = config_lib.validate(config)
  output_dir = check_output_dir(config.output)
  seed = config.training.seed
  task = tasks.get_task(config.data.dataset)
  context = tasks.DataContext(seed, config.output.root_output_dir, output_dir)
  scenario = None
  if config.mixing.mixing:
    scenario = task.build_scenario(config.data, context,
                                   config.mixing.missing_classes)
    fed = scenario.federated
  else:
    fed = task.build_data(config.data, context)
  ids = fed.client_data.client_ids
  resolved = resolved.with_num_clients(len(ids), task.name)
  keras_model_fn = task.build_keras_model_fn(
      config.model, fed.num_classes, tuple(fed.input_shape), seed)
  base_spec = cdl.TrainingSpec(
      batch_size=config.methods.client_batch_size or None,
      epochs=config.methods.client_epochs, seed=seed)
  element_spec = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, base_spec,
      fed.train_map_fn)(ids[0]).element_spec
  inputs = methods_lib.MethodInputs(
      build_tff_model_fn(keras_model_fn, element_spec), fed.num_classes, ids,
      [fed.client_sizes[c] for c in ids], resolved.clients_per_round, seed,
      lambda: np.concatenate([b["y"].numpy()
                              for b in fed.test_data.batch(4096)]))
  mixing = {None: None}
  if scenario is not None:
    mixing = {s: methods_lib.MixingRun(s, config.mixing, scenario)
              for s in config.mixing.mixing}
  methods = [methods_lib.build_method(p.config, inputs, mixing[p.mixing],
                                      client_group_size=p.group_size,
                                      validated=True)
             for p in resolved.methods]
  stats = partition_report.counts_summary(fed.class_counts,
                                         fed.info.get("class_prior"))
  return Experiment(config, fed, keras_model_fn, methods, output_dir,
                    resolved, stats, scenario)


def _loop_config(exp: Experiment, method):
  """The training loop's settings of `method`'s run."""
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top
  t, r = exp.config.training, exp.config.run
  return training_loop.LoopConfig(
      total_rounds=t.total_rounds,
      output_dir=os.path.join(exp.output_dir, method.name),
      rounds_per_eval=t.rounds_per_eval,
      rounds_per_checkpoint=t.rounds_per_checkpoint,
      on_divergence=r.on_divergence,
      resume_from_last_valid=r.resume_from_last_valid,
      round_columns=(() if exp.scenario is None else
                     (("extra_broadcast_bytes",
                       method.extra_broadcast_bytes),)),
      eval_columns=mixing_report.eval_columns(exp),
      full_train_loss=t.full_train_loss,
      **_schedules(method.settings))


def _schedules(settings) -> dict:
  """A method's learning-rate schedules (`learning.schedule`): (eta_0,
  gamma) of the rates whose decay its settings record (one set)."""
  out = {}
  for who in ("client", "server"):
    decay = settings.get(f"{who}_learning_rate_decay")
    if decay is not None:
      out[f"{who}_schedule"] = (settings[f"{who}_learning_rate"], decay)
  return out


def _fed_data(exp: Experiment, method):
  return exp.fed_data if method.fed_data is None else method.fed_data


def open_methods(exp: Experiment) -> dict:
  """{method: `training_loop.open_run`}: every method's run read and
  checked (metrics.csv, its checkpoint, client states) before the run
  writes anything, so a damaged file stops it with the finished run as it
  was.

  Raises:
    run_errors.RunError: a damaged file (one line naming it).
  """
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top
  return {m.name: training_loop.open_run(m.process, _fed_data(exp, m), m.spec,
                                         _loop_config(exp, m))
          for m in exp.methods}


def _train(exp: Experiment, evaluate, opened: dict):
  """{method: RunResult}, and the `DivergenceError` that stopped the run (or
  None): methods after a diverged one are not run."""
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top
  from federated_vision.training import run_errors  # pylint: disable=g-import-not-at-top
  results = {}
  for method in exp.methods:
    try:
      results[method.name] = training_loop.run_federated_training(
          method.name, method.process, _fed_data(exp, method), method.spec,
          method.sampler, evaluate, _loop_config(exp, method),
          opened=opened[method.name])
    except run_errors.DivergenceError as e:
      results[method.name] = e.result
      return results, e
  return results, None


def _of_total(info, used: int) -> str:
  """' (of N)' when the partition uses fewer than the N training examples."""
  total = info.get("train_examples")
  return f" (of {total})" if total is not None and total != used else ""


def _finite(*values) -> bool:
  return all(v is not None and math.isfinite(v) for v in values)


def write_hparams_sessions(run_dir: str, summary: dict) -> None:
  """TensorBoard HParams: one session per method under <method>/tensorboard/
  (the run's flags, `summary`'s final metrics), for every run."""
  from federated_vision.reproduction import hparams as hparams_lib  # pylint: disable=g-import-not-at-top
  hparams_lib.write_run_hparams(run_dir, summary=summary)


def _central_updates(exp: Experiment, central) -> List[int]:
  """The baseline's SGD updates at each epoch's evaluation."""
  from federated_vision import centralized  # pylint: disable=g-import-not-at-top
  return centralized.minibatch_updates(
      sum(exp.fed_data.client_sizes.values()),
      central_baseline.batch_size(exp.config), central.epochs)


def central_status(central) -> str:
  """'diverged' when the centralized baseline's loss or any accuracy is
  non-finite (then no relative accuracy is computed from it)."""
  return ("completed" if _finite(central.loss, central.accuracy,
                                 *central.history) else "diverged")


def run(config: config_lib.ExperimentConfig,
        resolved: Optional[resolved_run.ResolvedRun] = None) -> dict:
  """Runs `config` under the experiment directory's `RunLock` (see
  `federated_vision.experiment.run_record` for which directory it may use) on the TFF
  workers of `config.execution`, started before the data are loaded.

  `resolved`: the `ResolvedRun` of `config_lib.checked(...)`, whose caller
  also checked that the data are on this machine (`tasks.presence.require`,
  as train_main does before TensorFlow's import); None: both are done here.

  Raises:
    ConfigError: bad config, or the directory holds another experiment.
    run_errors.RunError: locked directory, unreadable checkpoint, write
      failure, divergence (after summary.json is written).
    runtime.worker_errors.WorkerError: a worker did not start or was lost.
  """
  from federated_vision.training import run_lock  # pylint: disable=g-import-not-at-top
  from federated_vision.experiment import run_record  # pylint: disable=g-import-not-at-top
  if resolved is None:  # Not checked yet (`config_lib.checked` was not
    resolved = config_lib.validate(config)  # used): once, here.
    presence.require(config.data)  # Data on this machine, before any dir.
  # Another experiment's directory, or --overwrite of files no run writes:
  # refused before anything is written there (checked again under the lock).
  run_record.check_before_run(config)
  new_dirs = _new_dirs(config.output_dir)
  out = check_output_dir(config.output)
  started = False
  try:
    with run_lock.RunLock(out):
      try:
        if config.run.overwrite:  # A run's own files only (else refused).
          removed = run_record.clear(out)
          if removed:
            print(f"--overwrite: deleted {', '.join(removed)} in {out}")
        record = run_record.check(out, config)
        # Workers first: a bad --workers address fails before data is loaded.
        with config.execution.context():
          exp = build_experiment(config, resolved)
          fingerprint = run_record.partition_fingerprint(exp.fed_data)
          run_record.check_partition(out, fingerprint, record)
          opened = open_methods(exp)  # Read and checked; nothing written.
          run_record.start(out, config, fingerprint, record)
          started = True
          return _run(exp, opened)
      except BaseException:
        if not started and new_dirs:  # Refused (e.g. a malformed split CSV).
          _unlink_lone_lock(out)
        raise
  except BaseException:
    if not started:
      _remove_empty(new_dirs)
    raise


def _new_dirs(path: str) -> List[str]:
  """`path` and those of its parents that do not exist yet, deepest first."""
  out, path = [], os.path.abspath(path)
  while not os.path.exists(path) and os.path.dirname(path) != path:
    out.append(path)
    path = os.path.dirname(path)
  return out


def _unlink_lone_lock(out: str) -> None:
  """Removes the lock file of a refused run (while holding it) if it is all
  the directory holds."""
  from federated_vision.training import run_lock  # pylint: disable=g-import-not-at-top
  try:
    if os.listdir(out) == [run_lock.LOCK_FILE]:
      os.unlink(os.path.join(out, run_lock.LOCK_FILE))
  except OSError:
    pass


def _remove_empty(dirs: List[str]) -> None:
  """rmdir of `dirs` (deepest first) while they are empty: a run refused
  before it started leaves no directory it created behind."""
  for d in dirs:
    try:
      os.rmdir(d)
    except OSError:
      return


def _run(exp: Experiment, opened: dict) -> dict:
  """Trains (from `open_methods`' `opened`), writes and prints results
  (under the directory's lock)."""
  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import metrics as metrics_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import keras_eval  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  from federated_vision.training import run_errors  # pylint: disable=g-import-not-at-top

  config = exp.config
  fed, out, t = exp.fed_data, exp.output_dir, config.training
  stats = exp.partition_stats
  reporting.write_json(os.path.join(out, "hparams.json"),
                       outputs.hparams(exp), sealed=True)
  report_paths = outputs.write_partition_report(exp)
  counted = (f"{stats['num_examples']} training examples"
             f"{_of_total(fed.info, stats['num_examples'])}")
  if "count_unit" in fed.info:  # The counts are per-position targets.
    counted = (f"{sum(fed.client_sizes.values())} training examples, "
               f"{stats['num_examples']} {fed.info['count_unit']}")
  print(f"data: {fed.name}, {stats['num_clients']} clients, {counted}, "
        f"EMD non-identicalness {stats['emd']:.3f}")
  print(f"partition report: {report_paths['json']}, {report_paths['png']}")
  eval_ds = cdl.build_eval_dataset(fed.test_data, fed.eval_map_fn)
  if exp.scenario is None:
    evaluate = keras_eval.build_keras_evaluate_fn(exp.keras_model_fn,
                                                     eval_ds)
  else:
    from federated_vision.mixing import scenarios as mixing_scenarios  # pylint: disable=g-import-not-at-top
    evaluate = mixing_scenarios.build_group_evaluate_fn(
        exp.keras_model_fn, eval_ds, fed.num_classes, exp.scenario.groups)
  if t.full_train_loss:  # The clients' training examples, every eval.
    evaluate = keras_eval.with_full_train_loss(
        evaluate, exp.keras_model_fn, fed.pooled_train_batches())
  results, diverged = _train(exp, evaluate, opened)
  central, reused = (central_baseline.train_or_reuse(
      exp, eval_ds, lambda c: central_status(c) == "completed")
      if diverged is None else (None, False))
  status_c = central_status(central) if central is not None else None
  central_acc = central.accuracy if status_c == "completed" else math.nan
  if status_c == "diverged":
    print(f"[centralized] diverged: loss {central.loss}, accuracy "
          f"{central.accuracy}; no relative accuracy is computed")

  runs = {name: r.rows for name, r in results.items() if r.rows}
  batch_ref = min((int(r.rows[-1]["cumulative_batch_budget"])
                   for r in results.values() if r.rows), default=0)
  at = reporting.acc_at_round_and_batch(runs, t.total_rounds, batch_ref)
  summary = {"methods": {}, "centralized": None,
             "acc_at_round_ref": t.total_rounds, "acc_at_batch_ref": batch_ref,
             "target_accuracy": t.target_accuracy, "emd": stats["emd"],
             "config": fields_read.recorded(config),
             "resolved": exp.resolved.recorded(),
             "status": "diverged" if diverged is not None else "completed"}
  table = []
  settings = {m.name: dict(m.settings) for m in exp.methods}
  by_name = {m.name: m for m in exp.methods}
  for name, r in results.items():
    if r.non_finite_rounds:  # Even if it ended finite (on_divergence=continue).
      r = r._replace(status="diverged")
    ok = r.status == "completed" and _finite(r.final_accuracy, central_acc) \
        and central_acc > 0
    rel = (metrics_lib.relative_accuracy(r.final_accuracy, central_acc)
           if ok else None)
    last = r.rows[-1] if r.rows else {}
    summary["methods"][name] = {
        "status": r.status, "non_finite_rounds": list(r.non_finite_rounds),
        "clients_dropped_non_finite": sum(
            int(float(row.get(DROPPED) or 0)) for row in r.rows),
        "final_accuracy": r.final_accuracy, "centralized_accuracy": central_acc,
        "relative_accuracy": rel, "rounds": r.rounds,
        "seconds": round(r.seconds, 2),
        "cumulative_batch_budget": int(last.get("cumulative_batch_budget", 0)),
        "acc_at_round": at.get(name, {}).get("acc_at_round"),
        "acc_at_batch": at.get(name, {}).get("acc_at_batch"),
        "resumed_from_round": r.resumed_from, "settings": settings[name]}
    if exp.scenario is not None:
      summary["methods"][name].update(
          mixing_report.method_summary(exp, by_name[name], r.rows))
    if t.target_accuracy is not None:
      summary["methods"][name]["rounds_to_target"] = rounds_to_target(
          r.rows, t.target_accuracy)
    table.append([name, r.status, r.final_accuracy, central_acc, rel,
                  at.get(name, {}).get("acc_at_round"),
                  at.get(name, {}).get("acc_at_batch"),
                  r.rounds, round(r.seconds, 1)])
  for m in exp.methods:
    if m.name not in results:
      summary["methods"][m.name] = {"status": "not_run",
                                    "settings": settings[m.name]}
  if central is not None:
    summary["centralized"] = {"status": status_c,
                              "accuracy": central.accuracy,
                              "loss": central.loss,
                              "epochs": central.epochs,
                              "history": central.history,
                              # McMahan 2017 §3's SGD counts minibatch updates.
                              "minibatch_updates": _central_updates(exp,
                                                                    central),
                              "seconds": round(central.seconds, 2),
                              "reused": reused}
  every_diverged = diverged is None and bool(results) and all(
      m.get("status") == "diverged" for m in summary["methods"].values())
  if every_diverged:  # on_divergence=continue: no result to take.
    summary["status"] = "diverged"
  # summary.json last: it marks the run finished (sweeps skip it, report
  # reads it), so every other output exists when it does.
  write_hparams_sessions(out, reporting.json_safe(summary))
  title = outputs.plot_title(config, exp.resolved.recorded(), stats["emd"],
                             settings)
  png = reporting.plot_accuracy(runs, os.path.join(out, "accuracy.png"),
                                "round", central_acc, title)
  png_b = reporting.plot_accuracy(runs, os.path.join(out, "accuracy_vs_batches.png"),
                                  "cumulative_batch_budget", central_acc, title)
  png_l = reporting.plot_loss(runs, os.path.join(out, "loss.png"), title)
  reporting.write_json(os.path.join(out, "summary.json"), summary,
                       sealed=True)
  print()
  central_reason = ("not trained: a method diverged" if diverged is not None
                    else "no baseline (--centralized_epochs=0)"
                    if central is None else "the centralized baseline "
                    "diverged" if status_c == "diverged" else None)
  print(reporting.format_table(
      ["method", "status", "final_acc", "central_acc", "relative_acc",
       f"acc@round{t.total_rounds}", f"acc@batch{batch_ref}", "rounds",
       "seconds"], table, reporting.results_table_notes(
           central_reason, t.total_rounds, batch_ref)))
  if exp.scenario is not None:
    print()
    print(mixing_report.format_table(exp, summary))
  print()
  print(f"results: {out}")
  print(f"  experiment.json, hparams.json, summary.json, "
        f"{os.path.basename(png)}, {os.path.basename(png_b)}, "
        f"{os.path.basename(png_l)}")
  for name in results:
    print(f"  {name}/metrics.csv, {name}/tensorboard/, {name}/checkpoints/")
  if diverged is not None:
    raise diverged
  if every_diverged:
    raise run_errors.AllDivergedError(list(results))
  return summary
