"""Round time of TFF vs a plain TensorFlow loop doing the same SGD steps.

Variants, run interleaved with the plain loop in one process (a, b, a, c, ...):
  a  plain:       the faster of two plain TensorFlow FedAvg loops over the
                  same client batches (`benchmarks.plain_loops`): the SGD
                  loop inside one `tf.function` per client (plain_graph) or
                  a per-batch `tf.function` step called from Python
                  (plain_step). Both are run interleaved first
                  (--calibration_rounds) and reported; the faster by CPU
                  seconds is the reference for the rest;
  b  stock_tff:   `tff.learning.algorithms.build_weighted_fed_avg` with
                  Python-side datasets (the same pipeline, built per round);
  c  fedavg, fedir, fedvc: this package's methods on the default path, as
                  `train_main` and the presets build them
                  (`methods.build_method` with `--client_group_size=auto`:
                  client groups as the default chooses them;
                  `training_loop.build_training_process`: client datasets
                  built in the executor from round keys, shuffle +
                  augmentation; FedIR with q_k from the clients' whole-data
                  label counts, as `--fedir`).
Extra variants on request (--variants): fedavg_ungrouped / fedir_ungrouped
(one client a TFF slot, `--client_group_size=1`), fedavg_reduce /
fedir_reduce (TFF's `dataset.reduce` client loop, the state before that
fix) and fedir_recount (q_k counted over the round's mapped batches).
Every variant uses the same clients, pipeline (raw examples read from
per-client files, seeded shuffle, augmentation, batching), model, client
SGD and server averaging. Prints b/a and c/a of wall and CPU seconds (this
process + the TFF worker) as median (min-max) over the measured rounds, and
the cores each side keeps busy (CPU / wall seconds). --reference=plain_step
skips the calibration and compares against the per-step loop.

  python -m benchmarks.bench_round_time                      # CIFAR CNN
  python -m benchmarks.bench_round_time --model=mobilenet_v2_gn
  python -m benchmarks.bench_round_time --quick
  python -m benchmarks.bench_round_time --mixed_precision=compare

CIFAR: Hsu et al. 2019's CNN on synthetic CIFAR (10 clients x 500, B=64,
E=1). MobileNetV2-GN: 224 px synthetic images, 10 clients x 13, B=8.
digits_cnn, mnist_2nn, mnist_cnn, celeba_cnn: synthetic images of their
shapes, 10 clients x 100, B=10.

--mixed_precision=float32|bfloat16 runs everything at that precision;
`compare` instead times, interleaved, this package's FedAvg round in the TFF
worker with bfloat16 against float32 (the measurement that decides which
models accept --mixed_precision=bfloat16: `ModelSpec.bfloat16_cpu_ratio`),
then the same in plain TF (the plain_step loop).
"""

import contextlib

import argparse
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top
import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top

from benchmarks import harness  # pylint: disable=g-import-not-at-top
from benchmarks import plain_loops  # pylint: disable=g-import-not-at-top
from federated_vision import algorithms
from federated_vision import methods as methods_lib
from federated_vision.runtime import contexts as runtime_contexts
from federated_vision import models as models_lib
from federated_vision import training_loop
from federated_vision.algorithms import fedir as fedir_lib
from federated_vision.data import archives
from federated_vision.data import cifar
from federated_vision.data import client_data as cdl
from federated_vision.data import round_keys
from federated_vision.data import partition as partition_lib
from federated_vision.models import cifar as cifar_models
from federated_vision.methods import groups as groups_lib
from federated_vision.tasks import models as model_registry

VARIANTS = ("stock_tff", "fedavg", "fedir", "fedvc")
# On request: before the loop fix (TFF's default `dataset.reduce` client
# loop), and FedIR counting q_k over the round's mapped batches.
EXTRA_VARIANTS = ("fedavg_ungrouped", "fedir_ungrouped", "fedavg_reduce",
                  "fedir_reduce", "fedir_recount")
# The default path's methods (`methods.build_method`'s configs).
DEFAULT_PATH = {"fedavg": (), "fedir": ("fedir",), "fedvc": ("fedvc",)}
_REDUCE = tff.learning.LoopImplementation.DATASET_REDUCE
CLIENT_LR = 0.05


