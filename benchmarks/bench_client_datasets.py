"""Client datasets built in the executor from ids vs passed from Python.

Runs the same FedAvg process on the same digits clients and rounds both ways,
interleaved in one process (in-executor, Python-side, in-executor, ...), and
prints python_side / in_executor of wall and CPU seconds (Python + worker),
median (min-max) over the measured rounds.

  python -m benchmarks.bench_client_datasets [--rounds 10] [--clients 10]
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # pylint: disable=g-import-not-at-top

from benchmarks import harness
from federated_vision.runtime import contexts as runtime_contexts
from federated_vision import training_loop
from federated_vision.learning import sampling


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=10)
  parser.add_argument("--clients", type=int, default=10)
  parser.add_argument("--quick", action="store_true", help="3 rounds")
  args = parser.parse_args(argv)
  rounds = 3 if args.quick else args.rounds
  setup = harness.digits_fedavg(num_clients=20)
  in_executor = training_loop.build_training_process(setup.process, setup.fed,
                                                     setup.spec)
  sampler = sampling.UniformSampler(setup.fed.client_data.client_ids,
                                    args.clients)
  print(f"digits FedAvg, {args.clients} clients/round, {rounds} rounds after "
        "1 warm-up")
  print(harness.load_line(), flush=True)
  with runtime_contexts.managed_execution_context() as pool:
    states = {"in_executor": in_executor.initialize(),
              "python_side": setup.process.initialize()}

    def run_in_executor(rep):
      keys = sampler.round_keys(rep + 1)
      states["in_executor"] = in_executor.next(states["in_executor"], keys).state

    def run_python_side(rep):
      datasets = [setup.dataset_fn(tf.constant(k))
                  for k in sampler.round_keys(rep + 1)]
      states["python_side"] = setup.process.next(states["python_side"],
                                                 datasets).state

    results = harness.interleave(run_in_executor,
                                 {"python_side": run_python_side}, rounds,
                                 harness.Clock(lambda: pool.pids))
  print(harness.format_table(results, "in_executor"))
  print(harness.load_line())
  return results


if __name__ == "__main__":
  harness.run_main(main)
