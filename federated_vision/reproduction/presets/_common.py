"""Shared pieces of the presets: data flags, shared runs, label helpers.

Runs that several presets use (centralized baselines, the CIFAR alpha sweeps,
McMahan's MNIST runs) are built here once, so one run name always means one
configuration and its results are reused across presets.
"""

import itertools
from typing import Optional, Sequence, Tuple

from federated_vision.reproduction import spec

# Data-location flags (paths and how to read them) passed through from the
# command line; never part of a preset.
TFDS_DATA = ("data_source", "data_dir", "archive_path")
_IMAGE_CHECKS = ("check_images", "on_bad_image", "image_report_path",
                 "index_cache_dir")
INAT_DATA = ("split_csv", "test_csv", "image_root", "image_paths_csv",
             "metadata_json") + _IMAGE_CHECKS
INAT_REQUIRED = (("split_csv",), ("test_csv",), ("image_root",))
LANDMARKS_DATA = ("split_csv", "test_csv", "image_root",
                  "tar_shards") + _IMAGE_CHECKS
LANDMARKS_REQUIRED = (("split_csv",), ("test_csv",),
                      ("image_root", "tar_shards"))
PRETRAINED = ("pretrained_weights",)

# Settings every run states explicitly (a preset never leans on defaults, and
# a results directory made with other values is reported as a mismatch).
# Method selection is a run's own (--methods, or --algorithm and its
# variants): giving --methods with --fedir/--fedvc/--include_plain is an
# error, so none of them is common.
COMMON = {"seed": 0, "fedir_target": "uniform", "weight_decay": 0.0}

# Sources (`spec.Preset.sources`) of the COMMON settings; a preset merges
# these with its own: dict(COMMON_SOURCES, **its_sources).
COMMON_SOURCES = {
    "seed": spec.OURS + "no paper reports its seeds; one fixed seed makes "
            "every run repeatable and lets methods of a run share client "
            "draws",
    "weight_decay": spec.OURS + "none of the four papers' texts states a "
                    "weight decay; 0 adds none",
}


def number(x: float) -> str:
  """Short label of a number: 100.0 -> '100', 0.05 -> '0.05', inf -> 'inf'."""
  return f"{x:g}"


def alpha_label(alpha: float) -> str:
  return f"α = {number(alpha)}"


def federated(name: str, data: Sequence[str] = (),
              required: Sequence[Sequence[str]] = (), **flags) -> spec.Run:
  """A federated run: COMMON, then `flags`; no centralized training."""
  values = dict(COMMON, centralized_epochs=0)
  values.update(flags)
  return spec.Run(name, values, spec.FEDERATED, tuple(data),
                  tuple(tuple(g) for g in required))


def centralized(name: str, epochs: int, data: Sequence[str] = (),
                required: Sequence[Sequence[str]] = (), **flags) -> spec.Run:
  """A centralized baseline run.

  train_main always trains its federated methods first, so the run does one
  FedAvg round (its metrics are not used) and then `epochs` centralized epochs
  on the pooled client data with the same model and input pipeline; batch
  size = --client_batch_size, learning rate = --client_learning_rate.
  """
  values = dict(COMMON, algorithm=("fedavg",), total_rounds=1,
                rounds_per_eval=1, rounds_per_checkpoint=1,
                centralized_epochs=epochs)
  values.update(flags)
  return spec.Run(name, values, spec.CENTRALIZED, tuple(data),
                  tuple(tuple(g) for g in required))


# ---------------------------------------------------------------- iNaturalist
# Hsu, Qi & Brown 2020 §6.5: ImageNet-pretrained MobileNetV2 with GroupNorm,
# 299 px crops for iNaturalist, 224 px and a 64-d bottleneck for Landmarks,
# client learning rate 0.01, batch 32 (Landmarks) / 64 (others). The sources
# of every value are `presets/hsu2020_sources.py`'s REALWORLD_SOURCES.
INAT_SPLITS = {"User-120k": "user_120k", "Geo-3k": "geo_3k"}
REALWORLD_TRAINING = {"client_epochs": 1, "client_learning_rate": 0.01,
                      "model": "mobilenet_v2_gn", "mobilenet_alpha": 1.0,
                      "gn_groups": 32}
