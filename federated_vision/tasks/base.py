"""Tasks: a named data set + its default model and hyper-parameters.

A task (after TFF's `simulation/baselines`: a task = data + model) is one
frozen `Task` registered by name; `--dataset=<name>` picks it. It knows

  * how to build its `client_data.FederatedDataset` from a `DataConfig`
    (`build_data`), converting loader errors into `ConfigError`s that name
    the field;
  * its input `family` (which registered models fit, see
    `federated_vision.tasks.models`) and its default model;
  * its defaults (clients K, examples per client n, image side S) and the
    `DataConfig` fields it reads; any other field set explicitly, or away
    from its default, is an error naming the field, never silently ignored.

Adding a data set = one module calling `register_task(Task(...))`, imported by
`federated_vision/tasks/__init__.py` (or by the user, e.g. through the
binaries' --extra_modules). A task with options of its own declares them as
its config section, `Task(options=<frozen dataclass>)` (fields, defaults,
help, `validate()`: `federated_vision.config_fields`); the binaries' flags
and --help are generated from it, `DataConfig.options` holds the values and
`data.<field>` reads one (celeba: --celeba_cache_dir, digits:
--imbalance_sigma).
"""

import dataclasses
from typing import (Callable, Dict, FrozenSet, Mapping, NamedTuple, Optional,
                    Sequence, Tuple, Union)

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad
from federated_vision.registry import Registry
from federated_vision.tasks import models as model_registry
from federated_vision.tasks.partitions import SCHEMES as _SCHEMES
from federated_vision.tasks.partitions import SIZED_BY_DATA as _SIZED_BY_DATA


@dataclasses.dataclass(frozen=True)
class DataConfig:
  """Which federated data set to build; field names are the binaries' flags.

  Attributes:
    dataset: registered task name.
    data_source: 'tfds' (a prepared tensorflow-datasets dir) or 'archive'
      (the canonical files) for the real CIFAR / MNIST.
    data_dir: tensorflow-datasets data_dir.
    archive_path: canonical archive file or directory.
    partition: dirichlet | iid | shards | dirichlet_per_class (see
      `tasks.partitions`).
    num_clients: K; None = the task's default.
    examples_per_client: n; None = the task's default.
    split_csv: a published user_id,image_id,class split instead of a scheme.
    alpha: Dirichlet concentration (dirichlet, dirichlet_per_class).
    image_size: crop side S of the image tasks (None: the task's).
    options: the values of the fields tasks declare as their own config
      sections (`Task.options`); `data.<field>` reads one (its declared
      default when unset), `DataConfig.of(**fields)` builds with them.
  """
  dataset: str = config_fields.option(
      "digits", lambda: "Federated data set (task): "
      f"{' | '.join(task_names())}. synthetic_* are random-image twins of "
      "the real sets (same elements, model and code path) for tests and "
      "smoke runs.")
  data_source: str = config_fields.option(
      "tfds", "Where real CIFAR/MNIST come from: tfds | archive. 'tfds' "
      "reads a prepared tensorflow-datasets directory (--data_dir; never "
      "downloads); 'archive' reads the canonical files (--archive_path).")
  data_dir: Optional[str] = config_fields.option(
      None, "tensorflow-datasets data_dir (default: tfds' own, "
      "~/tensorflow_datasets).")
  archive_path: Optional[str] = config_fields.option(
      None, "With --data_source=archive: cifar-10-python.tar.gz / "
      "cifar-100-python.tar.gz (or a directory holding it or its extracted "
      "folder), or the directory of MNIST's four IDX files.")
  partition: str = config_fields.option(
      "dirichlet", "How training examples are dealt to clients: dirichlet | "
      "iid | shards | dirichlet_per_class. dirichlet: Hsu et al. 2019, q_k ~ "
      "Dir(alpha p), --num_clients x --examples_per_client; iid: a random "
      "equal share; shards: McMahan et al. 2017, label-sorted examples cut "
      "into 2 x --num_clients shards, 2 per client (MNIST: 200 shards of "
      "300); dirichlet_per_class: NIID-Bench/FedLab/Flower label skew, each "
      "class divided over the --num_clients clients by Dir(alpha 1_K), "
      "every example used, sizes vary (min 10, re-drawn). digits: all but "
      "iid (shards: K=20 gives 40 shards of 35).")
  num_clients: Optional[int] = config_fields.option(
      None, "Clients K in the partition (default per --dataset: digits 20, "
      "cifar10/cifar100/mnist 100, synthetic_* 10, synthetic real-world "
      "twins 6).", lower_bound=1)
  examples_per_client: Optional[int] = config_fields.option(
      None, "Examples per client for the dirichlet and iid partitions "
      "(default: cifar 500, mnist 600, synthetic_* 20; digits uses all its "
      "training examples).", lower_bound=1)
  split_csv: Optional[str] = config_fields.option(
      None, "A published user_id,image_id,class split (Hsu, Qi & Brown 2020 "
      "format) to use instead of partitioning; replaces --partition, "
      "--alpha, --num_clients and --examples_per_client. Not for digits.")
  alpha: float = config_fields.option(
      0.5, "Dirichlet concentration of the class distribution per client (0 "
      "= one class each, inf = IID); with dirichlet_per_class, of each "
      "class's division over the clients (> 0; inf = even).",
      lower_bound=0.0)
  image_size: Optional[int] = config_fields.option(
      None, "Crop side S (default: 299 inaturalist, 224 landmarks, 32 "
      "synthetic_*).", lower_bound=32)
  options: config_fields.Options = config_fields.Options(config_fields.TASK)

  def __getattr__(self, name: str):
    """A task-declared field (`config_fields`), e.g. `data.celeba_cache_dir`."""
    if name.startswith("_") or name == "options":
      raise AttributeError(name)
    return self.__dict__["options"].get(name)

  @classmethod
  def of(cls, **values) -> "DataConfig":
    """A DataConfig from {field: value}, task-declared fields included
    (ConfigError naming an unknown one)."""
    return config_fields.replace_leaves(cls(), values)