def _mobilenet_map_fn(element, seed):
  """Random flip of a [0, 1] float image (MobileNetV2 inputs)."""
  image = tf.image.convert_image_dtype(element["x"], tf.float32)
  image = tf.image.stateless_random_flip_left_right(image, seed=seed)
  return {"x": image, "y": tf.cast(element["y"], tf.int32)}


# Input shape of the small models' synthetic images.
SMALL_MODELS = {"digits_cnn": (8, 8, 1), "mnist_2nn": (28, 28, 1),
                "mnist_cnn": (28, 28, 1), "celeba_cnn": (84, 84, 3)}
INPUT_SHAPES = dict(SMALL_MODELS, cifar_cnn=cifar_models.CIFAR_INPUT_SHAPE,
                    mobilenet_v2_gn=(224, 224, 3))
MODELS = ("cifar_cnn", "mobilenet_v2_gn") + tuple(SMALL_MODELS)


@contextlib.contextmanager
def _global_policy(name: str):
  """Keras' global policy `name` inside, the previous one restored after.

  Benchmark only: mobilenet_v2_gn has no per-layer precision option (the
  package refuses bfloat16 for it), so its bfloat16 twin is built under the
  global policy, which this process restores right after construction.
  """
  previous = tf.keras.mixed_precision.global_policy()
  tf.keras.mixed_precision.set_global_policy(name)
  try:
    yield
  finally:
    tf.keras.mixed_precision.set_global_policy(previous)


def _mobilenet_bf16(num_classes: int) -> tf.keras.Model:
  """MobileNetV2-GN computing in bfloat16, float32 logits (a float32
  linear activation on the output), float32 variables."""
  from federated_vision.models import mobilenet_v2  # pylint: disable=g-import-not-at-top
  with _global_policy("mixed_bfloat16"):
    model = mobilenet_v2.create_mobilenet_v2_gn(num_classes=num_classes,
                                                seed=0)
  logits = tf.keras.layers.Activation("linear", dtype="float32")(model.output)
  return tf.keras.Model(model.input, logits)


def model_builder(model: str, num_classes: int, input_shape,
                  mixed_precision: str):
  """A no-arg Keras builder of `model` at `mixed_precision` (the package's
  registry builder, except mobilenet_v2_gn in bfloat16: `_mobilenet_bf16`)."""
  if model == "mobilenet_v2_gn" and mixed_precision == "bfloat16":
    return lambda: _mobilenet_bf16(num_classes)
  if model == "cifar_cnn":  # As the registry's builder, without its check.
    return lambda: cifar_models.create_cifar_cnn(
        num_classes, tuple(input_shape), seed=0,
        mixed_precision=mixed_precision)
  config = model_registry.ModelConfig(model=model,
                                      mixed_precision=mixed_precision)
  spec = model_registry.get_model(model)
  resolved = spec.resolve(config, {})
  # spec.build, not build_keras_model_fn: that refuses what is measured here.
  return lambda: spec.build(config, resolved, num_classes, tuple(input_shape),
                            0)


def build_data(model: str, num_clients: int, examples: int, storage_dir: str,
               mixed_precision: str = "float32"):
  """(FederatedDataset, keras_model_fn, num_classes) of synthetic data."""
  if model in SMALL_MODELS:
    num_classes = 2 if model == "celeba_cnn" else 10
    arrays = archives.synthetic_image_arrays(
        SMALL_MODELS[model], [str(c) for c in range(num_classes)],
        num_clients * examples, 1, seed=0)
    part = {f"c{k}": np.arange(k * examples, (k + 1) * examples)
            for k in range(num_clients)}
    fed = cifar.from_arrays(f"synthetic_{model}", arrays, part, num_classes,
                            storage_dir=storage_dir, max_inline_bytes=0)
    fed = fed._replace(train_map_fn=_mobilenet_map_fn)
    return fed, model_builder(model, num_classes, SMALL_MODELS[model],
                              mixed_precision), num_classes
  if model == "cifar_cnn":
    num_classes = 10
    arrays = cifar.synthetic_arrays(num_clients * examples, 10, num_classes,
                                    seed=0)
    part = partition_lib.dirichlet_partition(arrays.train_y, num_clients,
                                             examples, alpha=1.0, seed=0)
    # max_inline_bytes=0: per-client files, as the real data set's loader.
    fed = cifar.from_arrays("synthetic_cifar10", arrays, part, num_classes,
                            storage_dir=storage_dir, max_inline_bytes=0)
    keras_model_fn = model_builder(model, num_classes,
                                   cifar_models.CIFAR_INPUT_SHAPE,
                                   mixed_precision)
    return fed, keras_model_fn, num_classes
  if model == "mobilenet_v2_gn":
    from federated_vision.models import mobilenet_v2  # pylint: disable=g-import-not-at-top
    num_classes = 10
    arrays = archives.synthetic_image_arrays(
        (224, 224, 3), [str(c) for c in range(num_classes)],
        num_clients * examples, 1, seed=0)
    part = {f"c{k}": np.arange(k * examples, (k + 1) * examples)
            for k in range(num_clients)}
    fed = cifar.from_arrays("synthetic_224", arrays, part, num_classes,
                            storage_dir=storage_dir, max_inline_bytes=0)
    fed = fed._replace(train_map_fn=_mobilenet_map_fn)
    keras_model_fn = model_builder(model, num_classes, (224, 224, 3),
                                   mixed_precision)
    return fed, keras_model_fn, num_classes
  raise ValueError(f"--model must be one of {', '.join(MODELS)}, got "
                   f"{model!r}")


