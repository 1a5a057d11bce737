"""The experiment grids of `sweep_main`, as data (no TensorFlow import).

A sweep is a `base` of config values (defaults of the sweep; flags given on
the command line win over them) and a tuple of `Point`s, each a name (its
output sub-directory) and the config values of its grid axes (these win over
everything; giving an axis flag on the command line is an error). Values are
keyed by config field names, which are the flag names; `point_config` turns a
point into an `ExperimentConfig` with `dataclasses.replace`
(`config.replace_fields`), never touching flags.

hsu2019_cifar10 / hsu2019_cifar100 (Hsu, Qi & Brown 2019, "Measuring the
Effects of Non-Identical Data Distribution for Federated Visual
Classification"): CIFAR over K = 100 clients of 500 examples, Dirichlet(alpha)
class distributions, for FedAvg and FedAvgM (server momentum 0.9), each point
one method by name (`--methods`): `fedavg`, and FedAvgM as
`fedavgm@nesterov`, Nesterov momentum, as the Hsu presets train it (why:
`reproduction/presets/_common.py`, NESTEROV_SOURCE); the method flags
(--methods, --algorithm, --fedir, ...) are the points' own:
  CIFAR-10  alpha in {100, 10, 1, 0.5, 0.2, 0.1, 0.05, 0}   -> 16 points
  CIFAR-100 alpha in {1000, 100, 10, 5, 2, 1, 0.5, 0}       -> 16 points
Base: cifar_cnn with the TF CIFAR-10 tutorial's weight decay (0.004 on its two
dense layers), 10 clients per round (C = 0.1), E = 1, B = 64, 10,000 rounds
evaluated every 50, no centralized baseline. Point names:
`<algorithm>_alpha_<alpha>`, e.g. `fedavgm_alpha_0.05` (method
fedavgm@nesterov).

dirichlet_per_class_cifar10 (the field's other Dirichlet convention,
`--partition=dirichlet_per_class`: each class divided over the K = 100
clients by Dir(alpha 1_K), as NIID-Bench / FedLab / Flower; all 50,000
examples, client sizes vary): FedAvg and FedAvgM x alpha in {10, 1, 0.5, 0.1}
(ours: docs/datasets.md's comparison values; NIID-Bench's default is 0.5)
-> 8 points, otherwise hsu2019_cifar10's base. Points (names and methods)
as hsu2019's, so the two conventions compare like for like.

mcmahan_mnist_grid (McMahan et al. 2017, Tables 1, 2 and 4, as one full
product): MNIST over K = 100 clients, FedAvg with
  model     in {mnist_2nn, mnist_cnn}
  partition in {iid (600 examples each), shards (200 shards of 300, 2 each)}
  C         in {0, 0.1, 0.2, 0.5, 1.0}   (clients per round max(C*K, 1))
  E         in {1, 5, 20}
  B         in {inf, 10, 50}             (B = inf is --client_batch_size=0)
-> 2 x 2 x 5 x 3 x 3 = 180 points. The (B = inf, E = 1) points are FedSGD
(McMahan's speedup reference). Target accuracies as in the paper: 97% for the
2NN, 99% for the CNN. Base: 1,000 rounds, evaluated every round, no
centralized baseline. Point names: `<2nn|cnn>_<iid|shards>_C<C>_E<E>_B<B>`,
e.g. `cnn_shards_C0.1_E5_Binf`.
"""

import itertools
from typing import Dict, NamedTuple, Sequence, Tuple

from federated_vision.experiment import config as config_lib
from federated_vision.experiment import selection
from federated_vision.experiment import fields_read
from federated_vision.methods import names as method_names
from federated_vision.registry import Registry

