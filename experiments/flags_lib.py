"""The one place where absl flags become library objects.

Binaries call `define_flags()` at import time, then `build_experiment(FLAGS)`
in `main`. Every flag value is recorded in `hparams.json` next to results.
"""

import glob
import math
import os
from typing import Callable, Dict, List, NamedTuple, Optional

from absl import flags

# Data sets this binary can train on. `synthetic_*` are random-image twins of
# the real sets (same element structure, model and partition code path) for
# tests and smoke runs; they never touch the disk (except synthetic_inaturalist
# / synthetic_landmarks, which write tiny JPEG fixtures under
# <root_output_dir>/.synthetic_data and open them with the real loaders).
DATASET_NAMES = ("digits", "cifar10", "cifar100", "mnist", "synthetic_cifar10",
                 "synthetic_mnist", "inaturalist", "landmarks",
                 "synthetic_inaturalist", "synthetic_landmarks")
ALGORITHMS = ("fedavg", "fedavgm", "fedsgd")
DATA_SOURCES = ("tfds", "archive")
PARTITIONS = ("dirichlet", "iid", "shards")
MODELS = ("digits_cnn", "mnist_2nn", "mnist_cnn", "cifar_cnn",
          "mobilenet_v2_gn")
CHECK_IMAGES = ("none", "exists", "decode")
BAD_IMAGE_POLICIES = ("fail", "skip")
# Families of the real-world image splits of Hsu, Qi & Brown 2020.
REALWORLD_FAMILIES = ("inaturalist", "landmarks")

# Data set -> (family, default model, default K, default examples per client).
# Families decide which models fit: digits 8x8x1, mnist 28x28x1, cifar 24x24x3.
_DATASETS = {
    "digits": ("digits", "digits_cnn", 20, None),
    "cifar10": ("cifar", "cifar_cnn", 100, 500),      # Hsu et al. 2019.
    "cifar100": ("cifar", "cifar_cnn", 100, 500),
    "mnist": ("mnist", "mnist_cnn", 100, 600),        # McMahan et al. 2017.
    "synthetic_cifar10": ("cifar", "cifar_cnn", 10, 20),
    "synthetic_mnist": ("mnist", "mnist_cnn", 10, 20),
    # K and n come from --split_csv.
    "inaturalist": ("inaturalist", "mobilenet_v2_gn", None, None),
    "landmarks": ("landmarks", "mobilenet_v2_gn", None, None),
    "synthetic_inaturalist": ("inaturalist", "mobilenet_v2_gn", 6, 5),
    "synthetic_landmarks": ("landmarks", "mobilenet_v2_gn", 6, 5),
}
_MODEL_FAMILY = {"digits_cnn": ("digits",), "mnist_2nn": ("mnist",),
                 "mnist_cnn": ("mnist",), "cifar_cnn": ("cifar",),
                 "mobilenet_v2_gn": REALWORLD_FAMILIES}
# Crop side S: Hsu, Qi & Brown 2020 (iNaturalist 299, Landmarks 224); the
# synthetic twins use MobileNetV2's minimum so smoke runs are fast.
_IMAGE_SIZE = {"inaturalist": 299, "landmarks": 224}
_SYNTHETIC_IMAGE_SIZE = 32
_SYNTHETIC_CLASSES = 3
_MOBILENET_MIN_SIZE = 32
# Flags only read with --dataset=inaturalist|landmarks (and the twins).
_REALWORLD_ONLY = ("test_csv", "image_root", "image_paths_csv", "metadata_json",
                   "inat_split", "tar_shards", "image_report_path",
                   "index_cache_dir", "image_size")
_MOBILENET_ONLY = ("mobilenet_alpha", "gn_groups", "bottleneck_dim",
                   "pretrained_weights", "trainable_last_layers")
