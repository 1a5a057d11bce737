"""The one place where absl flags become library objects.

Binaries call `define_flags()` at import time, then `build_experiment(FLAGS)`
in `main`. Every flag value is recorded in `hparams.json` next to results.
"""

import math
import os
from typing import Callable, Dict, List, NamedTuple, Optional

from absl import flags

# Data sets this binary can train on: name -> (loader, keras model builder).
# Loaders take the parsed FLAGS and return a FederatedDataset.
DATASET_NAMES = ("digits",)
ALGORITHMS = ("fedavg", "fedavgm", "fedsgd")


class FlagError(ValueError):
  """A flag value that is out of range; the message names the flag."""


def define_flags() -> None:
  """Defines the experiment flags (idempotent)."""
  if "total_rounds" in flags.FLAGS:
    return
  flags.DEFINE_enum("dataset", "digits", DATASET_NAMES, "Federated data set.")
  flags.DEFINE_list("algorithm", ["fedavg", "fedavgm"],
                    f"Comma-separated methods to run side by side; each of "
                    f"{', '.join(ALGORITHMS)}.")
  flags.DEFINE_bool("fedir", False, "Also run each algorithm with FedIR "
                    "importance reweighting (Hsu, Qi & Brown 2020).")
  flags.DEFINE_enum("fedir_target", "uniform", ["uniform", "test"],
                    "FedIR target p(y): uniform, or estimated from the "
                    "server-held test labels.")
  flags.DEFINE_bool("fedvc", False, "Also run each algorithm with FedVC "
                    "virtual clients (size-proportional sampling, N_VC "
                    "examples per client per round).")
  flags.DEFINE_integer("virtual_client_size", 64, "FedVC's N_VC.", lower_bound=1)
  flags.DEFINE_bool("include_plain", True, "With --fedir/--fedvc, also run the "
                    "plain algorithms for comparison.")
  flags.DEFINE_integer("num_clients", 20, "Clients in the partition.",
                       lower_bound=1)
  flags.DEFINE_float("alpha", 0.5, "Dirichlet concentration of the class "
                     "distribution per client (0 = one class each, inf = IID).",
                     lower_bound=0.0)
  flags.DEFINE_float("imbalance_sigma", None, "If set, client sizes are "
                     "log-normal with this sigma (heavy-tailed) instead of "
                     "equal.", lower_bound=0.0)
  flags.DEFINE_integer("clients_per_round", 10, "Clients selected per round.",
                       lower_bound=1)
  flags.DEFINE_integer("client_epochs", 1, "Local epochs E.", lower_bound=1)
  flags.DEFINE_integer("client_batch_size", 10, "Local batch size B; 0 means "
                       "the whole local data set as one batch (B = inf).",
                       lower_bound=0)
  flags.DEFINE_float("client_learning_rate", 0.05, "Client SGD learning rate.")
  flags.DEFINE_float("server_learning_rate", 1.0, "Server learning rate.")
  flags.DEFINE_float("server_momentum", 0.9, "Server momentum of FedAvgM "
                     "(FedAvg uses none).")
  flags.DEFINE_integer("total_rounds", 60, "Communication rounds.",
                       lower_bound=1)
  flags.DEFINE_integer("rounds_per_eval", 5, "Evaluate every N rounds.",
                       lower_bound=1)
  flags.DEFINE_integer("rounds_per_checkpoint", 10,
                       "Checkpoint every N rounds.", lower_bound=1)
  flags.DEFINE_integer("centralized_epochs", 30, "Epochs of the centralized "
                       "baseline; 0 skips it.", lower_bound=0)
  flags.DEFINE_integer("seed", 0, "Seed of partition, sampling, shuffling and "
                       "initialisation.")
  flags.DEFINE_string("root_output_dir", "output", "Root of all results.")
  flags.DEFINE_string("experiment_name", "digits_fedavg_vs_fedavgm",
                      "Results go to <root_output_dir>/<experiment_name>.")


class MethodSetup(NamedTuple):
  """One method of an experiment: its process, data spec and sampler."""
  name: str
  process: object
  spec: object
  sampler: object


class Experiment(NamedTuple):
  """Everything a binary needs, built from flags."""
  fed_data: object
  keras_model_fn: Callable
  methods: List[MethodSetup]
  output_dir: str
  hparams: Dict[str, object]
  partition_stats: Dict[str, object]


def _positive(name: str, value: float) -> None:
  if not (value > 0 and math.isfinite(value)):
    raise FlagError(f"--{name}={value}: must be a finite number > 0")


def check_output_dir(root: str, name: str) -> str:
  """Creates <root>/<name> and checks it is writable (FlagError if not)."""
  if not name or os.sep in name:
    raise FlagError(f"--experiment_name={name!r}: must be a non-empty name "
                    "without '/'")
  path = os.path.join(root, name)
  try:
    os.makedirs(path, exist_ok=True)
    probe = os.path.join(path, ".write_test")
    with open(probe, "w") as f:
      f.write("ok")
    os.remove(probe)
  except OSError as e:
    raise FlagError(f"--root_output_dir={root}: cannot write {path} "
                    f"({e.strerror or e})") from None
  return path


def _load_dataset(f):
  if f.dataset == "digits":
    from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
    from federated_vision.models import digits as digits_models  # pylint: disable=g-import-not-at-top
    fed = digits.load_federated(f.num_clients, f.alpha, seed=f.seed,
                                imbalance_sigma=f.imbalance_sigma)
    return fed, lambda: digits_models.create_digits_cnn(fed.num_classes, f.seed)
  raise FlagError(f"--dataset={f.dataset}: must be one of {DATASET_NAMES}")


