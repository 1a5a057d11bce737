"""CPU seconds to build a method as `train_main` builds it, compile included.

A method is ready to train once its round computation is traced (the
experiment and its process built, `runner.build_experiment` +
`training_loop.build_training_process`) and compiled for the worker (the
context's `compiler_fn`, run once on its first round:
`runtime.tff_internals.compile_for_worker`). This times both, in this
process (TFF's compiler runs in Python; nothing runs on a worker), for
`train_main --dataset=D --algorithm=fedavg [--trainable_last_layers=K]`,
and with `--tff` also TFF's own compiler on the same computation (constant
folding everywhere: what every method was compiled with before).

  python -m benchmarks.bench_method_build                       # K=2
  python -m benchmarks.bench_method_build --trainable_last_layers=0 --tff
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import harness  # pylint: disable=g-import-not-at-top


def build(dataset: str, last_layers: int, clients: int, output_dir: str):
  """The round computation of `train_main`'s one FedAvg method (flags parsed
  and checked as the binary does) and its `settings`."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from experiments import repeat  # pylint: disable=g-import-not-at-top
  from experiments import train_main  # pylint: disable=g-import-not-at-top,unused-import
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top
  from federated_vision.experiment import runner  # pylint: disable=g-import-not-at-top
  argv = ["train_main", f"--dataset={dataset}", "--algorithm=fedavg",
          f"--clients_per_round={clients}", "--centralized_epochs=0",
          f"--root_output_dir={output_dir}", "--experiment_name=bench"]
  if last_layers:
    argv.append(f"--trainable_last_layers={last_layers}")
  flags.FLAGS.unparse_flags()
  flags.FLAGS(argv)
  replicas, resolved = repeat.checked_flags(flags.FLAGS)
  exp = runner.build_experiment(replicas[0], resolved)
  (method,) = exp.methods
  process = training_loop.build_training_process(method.process, exp.fed_data,
                                                 method.spec)
  return getattr(process, "process", process).next, method.settings


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--dataset", default="synthetic_inaturalist")
  parser.add_argument("--trainable_last_layers", type=int, default=2,
                      help="0: every layer trains")
  parser.add_argument("--clients_per_round", type=int, default=6)
  parser.add_argument("--tff", action="store_true",
                      help="also time TFF's compiler (minutes for K=2)")
  args = parser.parse_args(argv)
  from federated_vision import runtime  # pylint: disable=g-import-not-at-top
  from federated_vision.runtime import tff_internals  # pylint: disable=g-import-not-at-top
  from tensorflow_federated.python.core.backends.native import compiler  # pylint: disable=g-import-not-at-top
  runtime.install(signal_handlers=False)
  print(harness.load_line(), flush=True)
  with tempfile.TemporaryDirectory(prefix="fv_bench_build_") as out:
    t0, w0 = time.process_time(), time.perf_counter()
    round_comp, settings = build(args.dataset, args.trainable_last_layers,
                                 args.clients_per_round, out)
    t1, w1 = time.process_time(), time.perf_counter()
    tff_internals.compile_for_worker(round_comp)
    t2, w2 = time.process_time(), time.perf_counter()
    print(f"{args.dataset}, fedavg, trainable_last_layers="
          f"{args.trainable_last_layers or 'all'}, client groups of "
          f"{settings.get('client_group_size')}")
    print(f"  build (trace): {t1 - t0:7.1f} CPU-s ({w1 - w0:.1f} s wall)")
    print(f"  compile (runtime): {t2 - t1:7.1f} CPU-s ({w2 - w1:.1f} s wall); "
          f"build + compile {t2 - t0:.1f} CPU-s ({w2 - w0:.1f} s wall)")
    if args.tff:
      compiler.desugar_and_transform_to_native(round_comp)
      t3 = time.process_time()
      print(f"  compile (TFF's compiler): {t3 - t2:7.1f} CPU-s; build + "
            f"compile {t1 - t0 + t3 - t2:.1f}")
  print(harness.load_line())


if __name__ == "__main__":
  harness.run_main(main)