INAT_MODEL = {"image_size": 299, "bottleneck_dim": 0, "client_batch_size": 64}
LANDMARKS_MODEL = {"image_size": 224, "bottleneck_dim": 64,
                   "client_batch_size": 32}
CENTRALIZED_EPOCHS_REALWORLD = 30


def without(run: spec.Run, *names: str) -> spec.Run:
  """`run` without the flags `names` (e.g. COMMON's fedir_target where no
  method uses FedIR)."""
  return spec.Run(run.name, {k: v for k, v in run.flags.items()
                             if k not in names}, run.kind, run.data_flags,
                  run.required_data_flags)


def inat_centralized(pretrained: bool) -> spec.Run:
  """Centralized MobileNetV2-GN on the pooled iNaturalist training images.

  Every iNaturalist split holds the same 120,300 training images, so one
  baseline (read through the User-120k column) serves User-120k and Geo-k.
  """
  return without(centralized(
      f"central_inat_{'pretrained' if pretrained else 'scratch'}",
      CENTRALIZED_EPOCHS_REALWORLD,
      INAT_DATA + (PRETRAINED if pretrained else ()),
      INAT_REQUIRED + ((PRETRAINED,) if pretrained else ()),
      dataset="inaturalist", inat_split="user_120k", **INAT_MODEL,
      **REALWORLD_TRAINING), "fedir_target")


def landmarks_centralized(two_layers: bool) -> spec.Run:
  """Centralized baseline on Landmarks-User-160k (all or last two layers)."""
  extra = {"trainable_last_layers": 2} if two_layers else {}
  return without(centralized(
      f"central_landmarks_{'two_layers' if two_layers else 'all_layers'}",
      CENTRALIZED_EPOCHS_REALWORLD, LANDMARKS_DATA + PRETRAINED,
      LANDMARKS_REQUIRED + (PRETRAINED,), dataset="landmarks",
      **LANDMARKS_MODEL, **REALWORLD_TRAINING, **extra), "fedir_target")


# ---------------------------------------------------------------------- CIFAR
# Hsu et al. 2019 / sweeps.py's hsu2019_* grids: K = 100 clients of 500
# examples, Dirichlet(alpha), cifar_cnn, 10 clients per round, E = 1, B = 64,
# 10,000 rounds evaluated every 50, server momentum 0.9 for FedAvgM.
CIFAR10_ALPHAS = (100.0, 10.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.0)
CIFAR100_ALPHAS = (1000.0, 100.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.0)
CIFAR_BASE = {"partition": "dirichlet", "num_clients": 100,
              "examples_per_client": 500, "model": "cifar_cnn",
              "clients_per_round": 10, "client_epochs": 1,
              "client_batch_size": 64, "client_learning_rate": 0.05,
              "server_learning_rate": 1.0, "server_momentum": 0.9,
              "total_rounds": 10_000, "rounds_per_eval": 50,
              "rounds_per_checkpoint": 50}


def cifar_alpha_run(dataset: str, alpha: float) -> spec.Run:
  """FedAvg and FedAvgM side by side on one Dirichlet(alpha) partition."""
  return federated(f"{dataset}_alpha_{number(alpha)}", TFDS_DATA,
                   dataset=dataset, alpha=alpha,
                   algorithm=("fedavg", "fedavgm"), **CIFAR_BASE)


def cifar_centralized(dataset: str) -> spec.Run:
  base = {k: v for k, v in CIFAR_BASE.items()
          if k not in ("total_rounds", "rounds_per_eval",
                       "rounds_per_checkpoint")}
  return centralized(f"central_{dataset}", 100, TFDS_DATA, dataset=dataset,
                     alpha=1.0, **base)