_SYNTHETIC_TEST_EXAMPLES = 40


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
  flags.DEFINE_string("data_source", "tfds", f"Where real data sets come from: "
                      f"{' | '.join(DATA_SOURCES)}. 'tfds' reads a prepared "
                      "tensorflow-datasets directory (--data_dir; never "
                      "downloads); 'archive' reads the canonical files "
                      "(--archive_path). Ignored for digits and synthetic_*.")
  flags.DEFINE_string("data_dir", None, "tensorflow-datasets data_dir "
                      "(default: tfds' own, ~/tensorflow_datasets).")
  flags.DEFINE_string("archive_path", None, "With --data_source=archive: "
                      "cifar-10-python.tar.gz / cifar-100-python.tar.gz (or a "
                      "directory holding it or its extracted folder), or the "
                      "directory of MNIST's four IDX files.")
  flags.DEFINE_string("partition", "dirichlet", f"How training examples are "
                      f"dealt to clients: {' | '.join(PARTITIONS)}. dirichlet: "
                      "Hsu et al. 2019, q_k ~ Dir(alpha p), --num_clients x "
                      "--examples_per_client; iid: a random equal share; "
                      "shards: McMahan et al. 2017, label-sorted examples cut "
                      "into 2 x --num_clients shards, 2 per client (MNIST: 200 "
                      "shards of 300). digits supports dirichlet only.")
  flags.DEFINE_integer("num_clients", None, "Clients K in the partition "
                       "(default per --dataset: digits 20, cifar10/cifar100/"
                       "mnist 100, synthetic_* 10).", lower_bound=1)
  flags.DEFINE_integer("examples_per_client", None, "Examples per client for "
                       "the dirichlet and iid partitions (default: cifar 500, "
                       "mnist 600, synthetic_* 20; digits uses all its "
                       "training examples).", lower_bound=1)
  flags.DEFINE_string("split_csv", None, "A published user_id,image_id,class "
                      "split (Hsu, Qi & Brown 2020 format) to use instead of "
                      "partitioning; replaces --partition, --alpha, "
                      "--num_clients and --examples_per_client. Not for "
                      "digits.")
  flags.DEFINE_float("client_fraction", None, "McMahan's C: when set, clients "
                     "per round = max(round(C*K), 1) (C = 0 is one client), "
                     "overriding --clients_per_round (giving both on the "
                     "command line is an error).")
  flags.DEFINE_string("model", None, f"Model: {' | '.join(MODELS)} (default "
                      "per --dataset: digits_cnn, mnist_cnn, cifar_cnn, "
                      "mobilenet_v2_gn). mnist_* need mnist data, cifar_cnn "
                      "cifar data, mobilenet_v2_gn inaturalist/landmarks.")
  flags.DEFINE_float("weight_decay", 0.0, "L2 kernel regularization of "
                     "mnist_cnn / cifar_cnn (0 = none).", lower_bound=0.0)
  flags.DEFINE_float("target_accuracy", None, "If set, summary.json reports "
                     "each method's rounds to first reach this test accuracy "
                     "(McMahan et al. 2017: best-so-far, interpolated).")
  flags.DEFINE_float("alpha", 0.5, "Dirichlet concentration of the class "
                     "distribution per client (0 = one class each, inf = IID).",
                     lower_bound=0.0)
  flags.DEFINE_float("imbalance_sigma", None, "If set, client sizes are "
                     "log-normal with this sigma (heavy-tailed) instead of "
                     "equal.", lower_bound=0.0)
  flags.DEFINE_integer("clients_per_round", 10, "Clients selected per round "
                       "(see --client_fraction).", lower_bound=1)
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
  # Real-world splits (Hsu, Qi & Brown 2020): --dataset=inaturalist|landmarks.
  flags.DEFINE_string("test_csv", None, "inaturalist/landmarks: the "
                      "image_id,class[,label] test set (e.g. the builders' "
                      "inaturalist_test.csv / test.csv); required.")
  flags.DEFINE_string("image_root", None, "inaturalist: the directory holding "
                      "train_val_images/ (required); landmarks: the GLD-v2 "
                      "image directory (a/b/c/<id>.jpg), or use --tar_shards.")
  flags.DEFINE_string("image_paths_csv", None, "inaturalist: an image_id,path "
                      "CSV (the builder's image_paths.csv); paths are relative "
                      "to --image_root.")
  flags.DEFINE_list("metadata_json", [], "inaturalist: train2017.json, "
                    "val2017.json to resolve image paths (instead of "
                    "--image_paths_csv), e.g. for TFF's published CSV.")
  flags.DEFINE_string("inat_split", None, "inaturalist: the client column of "
                      "TFF's iNaturalist_train.csv layout (e.g. user_120k, "
                      "geo_1k); not needed for a builder's per-split CSV.")
  flags.DEFINE_list("tar_shards", [], "landmarks: GLD-v2 images_NNN.tar "
                    "shards (comma-separated paths or globs) instead of "
                    "--image_root.")
  flags.DEFINE_string("check_images", "exists", "inaturalist/landmarks: check "
                      "images when opening the split: none | exists (stat "
                      "calls) | decode (slow).")
  flags.DEFINE_string("on_bad_image", "fail", "inaturalist/landmarks: missing "
                      "or corrupt images (listed in --image_report_path) "
                      "either fail the run or are skipped (dropped, counted): "
                      "fail | skip.")
  flags.DEFINE_string("image_report_path", None, "Bad-image report JSON "
                      "(default: <root_output_dir>/<experiment_name>/"
                      "image_report.json).")
  flags.DEFINE_string("index_cache_dir", None, "Where the split's example "
                      "index is cached (default: <root_output_dir>/"
                      ".image_index).")
  flags.DEFINE_integer("image_size", None, "Crop side S (default: 299 "
                       "inaturalist, 224 landmarks, 32 synthetic_*).",
                       lower_bound=_MOBILENET_MIN_SIZE)
  # MobileNetV2-GroupNorm (Hsu, Qi & Brown 2020).
  flags.DEFINE_float("mobilenet_alpha", 1.0, "mobilenet_v2_gn width "
                     "multiplier (ImageNet weights exist for 0.35, 0.5, 0.75, "
                     "1.0, 1.3, 1.4).")
  flags.DEFINE_integer("gn_groups", 32, "mobilenet_v2_gn: maximum GroupNorm "
                       "groups per layer.", lower_bound=1)
  flags.DEFINE_integer("bottleneck_dim", None, "mobilenet_v2_gn: width of the "
                       "linear bottleneck before the classifier (default: 64 "
                       "for landmarks, none otherwise; 0 = none).",
                       lower_bound=0)
  flags.DEFINE_string("pretrained_weights", None, "mobilenet_v2_gn: a local "
                      "Keras MobileNetV2 .h5 weights file of the same alpha "
                      "(ImageNet initialisation; nothing is downloaded).")
  flags.DEFINE_integer("trainable_last_layers", None, "mobilenet_v2_gn: train "
                       "only the last k weighted layers (2 = the paper's "
                       "last-two-layers setting); default: all.",
                       lower_bound=1)
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


