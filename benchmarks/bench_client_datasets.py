"""Client datasets built in the executor from ids vs passed from Python.

Runs the same FedAvg process on the same clients and rounds both ways, side
by side in one process, and prints the seconds per round and their ratio.

  python -m benchmarks.bench_client_datasets [--rounds 10] [--clients 10]
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # pylint: disable=g-import-not-at-top
import tensorflow_federated as tff

from federated_vision import algorithms
from federated_vision.data import client_data as cdl
from federated_vision import execution
from federated_vision.algorithms import sampling
from federated_vision import training_loop
from federated_vision.data import digits
from federated_vision.models import build_tff_model_fn
from federated_vision.models import digits as digits_models


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--rounds", type=int, default=10)
  parser.add_argument("--clients", type=int, default=10)
  args = parser.parse_args()
  fed = digits.load_federated(20, 0.5, seed=0)
  spec = cdl.TrainingSpec(batch_size=10, seed=0)
  dataset_fn = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec, fed.train_map_fn)
  model_fn = build_tff_model_fn(digits_models.create_digits_cnn,
                                dataset_fn(tf.constant("00")).element_spec)
  process = algorithms.build_fedavg(
      model_fn, tff.learning.optimizers.build_sgdm(0.05))
  in_executor = training_loop.build_training_process(process, fed, spec)
  sampler = sampling.UniformSampler(fed.client_data.client_ids, args.clients)
  times = {}
  with execution.managed_execution_context():
    for name in ("in_executor", "python_side"):
      state = (in_executor if name == "in_executor" else process).initialize()
      total = 0.0
      for r in range(args.rounds + 1):  # Round 0 warms up (compilation).
        keys = sampler.round_keys(r)
        t0 = time.perf_counter()
        if name == "in_executor":
          state = in_executor.next(state, keys).state
        else:
          datasets = [dataset_fn(tf.constant(k)) for k in keys]
          state = process.next(state, datasets).state
        if r:
          total += time.perf_counter() - t0
      times[name] = total / args.rounds
  print(f"{args.clients} digits clients/round, {args.rounds} rounds after warm-up")
  for name, t in times.items():
    print(f"  {name:12s} {t * 1000:8.1f} ms/round")
  print(f"  python_side / in_executor = {times['python_side'] / times['in_executor']:.2f}x")


if __name__ == "__main__":
  main()
