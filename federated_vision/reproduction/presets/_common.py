"""Shared pieces of the presets: data flags, shared runs, label helpers.

Runs that several presets use (centralized baselines, the CIFAR alpha sweeps,
McMahan's MNIST runs) are built here once, so one run name always means one
configuration and its results are reused across presets.
"""

import itertools
from typing import Optional, Sequence, Tuple

from federated_vision.methods import names
from federated_vision.reproduction import claim_spec
from federated_vision.reproduction import spec

# Data-location flags (paths and how to read them) passed through from the
# command line; never part of a preset.
TFDS_DATA = ("data_source", "data_dir", "archive_path")
_IMAGE_CHECKS = ("check_images", "on_bad_image", "image_report_path",
                 "index_cache_dir")
INAT_DATA = ("split_csv", "test_csv", "image_root", "image_paths_csv",
             "metadata_json", "accept_unchecked_class_numbering"
             ) + _IMAGE_CHECKS
INAT_REQUIRED = (("split_csv",), ("test_csv",), ("image_root",))
LANDMARKS_DATA = ("split_csv", "test_csv", "image_root", "tar_shards",
                  "gld_metadata_csv", "accept_unchecked_class_numbering"
                  ) + _IMAGE_CHECKS
LANDMARKS_REQUIRED = (("split_csv",), ("test_csv",),
                      ("image_root", "tar_shards"))
PRETRAINED = ("pretrained_weights",)

# Settings every run states explicitly (a preset never leans on defaults, and
# a results directory made with other values is reported as a mismatch).
# Method selection is a run's own (--methods, or --algorithm and its
# variants): giving --methods with --fedir/--fedvc/--include_plain is an
# error, so none of them is common.
COMMON = {"seed": 0}
# Only where the model reads a weight decay (cifar_cnn, mnist_cnn,
# mobilenet_v2_gn; tasks.models): a run sets nothing it does not read.
NO_WEIGHT_DECAY = {"weight_decay": 0.0}
# The public sources' weight decays (wd * tf.nn.l2_loss(w) on the layers each
# decays: `federated_vision.models.weight_decay`); sources below.
CIFAR_WEIGHT_DECAY = 0.004    # TF CIFAR-10 tutorial, its two dense layers.
MOBILENET_WEIGHT_DECAY = 4e-5  # slim's MobileNet training_scope.
TF_TUTORIAL = ("tensorflow/models tutorials/image/cifar10/cifar10.py (the TF "
               "CIFAR-10 tutorial)")
SLIM_MOBILENET = ("tensorflow/models research/slim/nets/mobilenet/"
                  "mobilenet.py")
# Sources of the two weight decays (each model's runs; `spec.Preset.sources`).
CIFAR_WEIGHT_DECAY_SOURCE = (
    spec.OURS + "cifar_cnn runs: the paper's value was lost (Hsu 2020 §6.5: "
    "\"Weight decay is set to\" [.]); 0.004 on the two hidden "
    "fully-connected layers is the weight decay of the model's origin, "
    + TF_TUTORIAL + ", whose local3 and local4 are \"_variable_with_weight_"
    "decay('weights', shape=[dim, 384], stddev=0.04, wd=0.004)\" and "
    "\"_variable_with_weight_decay('weights', shape=[384, 192], "
    "stddev=0.04, wd=0.004)\" while conv1, conv2 and softmax_linear have "
    "\"wd=0.0\" (wd * tf.nn.l2_loss; McMahan 2017 §3 names that model), "
    "and Flower's FedAvgM baseline's (\"weight_decay = 0.004\")")
MOBILENET_WEIGHT_DECAY_SOURCE = (
    spec.OURS + "mobilenet_v2_gn runs: the paper's value was lost (Hsu 2020 "
    "§6.5: \"A weight decay of [.] is applied.\"); 4e-5 is MobileNetV2's "
    "standard training scope, " + SLIM_MOBILENET + ": \"def training_scope("
    "is_training=True, weight_decay=0.00004,\" with \"slim.arg_scope("
    "[slim.conv2d], weights_regularizer=slim.l2_regularizer(weight_decay))"
    "\" and \"slim.arg_scope([slim.separable_conv2d], weights_regularizer="
    "None)\": every standard convolution and the classifier decayed, the "
    "depthwise convolutions not (the Landmarks bottleneck, decayed like "
    "the classifier: ours)")