def data_fields() -> Tuple[str, ...]:
  """Every data field (== flag): DataConfig's own, then the ones tasks
  declare (`Task.options`; more after --extra_modules are imported)."""
  return tuple(f.name for f in dataclasses.fields(DataConfig)
               if f.name != "options") + config_fields.field_names(
                   config_fields.TASK)


_DEFAULTS = DataConfig()


class DataContext(NamedTuple):
  """Where a task may write, and the seed of its randomness.

  Attributes:
    seed: partition / synthetic-data seed (the experiment's seed).
    cache_dir: shared across experiments (per-client arrays, image indices,
      synthetic fixtures), e.g. <root_output_dir>.
    output_dir: this experiment's directory (reports).
  """
  seed: int
  cache_dir: str
  output_dir: str


DataFn = Callable[["Task", DataConfig, Mapping[str, object], DataContext],
                  object]
# (task, data config, resolved settings, context, missing_classes or None)
#   -> `mixing.scenarios.MixingScenario`.
ScenarioFn = Callable[["Task", DataConfig, Mapping[str, object], DataContext,
                       Optional[str]], object]


def _no_checks(task: "Task", data: DataConfig, given: FrozenSet[str]) -> None:
  del task, data, given


def scheme_unused(task: "Task", data: DataConfig) -> Dict[str, str]:
  """Fields a partition scheme leaves unread: {field: why} (`Task.unused`).

  A split CSV is the partition (no scheme, no Dirichlet draw); iid and shards
  draw no Dirichlet proportions (dirichlet and dirichlet_per_class read
  --alpha); shards fix the shard size (McMahan et al.
  2017, Section 3: 2 shards per client) and give every client the same size.
  """
  if task.fixed_partition is not None:
    return {}
  if data.split_csv is not None:
    return {n: "--split_csv gives the partition"
            for n in ("partition", "alpha", "imbalance_sigma")}
  out = {}
  if data.partition not in ("dirichlet", "dirichlet_per_class"):
    out["alpha"] = (f"--partition={data.partition} draws no Dirichlet class "
                    "proportions")
  if data.partition == "shards":
    for n in ("examples_per_client", "imbalance_sigma"):
      out[n] = ("--partition=shards gives every client 2 label-sorted shards "
                "of training examples / (2 x --num_clients)")
  return out