def resolve(f) -> Dict[str, object]:
  """Per-dataset defaults of the flags left unset (None), as a dict.

  Keys: family, model, num_clients, examples_per_client, clients_per_round
  (None when it depends on K, i.e. --client_fraction with --split_csv).
  """
  family, model, k, n = _DATASETS[f.dataset]
  num_clients = f.num_clients if f.num_clients is not None else k
  if f.partition == "shards" and f.examples_per_client is not None:
    raise FlagError(f"--examples_per_client={f.examples_per_client}: not used "
                    "by --partition=shards (shard size = training examples / "
                    "(2 x --num_clients)); leave it unset")
  out = {"family": family, "model": f.model or model,
         "num_clients": num_clients,
         "examples_per_client": (f.examples_per_client
                                 if f.examples_per_client is not None else n),
         "clients_per_round": f.clients_per_round,
         "partition": "csv" if f.split_csv is not None else f.partition}
  if family in REALWORLD_FAMILIES:
    out["partition"] = "csv"
    out["image_size"] = f.image_size or (
        _SYNTHETIC_IMAGE_SIZE if f.dataset.startswith("synthetic_")
        else _IMAGE_SIZE[family])
  if out["model"] == "mobilenet_v2_gn":
    out["bottleneck_dim"] = _bottleneck_dim(f, family)
  if f.client_fraction is not None:
    out["clients_per_round"] = (None if num_clients is None else
                                _clients_per_round(f.client_fraction,
                                                   num_clients))
  return out


def _bottleneck_dim(f, family: str) -> Optional[int]:
  """--bottleneck_dim: 0 = none; default 64 for landmarks (Hsu et al. 2020)."""
  if f.bottleneck_dim is None:
    return 64 if family == "landmarks" else None
  return f.bottleneck_dim or None


def _clients_per_round(fraction: float, num_clients: int) -> int:
  from federated_vision.evaluation import convergence  # pylint: disable=g-import-not-at-top
  return convergence.clients_per_round(fraction, num_clients)


def _explicit(f, name: str) -> bool:
  """Whether `--name` was given on the command line (not just defaulted)."""
  return isinstance(f, flags.FlagValues) and f[name].present