# Sources (`spec.Preset.sources`) of the COMMON settings; a preset merges
# these with its own: dict(COMMON_SOURCES, **its_sources).
COMMON_SOURCES = {
    "seed": spec.OURS + "no paper reports its seeds; one fixed seed makes "
            "every run repeatable and lets methods of a run share client "
            "draws",
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
REALWORLD_TRAINING = {"weight_decay": MOBILENET_WEIGHT_DECAY,
                      "client_epochs": 1,
                      "client_learning_rate": 0.01,
                      "model": "mobilenet_v2_gn", "mobilenet_alpha": 1.0,
                      "gn_groups": 32}
INAT_MODEL = {"image_size": 299, "bottleneck_dim": 0, "client_batch_size": 64}
LANDMARKS_MODEL = {"image_size": 224, "bottleneck_dim": 64,
                   "client_batch_size": 32}
CENTRALIZED_EPOCHS_REALWORLD = 30


def inat_centralized(pretrained: bool) -> spec.Run:
  """Centralized MobileNetV2-GN on the pooled iNaturalist training images.

  Every iNaturalist split holds the same 120,300 training images, so one
  baseline (read through the User-120k column) serves User-120k and Geo-k.
  """
  return centralized(
      f"central_inat_{'pretrained' if pretrained else 'scratch'}",
      CENTRALIZED_EPOCHS_REALWORLD,
      INAT_DATA + (PRETRAINED if pretrained else ()),
      INAT_REQUIRED + ((PRETRAINED,) if pretrained else ()),
      dataset="inaturalist", inat_split="user_120k", **INAT_MODEL,
      **REALWORLD_TRAINING)


def landmarks_centralized(two_layers: bool) -> spec.Run:
  """Centralized baseline on Landmarks-User-160k (all or last two layers)."""
  extra = {"trainable_last_layers": 2} if two_layers else {}
  return centralized(
      f"central_landmarks_{'two_layers' if two_layers else 'all_layers'}",
      CENTRALIZED_EPOCHS_REALWORLD, LANDMARKS_DATA + PRETRAINED,
      LANDMARKS_REQUIRED + (PRETRAINED,), dataset="landmarks",
      **LANDMARKS_MODEL, **REALWORLD_TRAINING, **extra)


# ---------------------------------------------------------------------- CIFAR
# Hsu, Qi & Brown 2020's CIFAR experiments (§6.1 Figure 4, Appendix A.1
# Figure 8), which follow Hsu et al. 2019's protocol: K = 100 clients of 500
# examples with Dirichlet(alpha) class distributions, the LeNet-5-like CNN,
# B = 64; every setting's source is in CIFAR_SOURCES.
CIFAR10_ALPHAS = (100.0, 10.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.0)
CIFAR100_ALPHAS = (1000.0, 100.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.0)
CIFAR_ALPHAS = {"cifar10": CIFAR10_ALPHAS, "cifar100": CIFAR100_ALPHAS}
# Hsu 2020 §A.1: "We train for 10k/20k communication rounds with
# CIFAR-10/100 respectively."
CIFAR_ROUNDS = {"cifar10": 10_000, "cifar100": 20_000}
CIFAR_CENTRALIZED_EPOCHS = 100
CIFAR_BASE = {"weight_decay": CIFAR_WEIGHT_DECAY, "partition": "dirichlet",
              "num_clients": 100,
              "examples_per_client": 500, "model": "cifar_cnn",
              "clients_per_round": 10, "client_epochs": 1,
              "client_batch_size": 64, "client_learning_rate": 0.01,
              "server_learning_rate": 1.0, "server_momentum": 0.9,
              "total_rounds": CIFAR_ROUNDS["cifar10"], "rounds_per_eval": 50,
              "rounds_per_checkpoint": 50}
_CIFAR_FEDERATED_ONLY = ("server_momentum", "total_rounds", "rounds_per_eval",
                         "rounds_per_checkpoint")

# Hsu et al.'s FedAvgM: Nesterov momentum (`nesterov`; sources below). The
# package's plain `fedavgm` is heavy-ball (the Hsu 2019 poster's rule).
NESTEROV = "nesterov"


def with_nesterov(method: str) -> str:
  """`method` (a method name) with the Nesterov server optimizer, canonical:
  'fedavgm' -> 'fedavgm@nesterov', 'fedavgm+fedvc' -> 'fedavgm+fedvc@nesterov'.
  """
  return names.spec_name(names.parse(method)._replace(
      server_optimizer=NESTEROV))


# Hsu et al.'s FedAvgM, the method of every Hsu 2019 / Hsu 2020 preset.
FEDAVGM = with_nesterov("fedavgm")

# Where the Hsu presets' Nesterov momentum comes from (docs/reproduction.md,
# "Evidence outside the papers' texts"): the source of their method lists.
NESTEROV_SOURCE = (
    spec.OURS + "FedAvgM is " + FEDAVGM + ": server SGD with Nesterov "
    "momentum, v <- beta v + Delta w; w <- w - eta (Delta w + beta v) "
    "(TensorFlow's MomentumOptimizer(use_nesterov=True)), not the package's "
    "plain fedavgm (heavy-ball, w <- w - eta v). Inferred second-hand: Hsu "
    "2019's full text (arXiv 1909.06335), which introduced FedAvgM, could "
    "not be read here; its poster (§Methods) gives only the heavy-ball update "
    "rule w <- w - v, v <- beta v + Delta w, and Hsu 2020 §5.1's rule was "
    "lost in the extraction (\"It uses a momentum optimizer on the server "
    "with the update rule [...], where [...] is the exponentially weighted "
    "moving average of the model updates with powers of [...]\"). Two "
    "Flower sources that cite the paper say Nesterov: Flower's FedAvgM "
    "baseline README (adap/flower baselines/fedavgm/README.md at 5deae2c, "
    "§Custom FedAvgM): \"our baseline incorporates the Nesterov accelerated "
    "gradient as a pivotal component of the momentum applied to the server "
    "model. It is worth emphasizing that the inclusion of Nesterov momentum "
    "aligns with the original definition of FedAvgM in the research "
    "paper.\"; Flower PR #2762 (flwrlabs/flower, its description): \"This "
    "PR improves the FedAvgM implementation FedAvgM introducing the "
    "Nesterov Accelerated Gradient (NAG), the same as reported in the "
    "original FedAvgM paper\". We follow these two over the poster's "
    "one-line rule")

# Appended to every FedAvgM server_momentum source: which momentum beta is.
FEDAVGM_MOMENTUM_NOTE = (
    ". beta is Nesterov momentum's (FedAvgM is " + FEDAVGM + ": v <- beta v "
    "+ Delta w; w <- w - eta (Delta w + beta v); why Nesterov: the methods' "
    "source); eta / (1 - beta) is its effective learning rate as for "
    "heavy-ball momentum (a constant update u gives v -> u / (1 - beta) and "
    "steps eta (u + beta v) -> eta u / (1 - beta))")

# The centralized baselines' --algorithm: their one FedAvg round.
CENTRAL_ALGORITHM_SOURCE = (
    spec.OURS + "a centralized run first trains one FedAvg round "
    "(train_main trains its federated methods first; that round's metrics "
    "are not used)")

# Sources (`spec.Preset.sources`) of the CIFAR runs' settings, from Hsu 2020's
# text (hsu2019.py overrides those the Hsu 2019 poster states or omits).
CIFAR_SOURCES = {
    "dataset": "Hsu 2020 §6.1: \"Our experiments use CIFAR10/100 datasets "
               "to characterize classification accuracy with a continuous "
               "range of distribution non-identicalness.\"",
    "partition": "Hsu 2020 §6.1: \"the class distribution of every client "
                 "is sampled from a Dirichlet distribution with varying "
                 "concentration parameter\"",
    "alpha": "Hsu 2020 §B.1 (Appendix B.1): \"For CIFAR-10, we use {100, 10, "
             "1, 0.5, 0.2, 0.1, 0.05, 0}; for CIFAR-100 we use {1000, 100, "
             "10, 5, 2, 1, 0.5, 0}.\" The centralized baselines' alpha = 1 "
             "is ours: their pooled data is every client's, 100 x 500 = all "
             "50,000 training images whatever alpha",
    "num_clients": "Hsu 2020 §B.1 (Appendix B.1): \"we partition each into "
                   "100 clients, with 500 training examples each\"",
    "examples_per_client": "Hsu 2020 §B.1 (Appendix B.1): \"we partition "
                           "each into 100 clients, with 500 training "
                           "examples each\"",
    "model": "Hsu 2020 §6.5: \"For CIFAR-10 and CIFAR-100 experiments, we "
             "use a CNN similar to LeNet-5 [16] which has two [...] 64-channel "
             "convolution layers, each precedes a [...] max-pooling layer, "
             "followed by two fully-connected layers with 384 and 192 "
             "channels respectively and finally a softmax linear "
             "classifier.\" (two 5x5 convolutions, 2x2 pooling: cifar_cnn)",
    "client_batch_size": "Hsu 2020 §6.5: \"The client batch size is 32 for "
                         "Landmarks-User-160k and 64 for others.\"",
    "client_learning_rate": "Hsu 2020 §6.5: \"Unless otherwise stated, the "
                            "client learning rate is 0.01\" (the centralized "
                            "baselines' too). The footnote of §A.1 "
                            "(\"CIFAR experiments in the main text are "
                            "tuned over the [...] same grid\") says Figure 4 "
                            "shows the best of a grid whose values the "
                            "extraction lost; we train 0.01 only (ours)",
    "server_momentum": spec.OURS + "Hsu 2020 §6.5 says \"momentum is used "
                       "for FedAvgM\" but the extraction lost its value "
                       "(the beta symbol); 0.9. Set on FedAvgM runs only"
                       + FEDAVGM_MOMENTUM_NOTE,
    "algorithm": CENTRAL_ALGORITHM_SOURCE + " (the CIFAR runs' only "
                 "--algorithm: the federated runs give --methods)",
    "server_learning_rate": spec.OURS + "Hsu 2020 §5.1 names a server "
                            "learning rate without a value (lost in the "
                            "extraction); 1.0 is McMahan's plain average",
    "clients_per_round": spec.OURS + "Hsu 2020 §6.1 varies the report goal "
                         "(\"Using more clients per round (larger report "
                         "goal [...]) is also beneficial for training but "
                         "has diminishing returns.\") with values in "
                         "Figure 4, which the extraction lost; the axis is "
                         "C in " + "{5, 10, 20, 40} of 100" + ", Hsu 2019's "
                         "reporting fractions, which §6.1 follows (\"We "
                         "follow the protocol described in [11]\"), as "
                         + "Flower's FedAvgM baseline reads that paper "
                         "(conf/base.yaml: \"values used in the paper 0.05, "
                         "0.1, 0.2 (not used for Figure 5), 0.4\"; Hsu "
                         "2019's own text was not available here). The "
                         "centralized runs' 10 is unused",
    "client_epochs": spec.OURS + "Hsu 2020 states no E for Figure 4 (§A.1's "
                     "E values are Figure 8's panels, lost in the "
                     "extraction); 1",
    "total_rounds": "Hsu 2020 §A.1: \"We train for 10k/20k communication "
                    "rounds with CIFAR-10/100 respectively.\" Centralized "
                    "baselines: 1 FedAvg round before their centralized "
                    "epochs (ours: train_main trains a federated method "
                    "first; that round is not read)",
    "rounds_per_eval": spec.OURS + "the papers give no evaluation cadence; "
                       "every 50 rounds (the centralized runs' 1 round: "
                       "their single round)",
    "rounds_per_checkpoint": spec.OURS + "operational (resuming); not a "
                             "setting of the paper",
    "centralized_epochs": spec.OURS + "0 = no centralized training in the "
                          "federated runs; the baselines' epoch count is not "
                          "stated (Hsu 2020 §6.0.1: \"The centralized "
                          "training baseline uses the same configurations "
                          "and hyperparameters\"): 100",
    "weight_decay": CIFAR_WEIGHT_DECAY_SOURCE,
}


# The report-goal axis of the CIFAR alpha sweeps: C of K = 100 clients a
# round (Hsu 2019's reporting fractions 0.05, 0.1, 0.2, 0.4; sources above).
CIFAR_REPORT_GOALS = (5, 10, 20, 40)


def cifar_run_prefix(dataset: str, clients: int, epochs: int) -> str:
  """`<dataset>_c<C>_e<E>`: the alpha runs' name before `_alpha_<alpha>`."""
  return f"{dataset}_c{clients}_e{epochs}"


def cifar_alpha_run(dataset: str, alpha: float, clients: int = 10,
                    epochs: int = 1) -> spec.Run:
  """FedAvg and FedAvgM (`FEDAVGM`) side by side on one Dirichlet(alpha)
  partition (Hsu 2020 Figure 4: one run, so both see the same partition and
  EMD), C clients a round, E local epochs."""
  return federated(
      f"{cifar_run_prefix(dataset, clients, epochs)}_alpha_{number(alpha)}",
      TFDS_DATA, **dict(CIFAR_BASE, dataset=dataset, alpha=alpha,
                        methods=("fedavg", FEDAVGM),
                        clients_per_round=clients, client_epochs=epochs,
                        total_rounds=CIFAR_ROUNDS[dataset]))


def cifar_alpha_grid(key: Tuple[str, str], title: str,
                     panels: Sequence[Tuple[str, int, int, str]]):
  """(the alpha runs, their `alpha_table`) of (dataset, C, E, row prefix)
  panels, each over the dataset's alphas against its centralized run."""
  runs, sweeps = [], []
  for dataset, clients, epochs, row_prefix in panels:
    alphas = CIFAR_ALPHAS[dataset]
    runs += [cifar_alpha_run(dataset, a, clients, epochs) for a in alphas]
    sweeps.append((cifar_run_prefix(dataset, clients, epochs), row_prefix,
                   alphas, f"central_{dataset}"))
  return runs, alpha_table(key, title, sweeps)


def fedavgm_vs_fedavg(key: str, claim: str, run: str, methods=(
    FEDAVGM, "fedavg"), metric: Optional[spec.Metric] = None
                      ) -> claim_spec.Comparison:
  """The claim FedAvgM > FedAvg on one run (the same partition and client
  draws per seed), final accuracy unless `metric`; `methods` the run's
  (FedAvgM, FedAvg) names."""
  metric = metric or spec.Metric(spec.FINAL_ACCURACY)
  return claim_spec.Comparison(
      key, claim, claim_spec.Side(run, metric, methods[0], "FedAvgM"),
      claim_spec.Side(run, metric, methods[1], "FedAvg"))


def cifar_centralized(dataset: str) -> spec.Run:
  """The centralized baseline (Hsu 2020 §6.0.1 relative accuracy): same model,
  batch size and learning rate; no server momentum (FedAvg's one round)."""
  base = {k: v for k, v in CIFAR_BASE.items()
          if k not in _CIFAR_FEDERATED_ONLY}
  return centralized(f"central_{dataset}", CIFAR_CENTRALIZED_EPOCHS,
                     TFDS_DATA, dataset=dataset, alpha=1.0, **base)


def alpha_table(key: Tuple[str, str], title: str,
                sweeps: Sequence[Tuple[str, str, Sequence[float], Optional[str]]],
                fedavgm: str = FEDAVGM) -> spec.TableSpec:
  """Rows (sweep, alpha); columns EMD, FedAvg and FedAvgM final accuracy.

  Args:
    key: the table key.
    title: its title.
    sweeps: (run prefix, row prefix, alphas, centralized baseline run or
      None); run names are `<run prefix>_alpha_<alpha>`, rows
      `<row prefix> α = <alpha>`.
    fedavgm: the runs' FedAvgM method name (the FedAvgM column).
  """
  rows, cells = [], []
  for run_prefix, row_prefix, alphas, baseline in sweeps:
    for alpha in alphas:
      row = f"{row_prefix} {alpha_label(alpha)}".strip()
      rows.append(row)
      run = f"{run_prefix}_alpha_{number(alpha)}"
      cells.append(spec.CellSpec(row, "EMD", run, spec.Metric(spec.EMD)))
      for column, method in (("FedAvg", "fedavg"), ("FedAvgM", fedavgm)):
        cells.append(spec.CellSpec(row, column, run,
                                   spec.Metric(spec.FINAL_ACCURACY), method,
                                   baseline))
  return spec.TableSpec(key, title, tuple(rows), ("EMD", "FedAvg", "FedAvgM"),
                        tuple(cells))


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