def default_path(name: str, model_fn, fed, num_classes: int, examples: int,
                 batch: int):
  """(training process, client group size) of method `name` as `train_main`
  builds it: `methods.build_method` with `--client_group_size=auto`, its
  process composed by `training_loop.build_training_process`."""
  ids = fed.client_data.client_ids
  options = dict(client_learning_rate=CLIENT_LR, client_batch_size=batch,
                 client_epochs=1)
  if name == "fedvc":
    options["virtual_client_size"] = examples
  config = methods_lib.MethodConfig("fedavg", variants=DEFAULT_PATH[name],
                                    **options)
  inputs = methods_lib.MethodInputs(
      model_fn, num_classes, ids, [fed.client_sizes[c] for c in ids],
      len(ids), seed=0)
  method = methods_lib.build_method(config, inputs,
                                    client_group_size=groups_lib.AUTO)
  return (training_loop.build_training_process(method.process, fed,
                                               method.spec),
          method.settings["client_group_size"])


def compare_precision(args, clients: int, examples: int, batch: int,
                      rounds: int, worker_config) -> dict:
  """FedAvg rounds in the TFF worker, then plain_step rounds in plain TF:
  bfloat16 against float32, interleaved; prints both tables and the two
  precisions' training losses round by round (same data, same initial
  weights)."""
  storage = tempfile.TemporaryDirectory(prefix="fv_bench_")
  fed, _, num_classes = build_data(args.model, clients, examples, storage.name)
  shape = INPUT_SHAPES[args.model]
  builders = {mp: model_builder(args.model, num_classes, shape, mp)
              for mp in model_registry.MIXED_PRECISIONS}
  ids = fed.client_data.client_ids
  spec = cdl.TrainingSpec(batch_size=batch, epochs=1, seed=0)
  dataset_fn = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec, fed.train_map_fn)
  keys = [[round_keys.round_key(c, rep + 1) for c in ids]
          for rep in range(rounds + 1)]
  element_spec = dataset_fn(tf.constant(ids[0])).element_spec
  sgd = tff.learning.optimizers.build_sgdm(CLIENT_LR)
  processes = {mp: training_loop.build_training_process(
      algorithms.build_fedavg(
          models_lib.build_tff_model_fn(builders[mp], element_spec), sgd),
      fed, spec) for mp in builders}
  # After every TFF model was built (see main).
  plains = {mp: plain_loops.PlainFedAvgSteps(builders[mp], CLIENT_LR)
            for mp in builders}
  losses = {mp: [] for mp in builders}
  print(f"{args.model}: {clients} clients x {examples} examples, B={batch}, "
        f"E=1, {rounds} rounds after 1 warm-up; bfloat16 vs float32; worker "
        f"{worker_config}")
  print(harness.load_line(), flush=True)
  with runtime_contexts.managed_execution_context(
      args.max_concurrent_computation_calls, worker_config) as pool:
    states = {mp: p.initialize() for mp, p in processes.items()}

    def fedavg(mp):
      def run(rep):
        out = processes[mp].next(states[mp], keys[rep])
        states[mp] = out.state
        losses[mp].append(float(out.metrics["client_work"]["train"]["loss"]))
      return run

    def plain(mp):
      return lambda rep: plains[mp].round(
          [dataset_fn(tf.constant(k)) for k in keys[rep]])

    clock = harness.Clock(lambda: pool.pids)
    print("in the TFF worker (this package's FedAvg round):")
    worker = harness.interleave(fedavg("float32"),
                                {"fedavg_bfloat16": fedavg("bfloat16")},
                                rounds, clock)
    print(harness.format_table(worker, "fedavg_float32"))
    print(harness.load_line(), flush=True)
    print("in plain TF (plain_step):")
    plain_tf = harness.interleave(plain("float32"),
                                  {"plain_step_bfloat16": plain("bfloat16")},
                                  rounds, clock)
    print(harness.format_table(plain_tf, "plain_step_float32"))
  print(harness.load_line())
  for rep, (a, b) in enumerate(zip(losses["float32"], losses["bfloat16"])):
    print(f"round {rep + 1} train loss: float32 {a:.6f}  bfloat16 {b:.6f}  "
          f"|diff| {abs(a - b):.2e} ({abs(a - b) / abs(a):.2%})")
  storage.cleanup()
  return {"worker": worker, "plain": plain_tf, "losses": losses}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", default="cifar_cnn", choices=MODELS)
  parser.add_argument("--mixed_precision", default="float32",
                      choices=model_registry.MIXED_PRECISIONS + ("compare",),
                      help="the models' precision; compare: FedAvg in the "
                      "worker and plain TF, bfloat16 vs float32")
  parser.add_argument("--rounds", type=int, default=6)
  parser.add_argument("--clients", type=int, default=None)
  parser.add_argument("--examples", type=int, default=None,
                      help="examples per client")
  parser.add_argument("--batch_size", type=int, default=None)
  parser.add_argument("--variants", default=",".join(VARIANTS))
  parser.add_argument("--calibration_rounds", type=int, default=None,
                      help="measured rounds of plain_step vs plain_graph "
                      "that pick the reference (default 2; 1 with --quick)")
  parser.add_argument("--reference", default="auto",
                      choices=("auto",) + tuple(plain_loops.PLAIN_LOOPS),
                      help="the plain loop to compare against; auto: the "
                      "faster by CPU in --calibration_rounds")
  parser.add_argument("--quick", action="store_true",
                      help="2 rounds, 4 clients (a smoke run for make bench)")
  parser.add_argument("--max_concurrent_computation_calls", type=int,
                      default=-1)
  harness.add_worker_config_arguments(parser)
  args = parser.parse_args(argv)
  defaults = {"cifar_cnn": (10, 500, 64), "mobilenet_v2_gn": (10, 13, 8)}
  defaults.update({m: (10, 100, 10) for m in SMALL_MODELS})
  clients, examples, batch = defaults[args.model]
  clients = args.clients or (4 if args.quick else clients)
  examples = args.examples or examples
  batch = args.batch_size or batch
  rounds = 2 if args.quick else args.rounds
  if args.calibration_rounds is None:
    args.calibration_rounds = 1 if args.quick else 2
  if args.calibration_rounds < 1:
    parser.error(f"--calibration_rounds must be >= 1, got "
                 f"{args.calibration_rounds}")
  variants = [v for v in args.variants.split(",") if v]
  unknown = set(variants) - set(VARIANTS + EXTRA_VARIANTS)
  if unknown:
    parser.error(f"--variants: unknown {sorted(unknown)}; choose from "
                 f"{VARIANTS + EXTRA_VARIANTS}")
  worker_config = harness.worker_config_from_arguments(args)
  if args.mixed_precision == "compare":
    return compare_precision(args, clients, examples, batch, rounds,
                             worker_config)

  storage = tempfile.TemporaryDirectory(prefix="fv_bench_")
  fed, keras_model_fn, num_classes = build_data(args.model, clients, examples,
                                                storage.name,
                                                args.mixed_precision)
  ids = fed.client_data.client_ids
  spec = cdl.TrainingSpec(batch_size=batch, epochs=1, seed=0)
  dataset_fn = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec, fed.train_map_fn)
  keys = lambda rep: [round_keys.round_key(c, rep + 1) for c in ids]
  python_datasets = lambda rep: [dataset_fn(tf.constant(k)) for k in keys(rep)]
  model_fn = models_lib.build_tff_model_fn(
      keras_model_fn, dataset_fn(tf.constant(ids[0])).element_spec)
  sgd = lambda lr: tff.learning.optimizers.build_sgdm(lr)

  runs = {}
  if "stock_tff" in variants:
    stock = tff.learning.algorithms.build_weighted_fed_avg(
        model_fn, client_optimizer_fn=sgd(CLIENT_LR),
        server_optimizer_fn=sgd(1.0))
    runs["stock_tff"] = (stock, python_datasets)
  for name in DEFAULT_PATH:
    if name in variants:
      process, size = default_path(name, model_fn, fed, num_classes,
                                   examples, batch)
      runs[name] = (process, keys)
      print(f"{name}: the default path, client groups of {size}")
  processes = {
      "fedavg_ungrouped": (lambda: algorithms.build_fedavg(
          model_fn, sgd(CLIENT_LR)), spec),
      "fedir_ungrouped": (lambda: fedir_lib.build_fedir(
          model_fn, sgd(CLIENT_LR), num_classes, client_label_counts=True),
                          spec),
      "fedir_recount": (lambda: fedir_lib.build_fedir(
          model_fn, sgd(CLIENT_LR), num_classes), spec),
      "fedavg_reduce": (lambda: algorithms.build_fedavg(
          model_fn, sgd(CLIENT_LR), loop_implementation=_REDUCE), spec),
      "fedir_reduce": (lambda: fedir_lib.build_fedir(
          model_fn, sgd(CLIENT_LR), num_classes,
          loop_implementation=_REDUCE), spec),
  }
  for name, (build, vspec) in processes.items():
    if name in variants:
      runs[name] = (training_loop.build_training_process(build(), fed, vspec),
                    keys)
  # After every TFF model was built: Keras invalidates eager models made
  # before a model is built in a tf.Graph (as TFF builds them).
  plains = plain_loops.build_plain_loops(keras_model_fn, CLIENT_LR)

  print(f"{args.model}: {clients} clients x {examples} examples, B={batch}, "
        f"E=1, {rounds} rounds after 1 warm-up; worker {worker_config}")
  print(harness.load_line(), flush=True)
  with runtime_contexts.managed_execution_context(
      args.max_concurrent_computation_calls, worker_config) as pool:
    states = {name: process.initialize() for name, (process, _) in runs.items()}

    def step(name):
      def run(rep):
        process, args_fn = runs[name]
        out = process.next(states[name], args_fn(rep))
        states[name] = out.state
        loss = float(out.metrics["client_work"]["train"]["loss"])
        if not np.isfinite(loss):
          raise RuntimeError(f"{name}: non-finite training loss {loss}")
      return run

    clock = harness.Clock(lambda: pool.pids)
    plain_round = lambda name: (
        lambda rep: plains[name].round(python_datasets(rep)))
    # The reference is the faster plain loop (issue 18): both interleaved
    # first, then the faster one against every TFF variant.
    reference = args.reference
    if reference == "auto":
      print(f"plain loops: {plain_loops.PLAIN_STEP} vs "
            f"{plain_loops.PLAIN_GRAPH} ({args.calibration_rounds} rounds "
            f"after 1 warm-up)")
      calibration = harness.interleave(
          plain_round(plain_loops.PLAIN_GRAPH),
          {plain_loops.PLAIN_STEP: plain_round(plain_loops.PLAIN_STEP)},
          args.calibration_rounds, clock)
      cal = calibration[plain_loops.PLAIN_STEP]
      reference = plain_loops.faster_loop(
          [v.cpu / a.cpu for a, v in zip(cal.baseline, cal.samples)])
      print(harness.format_table(calibration, plain_loops.PLAIN_GRAPH))
      print(f"reference: {reference} (the faster plain loop by CPU seconds)")
    print(harness.load_line(), flush=True)
    results = harness.interleave(
        plain_round(reference),
        {name: step(name) for name in runs}, rounds, clock)
  print(harness.format_table(results, reference))
  print(harness.load_line())
  storage.cleanup()
  return results


if __name__ == "__main__":
  harness.run_main(main)
