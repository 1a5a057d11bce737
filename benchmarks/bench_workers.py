"""Round throughput with 1, 2 and 4 local TFF workers (digits, 100 clients).

All pools run in one process and take turns (1, 2, 1, 4, ...); ratios are
against the 1-worker round right before. Each pool runs the same FedAvg
round over the same 100 clients through TFF's mergeable execution context
(`runtime.contexts.create_multi_worker_context`), so the clients are split into
contiguous slices, one per worker. On 2 cores no gain is expected (the
workers share the cores); the numbers are for larger machines.

  python -m benchmarks.bench_workers [--rounds 5] [--clients 100] [--quick]
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import harness  # pylint: disable=g-import-not-at-top
from federated_vision import training_loop
from federated_vision.data import round_keys
from federated_vision.runtime import contexts as runtime_contexts
from federated_vision.runtime import tff_internals


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--clients", type=int, default=100)
  parser.add_argument("--workers", default="1,2,4",
                      help="pool sizes; the first is the baseline")
  parser.add_argument("--quick", action="store_true",
                      help="2 rounds, 20 clients, 1 vs 2 workers")
  args = parser.parse_args(argv)
  sizes = [int(n) for n in args.workers.split(",")]
  rounds, clients = args.rounds, args.clients
  if args.quick:
    rounds, clients, sizes = 2, 20, [1, 2]
  setup = harness.digits_fedavg(num_clients=clients)
  process = training_loop.build_training_process(setup.process, setup.fed,
                                                 setup.spec)
  ids = setup.fed.client_data.client_ids
  keys = lambda rep: [round_keys.round_key(c, rep + 1) for c in ids]

  pools = {n: runtime_contexts.WorkerPool(local_workers=n) for n in sizes}
  try:
    for pool in pools.values():
      pool.start()
    contexts = {n: pool.context() for n, pool in pools.items()}
    states = {}

    def run_on(n):
      def run(rep):
        with tff_internals.install_context(contexts[n]):
          if n not in states:
            states[n] = process.initialize()
          states[n] = process.next(states[n], keys(rep)).state
      return run

    all_pids = lambda: [p for pool in pools.values() for p in pool.pids]
    print(f"digits FedAvg, {clients} clients/round, B={setup.spec.batch_size}, "
          f"{rounds} rounds after 1 warm-up; pools of {sizes} local workers")
    print(harness.load_line(), flush=True)
    results = harness.interleave(
        run_on(sizes[0]), {f"{n} workers": run_on(n) for n in sizes[1:]},
        rounds, harness.Clock(all_pids))
  finally:
    for pool in pools.values():
      pool.stop()
  print(harness.format_table(results, f"{sizes[0]} worker"))
  for name, c in results.items():
    print(f"  throughput {name}: {c.wall.median and 1 / c.wall.median:.2f}x "
          f"the {sizes[0]}-worker clients/second (median)")
  print(harness.load_line())
  return results


if __name__ == "__main__":
  harness.run_main(main)
