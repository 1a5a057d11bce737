"""Runs an `ExperimentConfig`: methods, centralized baseline, reports.

`run(config)` never reads flags: binaries and sweeps build the config
(`experiments.config`) and pass it in.
"""

import math
import os
from typing import Callable, Dict, List, NamedTuple

from experiments import config as config_lib
from federated_vision.errors import bad


class Experiment(NamedTuple):
  """Everything `run` needs, built from a config."""
  config: config_lib.ExperimentConfig
  fed_data: object
  keras_model_fn: Callable
  methods: List[object]          # `methods.Method`s.
  output_dir: str
  resolved: Dict[str, object]
  partition_stats: Dict[str, object]  # `partition_report.counts_summary`.


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
  """Creates <root>/<name> and checks it is writable (ConfigError if not)."""
  config_lib.check_output(output)
  path = os.path.join(output.root_output_dir, output.experiment_name)
  try:
    os.makedirs(path, exist_ok=True)
    probe = os.path.join(path, ".write_test")
    with open(probe, "w") as f:
      f.write("ok")
    os.remove(probe)
  except OSError as e:
    raise bad("root_output_dir", output.root_output_dir,
              f"cannot write {path} ({e.strerror or e})") from None
  return path


def build_experiment(config: config_lib.ExperimentConfig) -> Experiment:
  """Validates `config`, loads the data and builds every method."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from federated_vision import methods as methods_lib  # pylint: disable=g-import-not-at-top
  from federated_vision import tasks  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import partition_report  # pylint: disable=g-import-not-at-top
  from federated_vision.models import build_tff_model_fn  # pylint: disable=g-import-not-at-top

  resolved = config_lib.resolve(config)
  output_dir = check_output_dir(config.output)
  seed = config.training.seed
  task = tasks.get_task(config.data.dataset)
  fed = task.build_data(config.data, tasks.DataContext(
      seed, config.output.root_output_dir, output_dir))
  ids = fed.client_data.client_ids
  per_round = config_lib.clients_per_round(config, len(ids))
  if config.training.client_fraction is None and per_round > len(ids):
    raise bad("clients_per_round", per_round, f"must be in [1, {len(ids)}] "
              f"(the number of clients of --dataset={task.name})")
  resolved.update(num_clients=len(ids), clients_per_round=per_round)
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
      [fed.client_sizes[c] for c in ids], per_round, seed,
      lambda: np.concatenate([b["y"].numpy()
                              for b in fed.test_data.batch(4096)]))
  methods = [methods_lib.build_method(m, inputs)
             for m in config.methods.expand()]
  stats = partition_report.counts_summary(fed.class_counts,
                                         fed.info.get("class_prior"))
  return Experiment(config, fed, keras_model_fn, methods, output_dir,
                    resolved, stats)


def hparams(exp: Experiment) -> dict:
  """hparams.json: every config field at the top level (== its flag), the
  config by section, resolved defaults, data info, partition statistics
  and each method's resolved settings."""
  s = exp.partition_stats
  return dict(
      config_lib.flat(exp.config), config=exp.config.to_dict(),
      resolved=exp.resolved,
      data={k: v for k, v in exp.fed_data.info.items() if k != "label_names"},
      partition={"num_clients": s["num_clients"],
                 "num_examples": s["num_examples"],
                 "examples_per_client_min": s["examples_per_client"]["min"],
                 "examples_per_client_max": s["examples_per_client"]["max"],
                 "classes_per_client_mean": s["classes_per_client"]["mean"],
                 "emd": s["emd"],
                 "emd_reference": s.get("emd_reference")},
      methods={m.name: dict(m.settings) for m in exp.methods})


def write_partition_report(exp: Experiment) -> dict:
  """Per-client class counts (JSON) + Hsu et al. 2019 Figure-10 PNG, from
  the data set's count matrix (every loader has one)."""
  from federated_vision.evaluation import partition_report  # pylint: disable=g-import-not-at-top
  fed = exp.fed_data
  counts = fed.class_counts
  names = fed.info.get("label_names")
  info = {k: v for k, v in fed.info.items() if k != "label_names"}
  alpha = (info.get("alpha") if info.get("partition", "dirichlet") == "dirichlet"
           else None)
  return partition_report.write_counts_report(
      exp.output_dir, "partition", counts, list(fed.client_data.client_ids),
      alpha=alpha,
      class_names=names if names and len(names) == counts.shape[1] else None,
      metadata={"dataset": fed.name, "seed": exp.config.training.seed, **info},
      max_clients_in_plot=100, summary=exp.partition_stats)


def _train(exp: Experiment, evaluate) -> dict:
  from federated_vision import execution  # pylint: disable=g-import-not-at-top
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top
  t = exp.config.training
  results = {}
  with execution.managed_execution_context():
    for method in exp.methods:
      results[method.name] = training_loop.run_federated_training(
          method.name, method.process, exp.fed_data, method.spec,
          method.sampler, evaluate,
          training_loop.LoopConfig(
              total_rounds=t.total_rounds,
              output_dir=os.path.join(exp.output_dir, method.name),
              rounds_per_eval=t.rounds_per_eval,
              rounds_per_checkpoint=t.rounds_per_checkpoint))
  return results