def alpha_table(key: Tuple[str, str], title: str,
                sweeps: Sequence[Tuple[str, str, Sequence[float], Optional[str]]],
                ) -> spec.TableSpec:
  """Rows (sweep, alpha); columns EMD, FedAvg and FedAvgM final accuracy.

  Args:
    key: the table key.
    title: its title.
    sweeps: (run prefix, row prefix, alphas, centralized baseline run or
      None); run names are `<run prefix>_alpha_<alpha>`, rows
      `<row prefix> α = <alpha>`.
  """
  rows, cells = [], []
  for run_prefix, row_prefix, alphas, baseline in sweeps:
    for alpha in alphas:
      row = f"{row_prefix} {alpha_label(alpha)}".strip()
      rows.append(row)
      run = f"{run_prefix}_alpha_{number(alpha)}"
      cells.append(spec.CellSpec(row, "EMD", run, spec.Metric(spec.EMD)))
      for column, method in (("FedAvg", "fedavg"), ("FedAvgM", "fedavgm")):
        cells.append(spec.CellSpec(row, column, run,
                                   spec.Metric(spec.FINAL_ACCURACY), method,
                                   baseline))
  return spec.TableSpec(key, title, tuple(rows), ("EMD", "FedAvg", "FedAvgM"),
                        tuple(cells))


# ---------------------------------------------------------------------- MNIST
# McMahan et al. 2017: K = 100 clients, IID (600 examples each) or
# pathological non-IID (200 label-sorted shards of 300, 2 per client).
MCMAHAN_TARGETS = {"mnist_2nn": 0.97, "mnist_cnn": 0.99}
MCMAHAN_ROUNDS = {"mnist_2nn": 5000, "mnist_cnn": 2000}
MCMAHAN_LR = {"mnist_2nn": 0.1, "mnist_cnn": 0.1}
MCMAHAN_PARTITIONS = {"IID": "iid", "non-IID": "shards"}


def mcmahan_run(model: str, partition: str, c: float, e: int,
                b: Optional[int]) -> spec.Run:
  """FedAvg on MNIST with McMahan's (C, E, B); b=None is B = inf."""
  flags = {"dataset": "mnist", "model": model, "partition": partition,
           "num_clients": 100, "algorithm": ("fedavg",), "client_fraction": c,
           "client_epochs": e, "client_batch_size": 0 if b is None else b,
           "client_learning_rate": MCMAHAN_LR[model],
           "server_learning_rate": 1.0, "server_momentum": 0.9,
           "target_accuracy": MCMAHAN_TARGETS[model],
           "total_rounds": MCMAHAN_ROUNDS[model], "rounds_per_eval": 1,
           "rounds_per_checkpoint": 50}
  if partition == "iid":  # Shards fix the client size (2 x 300).
    flags["examples_per_client"] = 600
  name = (f"mnist_{model.split('_')[1]}_{partition}_C{number(c)}_E{e}_"
          f"B{'inf' if b is None else b}")
  return federated(name, TFDS_DATA, **flags)


def mcmahan_cell(row: str, column: str, run: spec.Run,
                 reference: spec.Run) -> spec.CellSpec:
  target = run.flags["target_accuracy"]
  return spec.CellSpec(row, column, run.name,
                       spec.Metric(spec.ROUNDS_TO_TARGET, target), "fedavg",
                       speedup_reference=(reference.name, "fedavg"))


def unique_runs(runs) -> Tuple[spec.Run, ...]:
  """Runs in first-seen order without repeats (same name -> same config)."""
  out = {}
  for r in runs:
    if r.name in out and out[r.name] != r:
      raise ValueError(f"run {r.name} defined twice with different configs")
    out.setdefault(r.name, r)
  return tuple(out.values())


def product(*axes):
  return itertools.product(*axes)