HSU2019_CIFAR10_ALPHAS = (100.0, 10.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.0)
HSU2019_CIFAR100_ALPHAS = (1000.0, 100.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.0)
HSU2019_ALGORITHMS = ("fedavg", "fedavgm")
# Each algorithm's method: FedAvgM with Nesterov momentum (module docstring).
HSU2019_METHODS = {
    "fedavg": "fedavg",
    "fedavgm": method_names.spec_name(method_names.Spec(
        "fedavgm", (), "nesterov"))}
PER_CLASS_ALPHAS = (10.0, 1.0, 0.5, 0.1)

MCMAHAN_MODELS = ("mnist_2nn", "mnist_cnn")
MCMAHAN_PARTITIONS = ("iid", "shards")
MCMAHAN_CLIENT_FRACTIONS = (0.0, 0.1, 0.2, 0.5, 1.0)
MCMAHAN_EPOCHS = (1, 5, 20)
MCMAHAN_BATCH_SIZES = (0, 10, 50)  # 0 = B = inf.
MCMAHAN_TARGETS = {"mnist_2nn": 0.97, "mnist_cnn": 0.99}


class Point(NamedTuple):
  """One run of a sweep: output sub-directory name and its axis values
  (config field == flag name -> value)."""
  name: str
  flags: Dict[str, object]


class Sweep(NamedTuple):
  """A named grid: datasets it accepts, base flag values, its points."""
  name: str
  datasets: Tuple[str, ...]  # The real data set first, then its twin.
  base: Dict[str, object]  # Config field (== flag) name -> value.
  points: Tuple[Point, ...]


def format_number(x: float) -> str:
  """Short, file-name-safe: 100.0 -> '100', 0.05 -> '0.05', 0.0 -> '0'."""
  return f"{x:g}"


def _hsu2019(dataset: str, alphas: Sequence[float]) -> Sweep:
  base = {"dataset": dataset, "partition": "dirichlet", "num_clients": 100,
          "examples_per_client": 500, "model": "cifar_cnn",
          "clients_per_round": 10, "client_epochs": 1,
          "client_batch_size": 64, "weight_decay": 0.004,
          "total_rounds": 10_000, "rounds_per_eval": 50,
          "rounds_per_checkpoint": 50, "centralized_epochs": 0}
  # FedAvgM's momentum is set by its points (the only ones reading it).
  momentum = {"fedavgm": {"server_momentum": 0.9}}
  points = tuple(
      Point(f"{algorithm}_alpha_{format_number(alpha)}",
            {"methods": [HSU2019_METHODS[algorithm]], "alpha": alpha,
             **momentum.get(algorithm, {})})
      for algorithm in HSU2019_ALGORITHMS for alpha in alphas)
  return Sweep(f"hsu2019_{dataset}", (dataset, f"synthetic_{dataset}")
               if dataset == "cifar10" else (dataset,), base, points)


def _per_class_cifar10() -> Sweep:
  hsu = _hsu2019("cifar10", PER_CLASS_ALPHAS)
  base = dict(hsu.base, partition="dirichlet_per_class")
  del base["examples_per_client"]  # Every example is dealt; sizes vary.
  return Sweep("dirichlet_per_class_cifar10", hsu.datasets, base, hsu.points)


def _mcmahan_mnist_grid() -> Sweep:
  base = {"dataset": "mnist", "num_clients": 100, "examples_per_client": 600,
          "algorithm": ["fedavg"],
          "total_rounds": 1000, "rounds_per_eval": 1,
          "rounds_per_checkpoint": 20, "centralized_epochs": 0}
  points = []
  for model, partition, c, e, b in itertools.product(
      MCMAHAN_MODELS, MCMAHAN_PARTITIONS, MCMAHAN_CLIENT_FRACTIONS,
      MCMAHAN_EPOCHS, MCMAHAN_BATCH_SIZES):
    name = (f"{model.split('_')[1]}_{partition}_C{format_number(c)}_E{e}_"
            f"B{'inf' if b == 0 else b}")
    point = {"model": model, "partition": partition, "client_fraction": c,
             "client_epochs": e, "client_batch_size": b,
             "target_accuracy": MCMAHAN_TARGETS[model]}
    if partition == "shards":  # Shards fix the client size (2 x 300).
      point["examples_per_client"] = None
    points.append(Point(name, point))
  return Sweep("mcmahan_mnist_grid", ("mnist", "synthetic_mnist"), base,
               tuple(points))


