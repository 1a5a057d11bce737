"""Small clients: the package's round vs the plain per-client floor.

Issue 18: with clients of a few examples, per-client overhead, not SGD,
sets the round time. Variants, interleaved with the floor in one process
(a, b, a, c, ...), per task and clients per round C:
  a  plain floor:  the fastest per-client loop in plain TensorFlow: one
                   `tf.function` whose `tf.while_loop` takes, per client, its
                   examples (gathered from in-graph arrays), loads the global
                   weights, runs its ceil(n / B) SGD steps and adds its
                   example-weighted delta; the server step adds the mean.
  b  ungrouped:    this package's FedAvg as the binaries run it
                   (`training_loop.build_training_process`, client datasets
                   built in the executor from round keys), one client a slot;
  c  grouped:      the same with client groups (`learning.client_groups`,
                   `--client_group_size`; 'auto' unless --group_size, which
                   takes a list: one grouped variant per size);
  d  train_main:   the round `train_main --dataset=synthetic_mnist
                   --num_clients=K --examples_per_client=n
                   --clients_per_round=C --algorithm=fedavg` runs, no group
                   flag: its command line parsed and checked as the binary
                   does, its experiment built by `runner.build_experiment`,
                   its rounds those of its own sampler (mnist tasks only;
                   issue 27, acceptance 7).
Prints ms per client and the variant/floor ratio (min/median/max) of wall
and CPU seconds (this process + the TFF worker), with the load average
before and after each (task, C).

Tasks: mnist4 / mnist20 (28x28x1, mnist_cnn, clients of 4 / 20 examples),
celeba20 (84x84x3, celeba_cnn, 20 images, read from per-client files); B=10,
E=1, client SGD 0.05.

  python -m benchmarks.bench_small_clients --tasks=mnist4 --clients=100
  python -m benchmarks.bench_small_clients --tasks=mnist4 --clients=100 \
      --variants=train_main --rounds=7          # acceptance 7
  python -m benchmarks.bench_small_clients --tasks=mnist4 --clients=100 \
      --variants=grouped --group_size=10,25,50  # group sizes side by side
  python -m benchmarks.bench_small_clients --quick
"""

import argparse
import math
import os
import statistics
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top
import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top

from benchmarks import harness  # pylint: disable=g-import-not-at-top
from federated_vision import algorithms
from federated_vision import models as models_lib
from federated_vision import training_loop
from federated_vision.learning import client_groups
from federated_vision.methods import groups as group_size_lib
from federated_vision.data import archives
from federated_vision.data import celeba
from federated_vision.data import cifar
from federated_vision.data import client_data as cdl
from federated_vision.data import round_keys
from federated_vision.data import mnist
from federated_vision.models import celeba as celeba_models
from federated_vision.models import mnist as mnist_models
from federated_vision.runtime import contexts as runtime_contexts

TASKS = {  # name: (input shape, examples per client, model)
    "mnist4": ((28, 28, 1), 4, "mnist_cnn"),
    "mnist20": ((28, 28, 1), 20, "mnist_cnn"),
    "celeba20": ((84, 84, 3), 20, "celeba_cnn"),
}
# The binary's dataset for a task (variant train_main).
TRAIN_MAIN_DATASETS = {"mnist4": "synthetic_mnist",
                       "mnist20": "synthetic_mnist"}
BATCH_SIZE = 10  # == train_main's --client_batch_size default.
CLIENT_LR = 0.05  # == its --client_learning_rate default.


def build_task(task: str, num_clients: int, storage_dir: str):
  """(FederatedDataset, keras_model_fn, raw uint8 x, int labels, partition)."""
  shape, n, model = TASKS[task]
  arrays = archives.synthetic_image_arrays(
      shape, [str(c) for c in range(10 if model == "mnist_cnn" else 2)],
      num_clients * n, 10, seed=0)
  part = {f"c{k}": np.arange(k * n, (k + 1) * n) for k in range(num_clients)}
  if model == "mnist_cnn":
    fed = mnist.from_arrays("synthetic_mnist", arrays, part,
                            storage_dir=storage_dir)
    keras_model_fn = lambda: mnist_models.create_cnn(seed=0)
  else:
    # Per-client files (max_inline_bytes=0), as a real image data set reads.
    fed = cifar.from_arrays("synthetic_celeba", arrays, part, 2,
                            storage_dir=storage_dir, max_inline_bytes=0)
    fed = fed._replace(train_map_fn=celeba.train_map_fn)
    keras_model_fn = lambda: celeba_models.create_celeba_cnn(seed=0)
  return fed, keras_model_fn, arrays.train_x, arrays.train_y, part