@dataclasses.dataclass(frozen=True)
class Task:
  """A registered data set (see the module docstring).

  Attributes:
    name: registry name (the --dataset value).
    family: input family; the models whose `families` contain it fit.
    default_model: model registry name used when `ModelConfig.model` is None.
    data_fn: `(task, data config, resolved settings, context) ->
      FederatedDataset`; raises `ConfigError` for bad input.
    reads: `DataConfig` fields the task reads (besides `dataset`); its
      `options` fields are added by `register_task`.
    num_clients: default K (None: from the data, e.g. a split CSV).
    examples_per_client: default n (None: all / from the data).
    image_size: default crop side S of image tasks (None: fixed input).
    partitions: accepted `DataConfig.partition` schemes; or one name that is
      not a scheme when the data fixes the clients: ("csv",) when the split
      file is the partition, ("celebrity",) for CelebA. That name is what
      hparams.json / summary.json record as the partition.
    model_defaults: defaults of model settings for this task, e.g.
      {"bottleneck_dim": 64} for Landmarks (Hsu, Qi & Brown 2020).
    presence: `(task, data) -> None | tasks.presence.MissingData`: whether
      the data are on this machine (checked before any run; None: always).
    check: `(task, data, given) -> None`, task-specific checks raising
      `ConfigError` (run before the generic unused-field check).
    unused: `(task, data) -> {field: why}`: fields of `reads` that `data`
      leaves unread (e.g. --alpha with --split_csv); given on the command
      line they are an error, and they are not recorded (`unused_fields`).
    mixing_reads: `MixingSettings` fields the task's mixing scenario reads
      (--missing_classes), with --mixing.
    description: one line for --help / the README.
    scenario_fn: `(task, data, resolved, context, missing_classes) ->
      MixingScenario` for --mixing (Augenstein et al.): the federated data,
      the server's centralized data and the evaluation groups; None when the
      task has no mixing scenario. `missing_classes` is --missing_classes
      (None: the task's default); a task without classes to choose raises
      `ConfigError` when it is given.
    options: the task's own config section, a frozen dataclass of
      `config_fields.option` fields (their flags are generated; an optional
      `validate()` raises `ConfigError`), a tuple of them (sections shared
      with other tasks, e.g. an image loader's, and its own), or None.
  """
  name: str
  family: str
  default_model: str
  data_fn: DataFn
  reads: FrozenSet[str] = frozenset()
  num_clients: Optional[int] = None
  examples_per_client: Optional[int] = None
  image_size: Optional[int] = None
  partitions: Tuple[str, ...] = _SCHEMES
  model_defaults: Tuple[Tuple[str, object], ...] = ()
  presence: Optional[Callable[["Task", DataConfig], object]] = None
  check: Callable[["Task", DataConfig, FrozenSet[str]], None] = _no_checks
  description: str = ""
  scenario_fn: Optional[ScenarioFn] = None
  unused: Callable[["Task", DataConfig], Mapping[str, str]] = scheme_unused
  mixing_reads: FrozenSet[str] = frozenset({"missing_classes"})
  options: Union[None, type, Tuple[type, ...]] = None

  def unused_fields(self, data: DataConfig) -> Dict[str, str]:
    """{DataConfig field: why it is not read} for this task and `data`."""
    out = {n: f"not used by --dataset={self.name}" for n in data_fields()
           if n != "dataset" and n not in self.reads}
    out.update({n: f"not used: {why}" for n, why in
                self.unused(self, data).items() if n in self.reads})
    return out

  @property
  def fixed_partition(self) -> Optional[str]:
    """The data's own partition ('csv', 'celebrity'), or None when
    --partition chooses one of `partitions`."""
    if len(self.partitions) == 1 and self.partitions[0] not in _SCHEMES:
      return self.partitions[0]
    return None

  @property
  def model_names(self) -> Tuple[str, ...]:
    """Registered models fitting this task's family."""
    return model_registry.model_names(self.family)

  def resolve(self, data: DataConfig,
              model: model_registry.ModelConfig) -> Dict[str, object]:
    """The settings left to defaults, resolved: model, num_clients,
    examples_per_client, partition, [image_size], [model extras]."""
    out = {"model": model.model or self.default_model,
           "num_clients": (data.num_clients if data.num_clients is not None
                           else self.num_clients),
           "examples_per_client": (data.examples_per_client
                                   if data.examples_per_client is not None
                                   else self.examples_per_client),
           "partition": ("csv" if data.split_csv is not None
                         else self.fixed_partition or data.partition)}
    if out["partition"] in _SIZED_BY_DATA:
      out["examples_per_client"] = None  # N / (2K) shards; or sizes vary.
    if self.image_size is not None:
      out["image_size"] = data.image_size or self.image_size
    spec = model_registry.get_model(out["model"])
    out.update(spec.resolve(model, dict(self.model_defaults)))
    return out

  def validate(self, data: DataConfig, model: model_registry.ModelConfig,
               given: Sequence[str] = ()) -> Dict[str, object]:
    """Checks the data and model settings; returns `resolve`'s settings.

    Args:
      data: data settings.
      model: model settings.
      given: fields set explicitly (command line); a field the task or model
        does not read is then an error even at its default value.

    Raises:
      ConfigError: naming the field.
    """
    given = frozenset(given)
    if data.partition not in _SCHEMES:
      raise bad("partition", data.partition,
                f"must be one of {', '.join(_SCHEMES)}")
    if self.fixed_partition is None and data.partition not in self.partitions:
      raise bad("partition", data.partition, f"--dataset={self.name} supports "
                f"--partition={'|'.join(self.partitions)} only")
    if data.partition == "shards" and data.examples_per_client is not None:
      raise bad("examples_per_client", data.examples_per_client,
                "not used by --partition=shards (shard size = training "
                "examples / (2 x --num_clients)); leave it unset")
    if data.partition == "dirichlet_per_class" and data.split_csv is None:
      if data.examples_per_client is not None:
        raise bad("examples_per_client", data.examples_per_client,
                  "not used by --partition=dirichlet_per_class (every "
                  "training example is dealt; client sizes vary); leave it "
                  "unset")
      if not data.alpha > 0:
        raise bad("alpha", data.alpha, "must be > 0 (or inf) for "
                  "--partition=dirichlet_per_class (Dir(alpha 1_K) over the "
                  "clients, per class)")
    if self.options is not None:
      data.options.validate([self.name])
    self.check(self, data, given)
    unused = self.unused_fields(data)
    for name in data_fields():
      if name not in unused:
        continue
      if name in given or (name not in self.reads and
                           getattr(data, name) != getattr(_DEFAULTS, name)):
        raise ConfigError(f"--{name}: {unused[name]}", name)
    resolved = self.resolve(data, model)
    model_registry.validate_model_config(
        model, self.family, self.name, resolved,
        [g for g in given if g in model_registry.MODEL_FIELDS])
    return resolved

  def build_data(self, data: DataConfig, context: DataContext):
    """The task's `client_data.FederatedDataset` (ConfigError if unusable)."""
    return self.data_fn(self, data, self.resolve(
        data, model_registry.ModelConfig()), context)

  def build_scenario(self, data: DataConfig, context: DataContext,
                     missing_classes: Optional[str] = None):
    """The task's mixing scenario (`scenario_fn`; ConfigError if none)."""
    if self.scenario_fn is None:
      raise ConfigError(f"--mixing: --dataset={self.name} has no mixing "
                        "scenario (tasks with one: "
                        f"{', '.join(scenario_task_names())})", "mixing")
    return self.scenario_fn(self, data, self.resolve(
        data, model_registry.ModelConfig()), context, missing_classes)

  def build_keras_model_fn(self, model: model_registry.ModelConfig,
                           num_classes: int, input_shape: Sequence[int],
                           seed: int = 0) -> Callable[[], object]:
    """A no-arg builder of the (default or chosen) Keras model."""
    resolved = self.resolve(DataConfig(dataset=self.name), model)
    model_registry.check_pretrained_weights(model, resolved, num_classes,
                                            input_shape, seed)
    return model_registry.build_keras_model_fn(model, resolved, num_classes,
                                               input_shape, seed)