SWEEPS: Registry[Sweep] = Registry("sweep", "sweep")
for _sweep in (_hsu2019("cifar10", HSU2019_CIFAR10_ALPHAS),
               _hsu2019("cifar100", HSU2019_CIFAR100_ALPHAS),
               _per_class_cifar10(), _mcmahan_mnist_grid()):
  SWEEPS.add(_sweep.name, _sweep)
SWEEP_NAMES = tuple(SWEEPS)  # The package's own; `SWEEPS` adds the registered.


def register_sweep(sweep: Sweep) -> Sweep:
  """Adds a sweep (e.g. from a module passed to --extra_modules): then
  `sweep_main --sweep=<its name>` plans, runs and resumes it as the
  package's own. Its base and axes are config fields (== flags), a
  component's own options included (`--<option>` of a registered
  algorithm, variant or server optimizer), so a researcher's
  hyper-parameter is an axis, and `report_main` shows it as a column where
  it varies.

  Raises:
    ValueError: not a `Sweep`, its name is taken, no points, two points of
      one name, or a point or base value naming no config field.
  """
  if not isinstance(sweep, Sweep):
    raise ValueError(f"register_sweep: {sweep!r} is not a sweeps.Sweep")
  names = [p.name for p in sweep.points]
  if not names or len(set(names)) != len(names):
    raise ValueError(f"sweep {sweep.name}: give points with distinct names")
  fields = set(config_lib.field_sections())
  for values in [sweep.base] + [p.flags for p in sweep.points]:
    unknown = sorted(set(values) - fields)
    if unknown:
      raise ValueError(f"sweep {sweep.name}: {unknown[0]!r} is not a setting "
                       "(a flag of train_main)")
  return SWEEPS.add(sweep.name, sweep)


def select(sweep: Sweep, patterns: Sequence[str] = ()) -> Tuple[Point, ...]:
  """The points whose name matches any of the fnmatch `patterns` (all if none).

  Raises:
    ValueError: a pattern matches no point (names the pattern).
  """
  try:
    return selection.select(sweep.points, patterns)
  except selection.NoMatch as e:
    raise ValueError(f"{e.pattern!r} matches no point of {sweep.name}"
                     ) from None


def point_flags(sweep: Sweep, point: Point,
                explicit: Sequence[str] = ()) -> Dict[str, object]:
  """Values of a point: base (unless given explicitly), then its axes."""
  values = {k: v for k, v in sweep.base.items() if k not in explicit}
  values.update(point.flags)
  return values


def point_config(config, sweep: Sweep, point: Point,
                 explicit: Sequence[str] = (), output_dir: str = None):
  """The `ExperimentConfig` of a point (not validated).

  Args:
    config: the command line's config (flags given there win over the base).
    sweep: the sweep.
    point: one of its points.
    explicit: the fields given on the command line.
    output_dir: if set, results go to <output_dir>/<point name>.
  """
  values = point_flags(sweep, point, explicit)
  if output_dir is not None:
    values.update(root_output_dir=output_dir, experiment_name=point.name)
  return config_lib.replace_fields(config, values)


def axis_conflicts(points: Sequence[Point], explicit: Sequence[str]) -> list:
  """Flags given on the command line that a selected point also sets (a
  point giving --methods sets its shorthands too: it lists exactly the
  methods trained)."""
  axes = set()
  for pt in points:
    axes.update(pt.flags)
    if "client_fraction" in pt.flags:
      axes.add("clients_per_round")  # Derived from C.
    if "methods" in pt.flags:
      axes.update(fields_read.method_shorthands())
  return sorted(axes & set(explicit))