def _centralized(exp: Experiment, eval_ds):
  from federated_vision import centralized  # pylint: disable=g-import-not-at-top
  epochs = exp.config.training.centralized_epochs
  if epochs <= 0:
    return None
  print(f"[centralized] training {epochs} epochs on the pooled client data")
  m = exp.config.methods
  return centralized.train_centralized(
      exp.keras_model_fn, exp.fed_data, eval_ds, m.client_learning_rate,
      m.client_batch_size or 32, epochs, seed=exp.config.training.seed)


def write_hparams_sessions(run_dir: str) -> None:
  """TensorBoard HParams: one session per method under <method>/tensorboard/
  (the run's flags, final metrics), for every run (issue 12)."""
  from federated_vision.reproduction import hparams as hparams_lib  # pylint: disable=g-import-not-at-top
  hparams_lib.write_run_hparams(run_dir)


def run(config: config_lib.ExperimentConfig) -> dict:
  """Builds the experiment, runs it, writes and prints results."""
  from federated_vision import execution  # pylint: disable=g-import-not-at-top
  execution.install_signal_handlers()
  exp = build_experiment(config)

  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import metrics as metrics_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top

  fed, out, t = exp.fed_data, exp.output_dir, config.training
  stats = exp.partition_stats
  reporting.write_json(os.path.join(out, "hparams.json"), hparams(exp))
  report_paths = write_partition_report(exp)
  print(f"data: {fed.name}, {stats['num_clients']} clients, "
        f"{stats['num_examples']} training examples, "
        f"EMD non-identicalness {stats['emd']:.3f}")
  print(f"partition report: {report_paths['json']}, {report_paths['png']}")
  eval_ds = cdl.build_eval_dataset(fed.test_data, fed.eval_map_fn)
  evaluate = training_loop.build_keras_evaluate_fn(exp.keras_model_fn, eval_ds)
  results = _train(exp, evaluate)
  central = _centralized(exp, eval_ds)
  central_acc = central.accuracy if central is not None else math.nan

  runs = {name: r.rows for name, r in results.items()}
  batch_ref = min(int(r.rows[-1]["cumulative_batch_budget"])
                  for r in results.values())
  at = reporting.acc_at_round_and_batch(runs, t.total_rounds, batch_ref)
  summary = {"methods": {}, "centralized": None,
             "acc_at_round_ref": t.total_rounds, "acc_at_batch_ref": batch_ref,
             "target_accuracy": t.target_accuracy, "emd": stats["emd"],
             "config": config.to_dict(), "resolved": exp.resolved}
  table = []
  settings = {m.name: dict(m.settings) for m in exp.methods}
  for name, r in results.items():
    rel = (metrics_lib.relative_accuracy(r.final_accuracy, central_acc)
           if central_acc > 0 else math.nan)
    summary["methods"][name] = {
        "final_accuracy": r.final_accuracy, "centralized_accuracy": central_acc,
        "relative_accuracy": rel, "rounds": r.rounds,
        "seconds": round(r.seconds, 2),
        "cumulative_batch_budget": int(r.rows[-1]["cumulative_batch_budget"]),
        "acc_at_round": at[name]["acc_at_round"],
        "acc_at_batch": at[name]["acc_at_batch"],
        "resumed_from_round": r.resumed_from, "settings": settings[name]}
    if t.target_accuracy is not None:
      summary["methods"][name]["rounds_to_target"] = rounds_to_target(
          r.rows, t.target_accuracy)
    table.append([name, r.final_accuracy, central_acc, rel,
                  at[name]["acc_at_round"], at[name]["acc_at_batch"],
                  r.rounds, round(r.seconds, 1)])
  if central is not None:
    summary["centralized"] = {"accuracy": central.accuracy,
                              "epochs": central.epochs,
                              "history": central.history,
                              "seconds": round(central.seconds, 2)}
  reporting.write_json(os.path.join(out, "summary.json"), summary)
  write_hparams_sessions(out)
  png = reporting.plot_accuracy(runs, os.path.join(out, "accuracy.png"),
                                "round", central_acc)
  png_b = reporting.plot_accuracy(runs, os.path.join(out, "accuracy_vs_batches.png"),
                                  "cumulative_batch_budget", central_acc)
  print()
  print(reporting.format_table(
      ["method", "final_acc", "central_acc", "relative_acc",
       f"acc@round{t.total_rounds}", f"acc@batch{batch_ref}", "rounds",
       "seconds"], table))
  print()
  print(f"results: {out}")
  print(f"  hparams.json, summary.json, {os.path.basename(png)}, "
        f"{os.path.basename(png_b)}")
  for name in results:
    print(f"  {name}/metrics.csv, {name}/tensorboard/, {name}/checkpoints/")
  return summary