_TASKS: Registry[Task] = Registry("task", "dataset")


def register_task(task: Task) -> Task:
  """Adds `task` to the registry (a name may be registered once) and
  declares its `options` section (`config_fields.declare`)."""
  if task.name in _TASKS:
    raise ValueError(f"task name {task.name!r} is already registered")
  classes = (task.options if isinstance(task.options, tuple) else
             (task.options,) if task.options is not None else ())
  for cls in classes:
    section = config_fields.declare(config_fields.TASK, task.name, cls)
    task = dataclasses.replace(task, reads=frozenset(task.reads) |
                               frozenset(section.field_names))
  unknown = set(task.reads) - set(data_fields())
  if unknown:
    raise ValueError(f"task {task.name!r} reads unknown fields {sorted(unknown)}")
  model_registry.get_model(task.default_model)
  return _TASKS.add(task.name, task)


def get_task(name: str) -> Task:
  """The registered task, or `ConfigError` naming --dataset."""
  return _TASKS.get(name)


def task_names() -> Tuple[str, ...]:
  """Registered task names, in registration order."""
  return _TASKS.names()


def scenario_task_names() -> Tuple[str, ...]:
  """Registered tasks with a mixing scenario (--mixing)."""
  return _TASKS.names(lambda t: t.scenario_fn is not None)
