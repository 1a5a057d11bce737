"""Runs an `flags_lib.Experiment`: methods, centralized baseline, reports."""

import math
import os
import time

from experiments import flags_lib


def rounds_to_target(rows, target: float):
  """McMahan's rounds to `target` test accuracy from metric rows (or None)."""
  from federated_vision.evaluation import convergence  # pylint: disable=g-import-not-at-top
  evaluated = [(float(r["round"]), float(r["test_accuracy"])) for r in rows
               if r.get("test_accuracy") not in (None, "")]
  if not evaluated:
    return None
  rounds, accs = zip(*evaluated)
  return convergence.rounds_to_target(rounds, accs, target)


def write_partition_report(exp, f) -> dict:
  """Per-client class counts (JSON) + Hsu et al. 2019 Figure-10 PNG.

  Built from the data set's count matrix, so it works for every loader:
  pseudo-labels reproduce each client's class counts exactly.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import partition_report  # pylint: disable=g-import-not-at-top
  fed = exp.fed_data
  counts = np.asarray(fed.class_counts, np.int64)
  ids = list(fed.client_data.client_ids)
  labels = np.concatenate([np.repeat(np.arange(counts.shape[1]), row)
                           for row in counts])
  ends = np.cumsum(counts.sum(axis=1))
  partition = {cid: np.arange(end - n, end) for cid, n, end
               in zip(ids, counts.sum(axis=1), ends)}
  names = fed.info.get("label_names")
  info = {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v)
          for k, v in fed.info.items() if k != "label_names"}
  alpha = f.alpha if info.get("partition", "dirichlet") == "dirichlet" and \
      f.split_csv is None else None
  return partition_report.write_partition_report(
      exp.output_dir, "partition", labels, partition,
      num_classes=counts.shape[1], alpha=alpha,
      class_names=names if names and len(names) == counts.shape[1] else None,
      metadata={"dataset": fed.name, "seed": f.seed, **info},
      max_clients_in_plot=100)


def run(f) -> dict:
  """Builds the experiment from flags, runs it, writes and prints results."""
  from federated_vision import execution  # pylint: disable=g-import-not-at-top
  execution.install_signal_handlers()
  exp = flags_lib.build_experiment(f)

  from federated_vision import centralized  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import metrics as metrics_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top

  fed = exp.fed_data
  out = exp.output_dir
  reporting.write_json(os.path.join(out, "hparams.json"),
                       dict(exp.hparams, partition=exp.partition_stats))
  report_paths = write_partition_report(exp, f)
  print(f"data: {fed.name}, {exp.partition_stats['num_clients']} clients, "
        f"{exp.partition_stats['num_examples']} training examples, "
        f"EMD non-identicalness {exp.partition_stats['emd']:.3f}")
  print(f"partition report: {report_paths['json']}, {report_paths['png']}")
  eval_ds = cdl.build_eval_dataset(fed.test_data, fed.eval_map_fn)
  evaluate = training_loop.build_keras_evaluate_fn(exp.keras_model_fn, eval_ds)

  results = {}
  with execution.managed_execution_context():
    for method in exp.methods:
      results[method.name] = training_loop.run_federated_training(
          method.name, method.process, fed, method.spec, method.sampler,
          evaluate,
          training_loop.LoopConfig(
              total_rounds=f.total_rounds,
              output_dir=os.path.join(out, method.name),
              rounds_per_eval=f.rounds_per_eval,
              rounds_per_checkpoint=f.rounds_per_checkpoint))

  if f.centralized_epochs > 0:
    print(f"[centralized] training {f.centralized_epochs} epochs on the pooled "
          "client data")
    batch = f.client_batch_size or 32
    central = centralized.train_centralized(
        exp.keras_model_fn, fed, eval_ds, f.client_learning_rate, batch,
        f.centralized_epochs, seed=f.seed)
    central_acc = central.accuracy
  else:
    central, central_acc = None, math.nan

  runs = {name: r.rows for name, r in results.items()}
  batch_ref = min(int(r.rows[-1]["cumulative_batch_budget"])
                  for r in results.values())
  at = reporting.acc_at_round_and_batch(runs, f.total_rounds, batch_ref)
  summary = {"methods": {}, "centralized": None,
             "acc_at_round_ref": f.total_rounds, "acc_at_batch_ref": batch_ref,
             "target_accuracy": f.target_accuracy,
             "emd": exp.partition_stats["emd"]}
  table = []
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
        "resumed_from_round": r.resumed_from}
    if f.target_accuracy is not None:
      summary["methods"][name]["rounds_to_target"] = rounds_to_target(
          r.rows, f.target_accuracy)
    table.append([name, r.final_accuracy, central_acc, rel,
                  at[name]["acc_at_round"], at[name]["acc_at_batch"],
                  r.rounds, round(r.seconds, 1)])
  if central is not None:
    summary["centralized"] = {"accuracy": central.accuracy,
                              "epochs": central.epochs,
                              "history": central.history,
                              "seconds": round(central.seconds, 2)}
  reporting.write_json(os.path.join(out, "summary.json"), summary)
  png = reporting.plot_accuracy(runs, os.path.join(out, "accuracy.png"),
                                "round", central_acc)
  png_b = reporting.plot_accuracy(runs, os.path.join(out, "accuracy_vs_batches.png"),
                                  "cumulative_batch_budget", central_acc)
  print()
  print(reporting.format_table(
      ["method", "final_acc", "central_acc", "relative_acc",
       f"acc@round{f.total_rounds}", f"acc@batch{batch_ref}", "rounds",
       "seconds"], table))
  print()
  print(f"results: {out}")
  print(f"  hparams.json, summary.json, {os.path.basename(png)}, "
        f"{os.path.basename(png_b)}")
  for name in results:
    print(f"  {name}/metrics.csv, {name}/tensorboard/, {name}/checkpoints/")
  return summary