class PlainFloor:
  """FedAvg rounds of small clients in plain TF, all clients in one graph.

  Per client (a `tf.while_loop` iteration): gather its n examples, load the
  global weights, ceil(n / B) SGD steps on consecutive slices of B, add
  n * delta. No tf.data, no Python per client: the floor of the work.
  """

  def __init__(self, keras_model_fn, x: np.ndarray, y: np.ndarray,
               examples: int):
    self._model = keras_model_fn()
    self._global = [tf.Variable(v) for v in self._model.trainable_variables]
    self._x = tf.constant(x)
    self._y = tf.constant(np.asarray(y, np.int32))
    self._n = examples
    self._steps = math.ceil(examples / BATCH_SIZE)

  @tf.function
  def round(self, rows):
    model, trainable = self._model, self._model.trainable_variables
    total = tuple(tf.zeros_like(g) for g in self._global)
    weight = tf.constant(0.0)
    loss_sum = tf.constant(0.0)
    for row in rows:
      start = row * self._n
      x = tf.cast(self._x[start:start + self._n], tf.float32) / 255.0
      y = self._y[start:start + self._n]
      for v, g in zip(trainable, self._global):
        v.assign(g)
      for s in range(self._steps):
        xb, yb = x[s * BATCH_SIZE:(s + 1) * BATCH_SIZE], y[s * BATCH_SIZE:(s + 1) * BATCH_SIZE]
        with tf.GradientTape() as tape:
          losses = models_lib.per_example_loss(yb, model(xb, training=True))
          loss = tf.reduce_mean(losses)
        for v, g in zip(trainable, tape.gradient(loss, trainable)):
          v.assign_sub(CLIENT_LR * g)
        loss_sum += tf.reduce_sum(losses)
      n = tf.constant(float(self._n))
      total = tuple(t + n * (g - v) for t, g, v in
                    zip(total, self._global, trainable))
      weight += n
    for g, t in zip(self._global, total):
      g.assign_sub(t / weight)
    return loss_sum / weight


VARIANTS = ("ungrouped", "grouped", "train_main")


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--tasks", default="mnist4,mnist20,celeba20")
  parser.add_argument("--clients", default="10,100,400",
                      help="clients per round C, comma-separated")
  parser.add_argument("--num_clients", type=int, default=0,
                      help="K (default max(2 C, 1000) for mnist, 2 C celeba)")
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--variants", default="ungrouped,grouped",
                      help=f"comma-separated, of {', '.join(VARIANTS)}")
  parser.add_argument("--group_size", default="auto",
                      help="the grouped variant's sizes, comma-separated "
                           "('auto' or N each)")
  parser.add_argument("--quick", action="store_true",
                      help="mnist4, C=10, 2 rounds (a smoke run)")
  harness.add_worker_config_arguments(parser)
  args = parser.parse_args(argv)
  worker_config = harness.worker_config_from_arguments(args)
  tasks = ["mnist4"] if args.quick else args.tasks.split(",")
  clients = [10] if args.quick else [int(c) for c in args.clients.split(",")]
  rounds = 2 if args.quick else args.rounds
  variants = [v for v in args.variants.split(",") if v]
  bad = set(tasks) - set(TASKS) | set(variants) - set(VARIANTS)
  if bad:
    parser.error(f"unknown tasks/variants {sorted(bad)}")
  if "train_main" in variants and set(tasks) - set(TRAIN_MAIN_DATASETS):
    parser.error(f"--variants=train_main: tasks "
                 f"{', '.join(TRAIN_MAIN_DATASETS)} only")
  try:
    group_sizes = [group_size_lib.parse_group_size(g)
                   for g in args.group_size.split(",")]
  except ValueError as e:
    parser.error(f"--group_size: {e}")
  print(harness.load_line(), flush=True)
  table = []
  for task in tasks:
    for c in clients:
      table += run_point(task, c, args.num_clients, rounds, variants,
                         group_sizes, worker_config)
  print("\ntask      C   variant     G  ms/client (floor)  wall ratio "
        "min/median/max   CPU ratio min/median/max   load before/after")
  for row in table:
    print(row)
  print(harness.load_line())
  return table