def validate(f) -> None:
  """Cross-flag checks that absl's per-flag bounds cannot express."""
  unknown = [a for a in f.algorithm if a not in ALGORITHMS]
  if unknown or not f.algorithm:
    raise FlagError(f"--algorithm={','.join(f.algorithm)}: each must be one of "
                    f"{', '.join(ALGORITHMS)}")
  _positive("client_learning_rate", f.client_learning_rate)
  _positive("server_learning_rate", f.server_learning_rate)
  if not 0 <= f.server_momentum < 1:
    raise FlagError(f"--server_momentum={f.server_momentum}: must be in [0, 1)")
  if f.dataset == "digits" and f.num_clients > 300:
    raise FlagError(f"--num_clients={f.num_clients}: must be in [1, 300] for "
                    "--dataset=digits (1,437 training examples)")
  if not f.include_plain and not (f.fedir or f.fedvc):
    raise FlagError("--noinclude_plain needs --fedir or --fedvc: nothing to run")


def build_experiment(f) -> Experiment:
  """Turns parsed flags into data, processes, specs and samplers."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision import algorithms  # pylint: disable=g-import-not-at-top
  from federated_vision import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision import sampling  # pylint: disable=g-import-not-at-top
  from federated_vision.algorithms import fedir as fedir_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.models import build_tff_model_fn  # pylint: disable=g-import-not-at-top

  validate(f)
  output_dir = check_output_dir(f.root_output_dir, f.experiment_name)
  fed, keras_model_fn = _load_dataset(f)
  ids = fed.client_data.client_ids
  if f.clients_per_round > len(ids):
    raise FlagError(f"--clients_per_round={f.clients_per_round}: must be in "
                    f"[1, {len(ids)}] (the number of clients of "
                    f"--dataset={f.dataset})")
  batch = None if f.client_batch_size == 0 else f.client_batch_size
  base_spec = cdl.TrainingSpec(batch_size=batch, epochs=f.client_epochs,
                               shuffle_buffer=10_000, seed=f.seed)
  element_spec = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, base_spec,
      fed.train_map_fn)(ids[0]).element_spec
  model_fn = build_tff_model_fn(keras_model_fn, element_spec)
  if f.fedir_target == "test":
    test_labels = np.concatenate([b["y"].numpy() for b in fed.test_data.batch(4096)])
    target = fedir_lib.estimate_target_distribution(test_labels, fed.num_classes)
  else:
    target = None

  def client_opt():
    return tff.learning.optimizers.build_sgdm(f.client_learning_rate)

  def server_opt(algorithm):
    if algorithm == "fedavgm":
      return algorithms.build_server_momentum_optimizer(
          f.server_learning_rate, f.server_momentum)
    return tff.learning.optimizers.build_sgdm(f.server_learning_rate)

  variants = []
  if f.include_plain:
    variants.append(())
  if f.fedir:
    variants.append(("fedir",))
  if f.fedvc:
    variants.append(("fedvc",))
  if f.fedir and f.fedvc:
    variants.append(("fedir", "fedvc"))
  methods = []
  sizes = [fed.client_sizes[c] for c in ids]
  for algorithm in f.algorithm:
    for variant in variants:
      name = "+".join((algorithm,) + variant)
      spec = base_spec
      if algorithm == "fedsgd":
        spec = spec._replace(batch_size=None, epochs=1)
      if "fedvc" in variant:
        spec = spec._replace(virtual_client_size=f.virtual_client_size)
        sampler = sampling.SizeProportionalSampler(ids, sizes,
                                                   f.clients_per_round, f.seed)
      else:
        sampler = sampling.UniformSampler(ids, f.clients_per_round, f.seed)
      if "fedir" in variant:
        process = fedir_lib.build_fedir(
            model_fn, client_opt(), fed.num_classes, server_opt(algorithm),
            target_distribution=target)
      elif algorithm == "fedsgd":
        process = algorithms.build_fedsgd(model_fn, f.client_learning_rate,
                                          server_opt(algorithm))
      else:
        process = algorithms.build_fedavg(model_fn, client_opt(),
                                          server_opt(algorithm))
      methods.append(MethodSetup(name, process, spec, sampler))

  hparams = {name: flags.FLAGS[name].value
             for name in sorted(flags.FLAGS) if name in _OUR_FLAGS}
  hparams["data"] = dict(fed.info)
  stats = _stats_from_counts(fed.class_counts)
  return Experiment(fed, keras_model_fn, methods, output_dir, hparams, stats)


def _stats_from_counts(counts) -> Dict[str, object]:
  from federated_vision import partition as partition_lib  # pylint: disable=g-import-not-at-top
  sizes = counts.sum(axis=1)
  per_client_classes = (counts > 0).sum(axis=1)
  return {"num_clients": int(len(sizes)), "num_examples": int(sizes.sum()),
          "examples_per_client_min": int(sizes.min()),
          "examples_per_client_max": int(sizes.max()),
          "classes_per_client_mean": float(per_client_classes.mean()),
          "emd": partition_lib.emd_noniidness(counts)}


_OUR_FLAGS = frozenset([
    "dataset", "algorithm", "fedir", "fedir_target", "fedvc",
    "virtual_client_size", "include_plain", "num_clients", "alpha",
    "imbalance_sigma", "clients_per_round", "client_epochs",
    "client_batch_size", "client_learning_rate", "server_learning_rate",
    "server_momentum", "total_rounds", "rounds_per_eval",
    "rounds_per_checkpoint", "centralized_epochs", "seed", "root_output_dir",
    "experiment_name"])
