"""Interleaved benchmark rounds with wall and CPU seconds (Python + worker).

A benchmark compares variants against a baseline `a` by running them
interleaved in one process: for every repetition, `a, b, a, c1, a, c2, ...`,
and each variant's ratio is taken against the `a` run right before it. Load
from other processes on a shared machine then affects both sides of a ratio
alike. CPU seconds are this process's (all threads, `time.process_time`) plus
those of every TFF worker process it owns (`/proc/<pid>/stat` utime + stime).
"""

import os
import statistics
import sys
import time
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence

from federated_vision.runtime.worker_config import WorkerConfig

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
  """User + system CPU seconds of process `pid` (all its threads)."""
  with open(f"/proc/{pid}/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
  # Fields after the command: state is [0]; utime, stime are stat fields 14, 15.
  return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def process_rss_bytes(pid: int) -> int:
  """Resident set size of process `pid` in bytes."""
  with open(f"/proc/{pid}/statm") as f:
    return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Sample(NamedTuple):
  """One measured round."""
  wall: float
  cpu: float
  python_cpu: float
  worker_cpu: float


class Clock:
  """Wall and CPU seconds of this process plus its workers.

  Args:
    worker_pids: returns the pids of the workers to charge (read at the start
      and end of each measurement; a pid that changes in between fails it).
  """

  def __init__(self, worker_pids: Callable[[], Sequence[int]] = lambda: ()):
    self._worker_pids = worker_pids

  def _read(self):
    pids = tuple(p for p in self._worker_pids() if p)
    worker = {p: process_cpu_seconds(p) for p in pids}
    return time.perf_counter(), time.process_time(), worker

  def measure(self, fn: Callable[[], object]) -> Sample:
    wall0, py0, w0 = self._read()
    fn()
    wall1, py1, w1 = self._read()
    if set(w0) != set(w1):
      raise RuntimeError(f"worker pids changed during a measurement: "
                         f"{sorted(w0)} -> {sorted(w1)} (a worker restarted)")
    worker = sum(w1[p] - w0[p] for p in w1)
    return Sample(wall1 - wall0, (py1 - py0) + worker, py1 - py0, worker)


class Ratio(NamedTuple):
  """min / median / max of per-repetition ratios."""
  min: float
  median: float
  max: float

  @classmethod
  def of(cls, values: Sequence[float]) -> "Ratio":
    return cls(min(values), statistics.median(values), max(values))

  def __str__(self):
    return f"{self.median:5.2f} ({self.min:.2f}-{self.max:.2f})"


class Comparison(NamedTuple):
  """A variant's samples, its baseline's paired samples, and their ratios."""
  name: str
  samples: List[Sample]
  baseline: List[Sample]
  wall: Ratio
  cpu: Ratio


def interleave(baseline: Callable[[int], object],
               variants: Mapping[str, Callable[[int], object]],
               rounds: int, clock: Clock, warmup: int = 1,
               log: Optional[Callable[[str], None]] = print
               ) -> Dict[str, Comparison]:
  """Runs `a, v1, a, v2, ...` for `rounds` repetitions after `warmup` ones.

  Args:
    baseline: `a`; called with the repetition number (its round).
    variants: name -> callable(repetition number), one round each.
    rounds: measured repetitions (>= 1).
    clock: what to measure with.
    warmup: unmeasured repetitions first (tracing, compilation, caches).
    log: progress lines (None for silence).

  Returns:
    name -> `Comparison`; ratios are variant / the `a` run right before it.
  """
  if rounds < 1:
    raise ValueError(f"rounds must be >= 1, got {rounds}")
  pairs = {name: ([], []) for name in variants}
  for rep in range(warmup + rounds):
    for name, fn in variants.items():
      a = clock.measure(lambda: baseline(rep))
      v = clock.measure(lambda fn=fn: fn(rep))
      if rep >= warmup:
        pairs[name][0].append(a)
        pairs[name][1].append(v)
      if log:
        tag = "warm-up" if rep < warmup else f"round {rep - warmup + 1}"
        log(f"  {tag:8s} a {a.wall:6.3f}s/{a.cpu:6.3f}cpu  {name} "
            f"{v.wall:6.3f}s/{v.cpu:6.3f}cpu  (load {os.getloadavg()[0]:.2f})")
  out = {}
  for name, (a_s, v_s) in pairs.items():
    out[name] = Comparison(
        name, v_s, a_s,
        Ratio.of([v.wall / a.wall for a, v in zip(a_s, v_s)]),
        Ratio.of([v.cpu / a.cpu for a, v in zip(a_s, v_s)]))
  return out


def format_table(results: Mapping[str, Comparison], baseline_name: str = "a"
                 ) -> str:
  """The ratios as a table: median (min-max) of wall and CPU, then median
  seconds and cores busy (CPU / wall seconds of a round) of both sides."""
  lines = [f"{'variant / ' + baseline_name:32s} {'wall ratio':>18s} "
           f"{'CPU ratio':>18s}   median s: wall  cpu (py+worker) cores  "
           f"{baseline_name}: wall  cpu cores"]
  for name, c in results.items():
    med = lambda xs, f: statistics.median(getattr(s, f) for s in xs)
    cores = lambda xs: statistics.median(s.cpu / s.wall for s in xs)
    lines.append(
        f"{name:32s} {str(c.wall):>18s} {str(c.cpu):>18s}   "
        f"{med(c.samples, 'wall'):9.3f} {med(c.samples, 'cpu'):5.2f} "
        f"({med(c.samples, 'python_cpu'):.2f}+{med(c.samples, 'worker_cpu'):.2f})"
        f" {cores(c.samples):5.2f}  {med(c.baseline, 'wall'):7.3f} "
        f"{med(c.baseline, 'cpu'):5.2f} {cores(c.baseline):5.2f}")
  return "\n".join(lines)


def load_line() -> str:
  """The machine's load averages and core count, for the record."""
  one, five, fifteen = os.getloadavg()
  return (f"load average {one:.2f} {five:.2f} {fifteen:.2f} on "
          f"{os.cpu_count()} cores")


class DigitsSetup(NamedTuple):
  """A FedAvg run on the digits data set (what several benchmarks time)."""
  fed: object
  spec: object
  process: object
  dataset_fn: Callable
  model_fn: Callable


def digits_fedavg(num_clients: int = 20, batch_size: int = 10,
                  seed: int = 0) -> DigitsSetup:
  """FedAvg on digits (Dirichlet alpha 0.5), client SGD 0.05, B=`batch_size`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision import algorithms  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  from federated_vision.models import build_tff_model_fn  # pylint: disable=g-import-not-at-top
  from federated_vision.models import digits as digits_models  # pylint: disable=g-import-not-at-top
  fed = digits.load_federated(num_clients, 0.5, seed=seed)
  spec = cdl.TrainingSpec(batch_size=batch_size, seed=seed)
  dataset_fn = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec, fed.train_map_fn)
  model_fn = build_tff_model_fn(
      digits_models.create_digits_cnn,
      dataset_fn(tf.constant(fed.client_data.client_ids[0])).element_spec)
  process = algorithms.build_fedavg(
      model_fn, tff.learning.optimizers.build_sgdm(0.05))
  return DigitsSetup(fed, spec, process, dataset_fn, model_fn)


def add_worker_config_arguments(parser) -> None:
  """Adds --worker_intra_op_threads etc. to an argparse parser."""
  parser.add_argument("--worker_intra_op_threads", type=int, default=0)
  parser.add_argument("--worker_inter_op_threads", type=int, default=0)
  parser.add_argument("--worker_onednn", choices=("default", "on", "off"),
                      default="default")
  parser.add_argument("--worker_malloc_arena_max", type=int,
                      default=WorkerConfig().malloc_arena_max)
  parser.add_argument("--worker_env", action="append", default=[],
                      help="NAME=VALUE for the worker's environment")


def worker_config_from_arguments(args) -> WorkerConfig:
  """The `WorkerConfig` of `add_worker_config_arguments`' parsed arguments."""
  env = []
  for item in args.worker_env:
    name, sep, value = item.partition("=")
    if not sep or not name:
      raise ValueError(f"--worker_env={item!r}: expected NAME=VALUE")
    env.append((name, value))
  return WorkerConfig(
      intra_op_threads=args.worker_intra_op_threads,
      inter_op_threads=args.worker_inter_op_threads,
      onednn={"default": None, "on": True, "off": False}[args.worker_onednn],
      malloc_arena_max=args.worker_malloc_arena_max,
      env=tuple(env)).validate()


def run_main(main: Callable[[], object]) -> None:
  """Runs a benchmark's `main()` and exits 0 (2 for a refused argument,
  argparse's one line). TFF's import-time default context is retired first:
  left to the interpreter's exit, its `ServiceManager.__del__` prints a
  traceback (TFF 0.87; `runtime.contexts.retire_tff_default_context`)."""
  try:
    main()
  finally:
    if "tensorflow_federated" in sys.modules:
      from federated_vision.runtime import contexts  # pylint: disable=g-import-not-at-top
      contexts.retire_tff_default_context()
  sys.exit(0)