def _one_line(e: BaseException) -> str:
  text = str(e).strip() or type(e).__name__
  return text.splitlines()[0]


def _load_arrays(f, family: str):
  """Real or synthetic `archives.ImageArrays` for an mnist/cifar data set."""
  from federated_vision.data import cifar  # pylint: disable=g-import-not-at-top
  from federated_vision.data import mnist  # pylint: disable=g-import-not-at-top
  from federated_vision.data import archives  # pylint: disable=g-import-not-at-top
  r = resolve(f)
  if f.dataset.startswith("synthetic_"):
    if f.partition == "shards":
      n_train = 2 * r["num_clients"] * max(r["examples_per_client"] // 2, 1)
    else:
      n_train = r["num_clients"] * r["examples_per_client"]
    if family == "cifar":
      return cifar.synthetic_arrays(max(n_train, 10), _SYNTHETIC_TEST_EXAMPLES,
                                    10, seed=f.seed)
    return mnist.synthetic_arrays(max(n_train, 10), _SYNTHETIC_TEST_EXAMPLES,
                                  seed=f.seed)
  try:
    if f.data_source == "archive":
      if family == "cifar":
        return cifar.load_arrays_archive(f.archive_path, f.dataset)
      return mnist.load_arrays_archive(f.archive_path)
    if family == "cifar":
      return cifar.load_arrays_tfds(f.dataset, f.data_dir)
    return mnist.load_arrays_tfds(f.data_dir)
  except (FileNotFoundError, archives.ArchiveError, ValueError) as e:
    if f.data_source == "archive":
      raise FlagError(f"--archive_path={f.archive_path}: cannot read "
                      f"{f.dataset} ({_one_line(e)})") from None
    raise FlagError(f"--data_dir={f.data_dir}: tensorflow-datasets "
                    f"{'mnist' if family == 'mnist' else f.dataset!r} is not "
                    "prepared there (nothing is downloaded; prepare it with "
                    "tfds or use --data_source=archive --archive_path=...)"
                    ) from None


def _make_partition(f, labels):
  """(partition, info) from --split_csv or --partition and its flags."""
  from federated_vision.data import partition as partition_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.data import split_io  # pylint: disable=g-import-not-at-top
  r = resolve(f)
  if f.split_csv is not None:
    try:
      split = split_io.read_split_csv(f.split_csv, labels=labels)
    except (FileNotFoundError, ValueError) as e:
      raise FlagError(f"--split_csv={f.split_csv}: {_one_line(e)}") from None
    return split.partition, {"partition": "csv",
                             "split_csv": os.path.abspath(f.split_csv)}
  k, n = r["num_clients"], r["examples_per_client"]
  try:
    if f.partition == "iid":
      part = partition_lib.iid_partition(len(labels), k, n, seed=f.seed)
      info = {"num_clients": k, "examples_per_client": n}
    elif f.partition == "shards":
      usable = len(labels) - len(labels) % (2 * k)
      part = partition_lib.shard_partition(labels[:usable], 2 * k, 2,
                                           seed=f.seed)
      info = {"num_shards": 2 * k, "shards_per_client": 2,
              "shard_size": usable // (2 * k)}
    else:
      part = partition_lib.dirichlet_partition(labels, k, n, f.alpha,
                                               seed=f.seed)
      info = {"num_clients": k, "examples_per_client": n,
              "alpha": float(f.alpha)}
  except ValueError as e:
    raise FlagError(f"--partition={f.partition} with --num_clients={k}"
                    f"{'' if f.partition == 'shards' else f' --examples_per_client={n}'}"
                    f": {_one_line(e)}") from None
  return part, dict(info, partition=f.partition, partition_seed=f.seed)


def _keras_model_fn(f, num_classes: int, input_shape) -> Callable:
  """A no-arg builder of the --model Keras model (same seed every call)."""
  r = resolve(f)
  model = r["model"]
  wd, seed = f.weight_decay, f.seed
  if model == "mobilenet_v2_gn":
    from federated_vision.models import mobilenet_v2 as m  # pylint: disable=g-import-not-at-top
    kw = dict(input_shape=input_shape, num_classes=num_classes,
              alpha=f.mobilenet_alpha, groups=f.gn_groups,
              bottleneck_dim=r["bottleneck_dim"],
              pretrained_weights=f.pretrained_weights,
              trainable_last_layers=f.trainable_last_layers,
              weight_decay=wd, seed=seed)
    try:  # A bad weights file fails now, naming the flag, not inside TFF.
      if f.pretrained_weights is not None:
        m.create_mobilenet_v2_gn(**kw)
    except FileNotFoundError:
      raise FlagError(f"--pretrained_weights={f.pretrained_weights}: no such "
                      "file") from None
    except ValueError as e:
      msg = _one_line(e)
      name = ("pretrained_weights" if "pretrained_weights" in msg else
              "trainable_last_layers" if "trainable_last_layers" in msg else
              "mobilenet_alpha" if msg.startswith("alpha") else
              "gn_groups" if msg.startswith("groups") else "model")
      raise FlagError(f"--{name}={getattr(f, name)}: {msg}") from None
    return lambda: m.create_mobilenet_v2_gn(**kw)
  if model == "digits_cnn":
    from federated_vision.models import digits as m  # pylint: disable=g-import-not-at-top
    return lambda: m.create_digits_cnn(num_classes, seed)
  if model == "mnist_2nn":
    from federated_vision.models import mnist as m  # pylint: disable=g-import-not-at-top
    return lambda: m.create_2nn(num_classes, input_shape, seed=seed)
  if model == "mnist_cnn":
    from federated_vision.models import mnist as m  # pylint: disable=g-import-not-at-top
    return lambda: m.create_cnn(num_classes, input_shape, weight_decay=wd,
                                seed=seed)
  from federated_vision.models import cifar as m  # pylint: disable=g-import-not-at-top
  return lambda: m.create_cifar_cnn(num_classes, input_shape, weight_decay=wd,
                                    seed=seed)


def _load_dataset(f):
  """(FederatedDataset, keras model builder) for --dataset and its flags."""
  r = resolve(f)
  if f.dataset == "digits":
    from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
    fed = digits.load_federated(r["num_clients"], f.alpha, seed=f.seed,
                                imbalance_sigma=f.imbalance_sigma)
  elif r["family"] in REALWORLD_FAMILIES:
    fed = _load_realworld(f, r)
  elif f.dataset in _DATASETS:
    family = r["family"]
    arrays = _load_arrays(f, family)
    part, info = _make_partition(f, arrays.train_y)
    storage = os.path.join(f.root_output_dir, ".client_data")
    if family == "cifar":
      from federated_vision.data import cifar  # pylint: disable=g-import-not-at-top
      fed = cifar.from_arrays(f.dataset, arrays, part, 10 if "10" in f.dataset
                              else 100, storage_dir=storage, info=info)
    else:
      from federated_vision.data import mnist  # pylint: disable=g-import-not-at-top
      fed = mnist.from_arrays(f.dataset, arrays, part, storage_dir=storage,
                              info=info)
  else:
    raise FlagError(f"--dataset={f.dataset}: must be one of "
                    f"{', '.join(DATASET_NAMES)}")
  return fed, _keras_model_fn(f, fed.num_classes, tuple(fed.input_shape))


def _tar_shards(f) -> List[str]:
  """--tar_shards with globs expanded (FlagError if a pattern matches nothing)."""
  out = []
  for pattern in f.tar_shards:
    hits = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else (
        [pattern] if os.path.isfile(pattern) else [])
    if not hits:
      raise FlagError(f"--tar_shards={','.join(f.tar_shards)}: {pattern} "
                      f"{'matches no file' if glob.has_magic(pattern) else 'no such file'}")
    out.extend(hits)
  return out


def _load_realworld(f, r):
  """An iNaturalist / Landmarks split (or its synthetic twin) from flags."""
  from federated_vision.realworld import fixtures  # pylint: disable=g-import-not-at-top
  from federated_vision.realworld import image_data  # pylint: disable=g-import-not-at-top
  family = r["family"]
  report = f.image_report_path or os.path.join(
      f.root_output_dir, f.experiment_name, "image_report.json")
  cfg = dict(image_size=r["image_size"], check_images=f.check_images,
             on_bad_image=f.on_bad_image, report_path=report,
             cache_dir=f.index_cache_dir or os.path.join(f.root_output_dir,
                                                         ".image_index"))
  try:
    if f.dataset.startswith("synthetic_"):
      root = os.path.join(f.root_output_dir, ".synthetic_data", f.dataset)
      make = (fixtures.synthetic_inaturalist if family == "inaturalist"
              else fixtures.synthetic_landmarks)
      fed = make(root, num_clients=r["num_clients"],
                 examples_per_client=r["examples_per_client"],
                 num_classes=_SYNTHETIC_CLASSES, seed=f.seed, **cfg)
    elif family == "inaturalist":
      fed = image_data.load_inaturalist(
          f.split_csv, f.image_root, split=f.inat_split, test_csv=f.test_csv,
          image_paths=f.image_paths_csv, metadata_json=list(f.metadata_json),
          config=image_data.LoaderConfig(**cfg))
    else:
      fed = image_data.load_landmarks(
          f.split_csv, image_root=f.image_root,
          tar_shards=_tar_shards(f) or None, test_csv=f.test_csv,
          config=image_data.LoaderConfig(**cfg))
  except image_data.BadImagesError as e:
    raise FlagError(f"--check_images={f.check_images} "
                    f"--on_bad_image={f.on_bad_image}: bad images, listed in "
                    f"{report} ({_one_line(e).split(' (')[-1].split(')')[0]}); "
                    "fix them or use --on_bad_image=skip") from None
  except (FileNotFoundError, ValueError) as e:
    what = (f"--split_csv={f.split_csv}" if f.split_csv else
            f"--dataset={f.dataset}")
    raise FlagError(f"{what}: {_one_line(e)}") from None
  info = {k: v for k, v in fed.info.items() if k != "class_names"}
  info.update(partition="csv", image_size=r["image_size"],
              num_classes=fed.num_classes)
  if f.inat_split:
    info["inat_split"] = f.inat_split
  names = fed.info.get("class_names")
  if names and all(n is not None for n in names):
    info["label_names"] = [str(n) for n in names]
  if len(fed.client_data.client_ids) == 0:
    raise FlagError(f"--split_csv={f.split_csv}: no clients left")
  return fed._replace(info=info)


def _check_choice(f, name: str, allowed) -> None:
  value = getattr(f, name)
  if value not in allowed:
    raise FlagError(f"--{name}={value}: must be one of {', '.join(allowed)}")


def _existing(name: str, path: Optional[str], kind: str = "file") -> None:
  ok = os.path.isdir(path) if kind == "directory" else os.path.isfile(path)
  if not ok:
    raise FlagError(f"--{name}={path}: no such {kind}")


def _validate_realworld(f, family: str, synthetic: bool) -> None:
  """Flags of --dataset=inaturalist|landmarks and their synthetic twins."""
  _check_choice(f, "check_images", CHECK_IMAGES)
  _check_choice(f, "on_bad_image", BAD_IMAGE_POLICIES)
  for name in ("partition", "alpha", "imbalance_sigma"):
    if _explicit(f, name):
      raise FlagError(f"--{name}: not used by --dataset={f.dataset} (the "
                      "split CSV is the partition)")
  inat_only = ("image_paths_csv", "metadata_json", "inat_split")
  if synthetic:
    for name in ("split_csv", "test_csv", "image_root", "tar_shards") + inat_only:
      if getattr(f, name):
        raise FlagError(f"--{name}: not used by --dataset={f.dataset} (it "
                        "writes its own split and images)")
    return
  for name in ("num_clients", "examples_per_client"):
    if getattr(f, name) is not None:
      raise FlagError(f"--{name}: not used by --dataset={f.dataset} (clients "
                      "and their examples come from --split_csv)")
  if f.split_csv is None:
    raise FlagError(f"--dataset={f.dataset} needs --split_csv (a published or "
                    "built user_id,image_id,class split CSV)")
  _existing("split_csv", f.split_csv)
  if f.test_csv is None:
    raise FlagError(f"--dataset={f.dataset} needs --test_csv (the server-held "
                    "image_id,class test set)")
  _existing("test_csv", f.test_csv)
  if family == "inaturalist":
    if f.tar_shards:
      raise FlagError("--tar_shards: only for --dataset=landmarks (GLD-v2)")
    if f.image_root is None:
      raise FlagError("--dataset=inaturalist needs --image_root (the "
                      "directory holding train_val_images/)")
    if f.image_paths_csv and f.metadata_json:
      raise FlagError("--image_paths_csv and --metadata_json: give only one")
    if f.image_paths_csv:
      _existing("image_paths_csv", f.image_paths_csv)
    for path in f.metadata_json:
      _existing("metadata_json", path)
  else:
    for name in inat_only:
      if getattr(f, name):
        raise FlagError(f"--{name}: only for --dataset=inaturalist")
    if bool(f.image_root) == bool(f.tar_shards):
      raise FlagError("--dataset=landmarks needs exactly one of --image_root "
                      "(a/b/c/<id>.jpg tree) and --tar_shards")
    if f.tar_shards:
      _tar_shards(f)
  if f.image_root is not None:
    _existing("image_root", f.image_root, "directory")


def _validate_mobilenet(f, model: str) -> None:
  if model != "mobilenet_v2_gn":
    for name in _MOBILENET_ONLY:
      if _explicit(f, name):
        raise FlagError(f"--{name}: only used with --model=mobilenet_v2_gn")
    return
  _positive("mobilenet_alpha", f.mobilenet_alpha)
  if f.pretrained_weights is not None:
    _existing("pretrained_weights", f.pretrained_weights)
  size = resolve(f)["image_size"]
  if size < _MOBILENET_MIN_SIZE:
    raise FlagError(f"--image_size={size}: mobilenet_v2_gn needs >= "
                    f"{_MOBILENET_MIN_SIZE}")
  if f.trainable_last_layers is not None:
    from federated_vision.models import mobilenet_v2  # pylint: disable=g-import-not-at-top
    n = mobilenet_v2.num_weighted_layers(resolve(f)["bottleneck_dim"])
    if f.trainable_last_layers > n:
      raise FlagError(f"--trainable_last_layers={f.trainable_last_layers}: "
                      f"must be <= {n} (the model's weighted layers)")


def validate(f) -> None:
  """Cross-flag checks that absl's per-flag bounds cannot express."""
  unknown = [a for a in f.algorithm if a not in ALGORITHMS]
  if unknown or not f.algorithm:
    raise FlagError(f"--algorithm={','.join(f.algorithm)}: each must be one of "
                    f"{', '.join(ALGORITHMS)}")
  _check_choice(f, "dataset", DATASET_NAMES)
  _check_choice(f, "data_source", DATA_SOURCES)
  _check_choice(f, "partition", PARTITIONS)
  if f.model is not None:
    _check_choice(f, "model", MODELS)
  _positive("client_learning_rate", f.client_learning_rate)
  _positive("server_learning_rate", f.server_learning_rate)
  if not 0 <= f.server_momentum < 1:
    raise FlagError(f"--server_momentum={f.server_momentum}: must be in [0, 1)")
  if f.weight_decay < 0 or not math.isfinite(f.weight_decay):
    raise FlagError(f"--weight_decay={f.weight_decay}: must be a finite "
                    "number >= 0")
  if f.client_fraction is not None and not 0 <= f.client_fraction <= 1:
    raise FlagError(f"--client_fraction={f.client_fraction}: must be in [0, 1]")
  if (f.client_fraction is not None and _explicit(f, "client_fraction")
      and _explicit(f, "clients_per_round")):
    raise FlagError("--client_fraction and --clients_per_round: give only "
                    "one (--client_fraction sets clients per round = "
                    "max(C*K, 1))")
  if f.target_accuracy is not None and not 0 < f.target_accuracy <= 1:
    raise FlagError(f"--target_accuracy={f.target_accuracy}: must be in (0, 1]")
  family = _DATASETS[f.dataset][0]
  synthetic = f.dataset.startswith("synthetic_")
  realworld = family in REALWORLD_FAMILIES
  if f.archive_path is not None and f.data_source != "archive":
    raise FlagError(f"--archive_path={f.archive_path}: only read with "
                    "--data_source=archive")
  if (f.data_source == "archive" and family != "digits" and not synthetic
      and not realworld):
    if not f.archive_path:
      raise FlagError(f"--data_source=archive needs --archive_path (the "
                      f"canonical {f.dataset} archive file or directory)")
    if f.data_dir is not None:
      raise FlagError(f"--data_dir={f.data_dir}: only read with "
                      "--data_source=tfds (not with --archive_path)")
    if not os.path.exists(f.archive_path):
      raise FlagError(f"--archive_path={f.archive_path}: does not exist")
  if (f.data_source == "tfds" and f.data_dir is not None and family != "digits"
      and not synthetic and not realworld and not os.path.isdir(f.data_dir)):
    raise FlagError(f"--data_dir={f.data_dir}: not a directory (the "
                    "tensorflow-datasets data_dir holding a prepared "
                    f"{f.dataset})")
  model = f.model or _DATASETS[f.dataset][1]
  if family not in _MODEL_FAMILY[model]:
    fits = [m for m in MODELS if family in _MODEL_FAMILY[m]]
    raise FlagError(f"--model={model}: does not fit --dataset={f.dataset}; "
                    f"use one of {', '.join(fits)}")
  if f.weight_decay > 0 and model in ("digits_cnn", "mnist_2nn"):
    raise FlagError(f"--weight_decay={f.weight_decay}: --model={model} has no "
                    "weight decay; use mnist_cnn or cifar_cnn, or 0")
  if family == "digits":
    if f.partition != "dirichlet" or f.split_csv is not None:
      raise FlagError(f"--partition={f.partition}"
                      f"{' --split_csv' if f.split_csv else ''}: digits "
                      "supports --partition=dirichlet only")
    if f.examples_per_client is not None:
      raise FlagError("--examples_per_client: not used by --dataset=digits "
                      "(its 1,437 training examples are shared by the clients)")
  if realworld:
    _validate_realworld(f, family, synthetic)
  else:
    for name in _REALWORLD_ONLY:
      if _explicit(f, name):
        raise FlagError(f"--{name}: only used with --dataset=inaturalist|"
                        "landmarks (or their synthetic_* twins)")
  _validate_mobilenet(f, model)
  if f.split_csv is not None and not realworld:
    if _explicit(f, "partition"):
      raise FlagError("--split_csv and --partition: give only one (the CSV "
                      "is the partition)")
    if not os.path.isfile(f.split_csv):
      raise FlagError(f"--split_csv={f.split_csv}: no such file")
  num_clients = resolve(f)["num_clients"]
  if f.dataset == "digits" and num_clients > 300:
    raise FlagError(f"--num_clients={num_clients}: must be in [1, 300] for "
                    "--dataset=digits (1,437 training examples)")
  if not f.include_plain and not (f.fedir or f.fedvc):
    raise FlagError("--noinclude_plain needs --fedir or --fedvc: nothing to run")


def build_experiment(f) -> Experiment:
  """Turns parsed flags into data, processes, specs and samplers."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision import algorithms  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision.algorithms import sampling  # pylint: disable=g-import-not-at-top
  from federated_vision.algorithms import fedir as fedir_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.models import build_tff_model_fn  # pylint: disable=g-import-not-at-top

  validate(f)
  output_dir = check_output_dir(f.root_output_dir, f.experiment_name)
  fed, keras_model_fn = _load_dataset(f)
  ids = fed.client_data.client_ids
  resolved = resolve(f)
  if f.client_fraction is not None:  # K may come from --split_csv.
    clients_per_round = _clients_per_round(f.client_fraction, len(ids))
  else:
    clients_per_round = f.clients_per_round
    if clients_per_round > len(ids):
      raise FlagError(f"--clients_per_round={f.clients_per_round}: must be in "
                      f"[1, {len(ids)}] (the number of clients of "
                      f"--dataset={f.dataset})")
  resolved.update(num_clients=len(ids), clients_per_round=clients_per_round)
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
                                                   clients_per_round, f.seed)
      else:
        sampler = sampling.UniformSampler(ids, clients_per_round, f.seed)
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
  hparams["resolved"] = {k: v for k, v in resolved.items() if k != "family"}
  hparams["data"] = {k: v for k, v in fed.info.items() if k != "label_names"}
  stats = _stats_from_counts(fed.class_counts)
  return Experiment(fed, keras_model_fn, methods, output_dir, hparams, stats)


def _stats_from_counts(counts) -> Dict[str, object]:
  from federated_vision.data import partition as partition_lib  # pylint: disable=g-import-not-at-top
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
    "experiment_name", "data_source", "data_dir", "archive_path", "partition",
    "examples_per_client", "split_csv", "client_fraction", "model",
    "weight_decay", "target_accuracy", "test_csv", "image_root",
    "image_paths_csv", "metadata_json", "inat_split", "tar_shards",
    "check_images", "on_bad_image", "image_report_path", "index_cache_dir",
    "image_size", "mobilenet_alpha", "gn_groups", "bottleneck_dim",
    "pretrained_weights", "trainable_last_layers"])