def train_main_round(task: str, c: int, k: int, output_dir: str):
  """(training process, sampler, group size) of the round `train_main`
  runs on `task`'s data with no group flag (its flags parsed and checked by
  `repeat.checked_flags`, its one method built by `runner.build_experiment`,
  its process composed by `training_loop.build_training_process`)."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from experiments import repeat  # pylint: disable=g-import-not-at-top
  from experiments import train_main  # pylint: disable=g-import-not-at-top,unused-import
  from federated_vision.experiment import runner  # pylint: disable=g-import-not-at-top
  flags.FLAGS.unparse_flags()
  flags.FLAGS([
      "train_main", f"--dataset={TRAIN_MAIN_DATASETS[task]}",
      f"--num_clients={k}", f"--examples_per_client={TASKS[task][1]}",
      f"--clients_per_round={c}", "--algorithm=fedavg",
      f"--root_output_dir={output_dir}", "--experiment_name=bench"])
  replicas, resolved = repeat.checked_flags(flags.FLAGS)
  exp = runner.build_experiment(replicas[0], resolved)
  (method,) = exp.methods
  process = training_loop.build_training_process(method.process,
                                                 exp.fed_data, method.spec)
  return process, method.sampler, method.settings["client_group_size"]


def run_point(task, c, num_clients, rounds, variants, group_sizes,
              worker_config=None):
  """Interleaved rounds of one (task, C); returns the table's rows."""
  load_before = os.getloadavg()[0]
  k = num_clients or (2 * c if task == "celeba20" else max(2 * c, 1000))
  storage = tempfile.TemporaryDirectory(prefix="fv_bench_small_")
  fed, keras_model_fn, x, y, part = build_task(task, k, storage.name)
  n = TASKS[task][1]
  spec = cdl.TrainingSpec(batch_size=BATCH_SIZE, epochs=1, seed=0)
  dataset_fn = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec, fed.train_map_fn)
  model_fn = models_lib.build_tff_model_fn(
      keras_model_fn, dataset_fn(tf.constant("c0")).element_spec)
  sgd = tff.learning.optimizers.build_sgdm
  rng = np.random.default_rng(0)
  picks = [rng.choice(k, c, replace=False) for _ in range(rounds + 1)]
  ids = fed.client_data.client_ids
  package_keys = lambda rep: [round_keys.round_key(ids[i], rep + 1)
                              for i in picks[rep]]
  runs = {}  # name: (process, round -> keys, group size)
  if "ungrouped" in variants:
    runs["ungrouped"] = (training_loop.build_training_process(
        algorithms.build_fedavg(model_fn, sgd(CLIENT_LR)), fed, spec),
                         package_keys, 1)
  if "grouped" in variants:
    for size in group_sizes:
      method = client_groups.GroupedMethod(
          model_fn, sgd(CLIENT_LR), None,
          group_size=group_size_lib.resolve_group_size(size, c))
      name = "grouped" if len(group_sizes) == 1 else f"grouped:{size}"
      runs[name] = (training_loop.build_training_process(method, fed, spec),
                    package_keys, method.group_size)
  if "train_main" in variants:
    process, sampler, size = train_main_round(task, c, k, storage.name)
    runs["train_main"] = (process, lambda rep: sampler.round_keys(rep + 1),
                          size)
  plain = PlainFloor(keras_model_fn, x, y, n)  # After the TFF models.
  print(f"{task}: C={c} of K={k} clients x {n} examples, B={BATCH_SIZE}, "
        f"{rounds} rounds after 1 warm-up; {harness.load_line()}", flush=True)
  with runtime_contexts.managed_execution_context(-1, worker_config) as pool:
    states = {name: run[0].initialize() for name, run in runs.items()}

    def step(name):
      process, keys, _ = runs[name]
      def run(rep):
        out = process.next(states[name], keys(rep))
        states[name] = out.state
        loss = float(out.metrics["client_work"]["train"]["loss"])
        if not np.isfinite(loss):
          raise RuntimeError(f"{name}: non-finite training loss {loss}")
      return run

    results = harness.interleave(
        lambda rep: float(plain.round(tf.constant(picks[rep], tf.int64))),
        {name: step(name) for name in runs}, rounds,
        harness.Clock(lambda: pool.pids))
  storage.cleanup()
  load_after = os.getloadavg()[0]
  rows = []
  for name, comp in results.items():
    ms = lambda samples: 1000 * statistics.median(s.wall for s in samples) / c
    g = runs[name][2]
    rows.append(f"{task:8s} {c:4d} {name:11s} {g:3d} {ms(comp.samples):7.2f} "
                f"({ms(comp.baseline):5.2f})  {comp.wall.min:5.2f} "
                f"{comp.wall.median:5.2f} {comp.wall.max:5.2f}         "
                f"{comp.cpu.min:5.2f} {comp.cpu.median:5.2f} "
                f"{comp.cpu.max:5.2f}          {load_before:5.2f} "
                f"{load_after:5.2f}")
  return rows


if __name__ == "__main__":
  harness.run_main(main)
