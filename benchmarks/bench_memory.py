"""Resident memory of Python and the TFF worker over a long digits run.

Runs `training_loop.run_federated_training` (the binaries' loop: in-executor
datasets, evaluation, metrics CSV, TensorBoard, checkpoints) with FedAvg on
digits and records the RSS of this process and of the worker after rounds
50, 500 and 1,500. Prints each against round 500 (the acceptance check:
round 1,500 within 10% of round 500) and the growth per 1,000 rounds.

  python -m benchmarks.bench_memory [--rounds 1500] [--quick]
"""

import argparse
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import harness  # pylint: disable=g-import-not-at-top
from federated_vision.runtime import contexts as runtime_contexts
from federated_vision import training_loop
from federated_vision.evaluation import keras_eval
from federated_vision.learning import sampling
from federated_vision.data import client_data as cdl
from federated_vision.models import digits as digits_models

MB = 1 << 20


class _RssSampler:
  """A client sampler that records RSS when round r + 1 starts (r finished)."""

  def __init__(self, inner, at_rounds, pids):
    self._inner = inner
    self._at = set(at_rounds)
    self._pids = pids
    self.samples = {}

  def record(self, round_num):
    self.samples[round_num] = (
        harness.process_rss_bytes(os.getpid()),
        sum(harness.process_rss_bytes(p) for p in self._pids()))

  def round_keys(self, round_num):
    if round_num - 1 in self._at:
      self.record(round_num - 1)
    return self._inner.round_keys(round_num)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=1500)
  parser.add_argument("--clients_per_round", type=int, default=10)
  parser.add_argument("--at", default="50,500",
                      help="the two earlier rounds to sample (the last is "
                           "--rounds); growth is measured from the second")
  parser.add_argument("--quick", action="store_true",
                      help="60 rounds, sampled at 5, 20, 60")
  harness.add_worker_config_arguments(parser)
  args = parser.parse_args(argv)
  total = 60 if args.quick else args.rounds
  at = (5, 20, 60) if args.quick else tuple(
      int(r) for r in args.at.split(",")) + (total,)
  if sorted(set(at)) != list(at) or at[0] < 1:
    parser.error(f"--at must be increasing rounds below --rounds, got {at}")
  worker_config = harness.worker_config_from_arguments(args)
  mid = at[1]
  setup = harness.digits_fedavg(num_clients=20)
  eval_ds = cdl.build_eval_dataset(setup.fed.test_data, setup.fed.eval_map_fn)
  evaluate = keras_eval.build_keras_evaluate_fn(
      digits_models.create_digits_cnn, eval_ds)
  print(f"digits FedAvg, {args.clients_per_round} clients/round, "
        f"{total} rounds, evaluation every 10; RSS after rounds {at}; "
        f"worker {worker_config}")
  print(harness.load_line(), flush=True)
  with tempfile.TemporaryDirectory(prefix="fv_bench_memory_") as out, \
      runtime_contexts.managed_execution_context(config=worker_config) as pool:
    sampler = _RssSampler(
        sampling.UniformSampler(setup.fed.client_data.client_ids,
                                args.clients_per_round, seed=0),
        at, lambda: pool.pids)
    result = training_loop.run_federated_training(
        "fedavg", setup.process, setup.fed, setup.spec, sampler, evaluate,
        training_loop.LoopConfig(total_rounds=total, output_dir=out,
                                 rounds_per_eval=10, rounds_per_checkpoint=100),
        log_fn=None)
    sampler.record(total)
  seconds = [float(r["round_seconds"]) for r in result.rows]
  print(f"{'after round':>12s} {'python MB':>10s} {'worker MB':>10s}"
        f" {'python/@' + str(mid):>11s} {'worker/@' + str(mid):>11s}")
  py_mid, w_mid = sampler.samples[mid]
  for r in at:
    py, w = sampler.samples[r]
    print(f"{r:12d} {py / MB:10.1f} {w / MB:10.1f} {py / py_mid:11.3f} "
          f"{w / w_mid:11.3f}")
  (py_end, w_end), span = sampler.samples[at[-1]], at[-1] - mid
  print(f"growth per 1,000 rounds after round {mid}: python "
        f"{(py_end - py_mid) / MB * 1000 / span:+.1f} MB, worker "
        f"{(w_end - w_mid) / MB * 1000 / span:+.1f} MB")
  quarter = max(1, len(seconds) // 4)
  print(f"round seconds: first quarter median "
        f"{sorted(seconds[:quarter])[quarter // 2]:.3f}, last quarter median "
        f"{sorted(seconds[-quarter:])[quarter // 2]:.3f} (not interleaved)")
  ok = py_end <= 1.1 * py_mid and w_end <= 1.1 * w_mid
  print(f"round {at[-1]} within 10% of round {mid}: {'yes' if ok else 'NO'}")
  print(harness.load_line())
  return sampler.samples


if __name__ == "__main__":
  harness.run_main(main)
