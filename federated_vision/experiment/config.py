"""An experiment as data: one frozen, typed `ExperimentConfig`.

    config = config_lib.from_flags(FLAGS)    # validated; errors name the flag
    runner.run(config)                       # never reads FLAGS

Sections (frozen dataclasses; every leaf field is named exactly like its flag,
so `--field=value: reason` messages come straight from the library):
  data      `tasks.DataConfig`            which task / data set and its split
  model     `tasks.models.ModelConfig` the Keras model and its options
  methods   `MethodsConfig`               which methods run side by side
  training  `TrainingConfig`              rounds, cadence, clients per round,
                                           centralized baseline, seed, target
  output    `OutputConfig`                where results go
  mixing    `MixingConfig`                mixing strategies (Augenstein et al.)
  run       `RunConfig`                   run control (--overwrite,
                                           --on_divergence, ...)
  execution `ExecutionConfig`             which TFF workers run it
                                           (--local_workers, --workers, ...)

Why frozen dataclasses and not `ml_collections.ConfigDict`: no new
dependency; typed fields with defaults in one place; hashable and comparable
(a sweep point is a value); `dataclasses.replace` builds sweep points without
touching global flags (`replace_fields`); `to_dict` is plain JSON.

Adding a section (e.g. run control, execution, mixing):
  1. a frozen dataclass whose field names are the new flags' names (defaults
     equal to the flags' defaults; tests/test_config.py checks both);
  2. a field of that type on `ExperimentConfig` and an entry in `SECTIONS`;
  3. its flags in a small `experiments/flags_<section>.py` with a
     `define_flags()`, listed in `flags_lib.FLAG_MODULES`;
  4. its checks in `validate` (or in the library, raising `ConfigError`);
  5. a rule in `federated_vision.experiment.usage` saying when a run reads each field.
`from_flags`, `to_dict`, `flat` and `replace_fields` pick it up unchanged.
Fields a task or variant declares itself (`federated_vision.config_fields`)
are leaves of `data` / `methods` held in their `options` field.
"""

import dataclasses
import math
import os
from typing import Dict, Iterable, Mapping, Optional, Tuple

from federated_vision import config_fields
from federated_vision import methods as methods_lib
from federated_vision import tasks
from federated_vision.errors import ConfigError, bad
from federated_vision.evaluation import convergence
from federated_vision.experiment import methods_section
from federated_vision.experiment import usage
from federated_vision.methods import groups
from federated_vision.methods import mixing as mixing_lib
from federated_vision.methods import names as method_names
from federated_vision.methods import usage as method_usage
from federated_vision.runtime import worker_config as worker_config_lib
from federated_vision.tasks.models import ModelConfig

DataConfig = tasks.DataConfig
MethodConfig = methods_lib.MethodConfig
MixingConfig = methods_lib.MixingSettings

# Ours: 5x the most rounds in the reproduced papers (McMahan et al. 2017,
# Sec. 3: 197,500 SGD updates, one round each): a metrics.csv of ~100 MB; more
# is a typo (weeks of running even at digits' ~0.2 s per round).
MAX_TOTAL_ROUNDS = 1_000_000
method_shorthands = usage.method_shorthands
MethodsConfig = methods_section.MethodsConfig


def __getattr__(name: str):
  # METHOD_SHORTHANDS: the shorthands as registered now (a variant from
  # --extra_modules adds its own), so computed on each use.
  if name == "METHOD_SHORTHANDS":
    return method_shorthands()
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
  """Rounds, cadence, clients per round, centralized baseline, seed.

  Attributes:
    total_rounds: communication rounds.
    rounds_per_eval: evaluate every N rounds (and at the last).
    rounds_per_checkpoint: checkpoint every N rounds (and at the end).
    clients_per_round: clients per round (unless client_fraction).
    client_fraction: McMahan's C: clients per round = max(round(C K), 1).
    centralized_epochs: epochs of the centralized baseline; 0 skips it.
    seed: seed of partition, sampling, shuffling and initialisation.
    target_accuracy: report rounds to this test accuracy (McMahan 2017).
  """
  total_rounds: int = 60
  rounds_per_eval: int = 5
  rounds_per_checkpoint: int = 10
  clients_per_round: int = 10
  client_fraction: Optional[float] = None
  centralized_epochs: int = 30
  seed: int = 0
  target_accuracy: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class OutputConfig:
  """Results go to <root_output_dir>/<experiment_name>."""
  root_output_dir: str = "output"
  experiment_name: str = "digits_fedavg_vs_fedavgm"


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Run control: how a run treats its directory, divergence and checkpoints.

  None of these change results; they are not part of the recorded
  experiment (`federated_vision.experiment.run_record`).

  Attributes:
    overwrite: delete the experiment directory's results and start over.
    on_divergence: 'stop' (exit status 3 at the first non-finite round) or
      'continue' (count and log such rounds).
    resume_from_last_valid: if the latest checkpoint cannot be read, set it
      aside and resume from the previous readable one.
  """
  overwrite: bool = False
  on_divergence: str = "stop"
  resume_from_last_valid: bool = False


@dataclasses.dataclass(frozen=True)
class ExecutionConfig:
  """Which TFF workers run the computations (`federated_vision.runtime`).

  None of these change results (several workers equal one up to the order
  of the aggregation's float sums, ~1e-6); they are not part of the
  recorded experiment, so a run may resume on other workers.

  Attributes:
    local_workers: local `worker_binary` processes to start and own.
    workers: 'host:port' of worker services started by hand; used in
      addition to the local ones (give --local_workers=0 for remote only).
    max_concurrent_computation_calls: the local workers' flag (<= 0: no
      limit).
    worker_startup_timeout: seconds a worker may take to start / be reached.
    worker_malloc_arena_max: local workers' MALLOC_ARENA_MAX (0: glibc's).
    worker_intra_op_threads: local workers' TF intra-op threads (0: TF's).
    worker_inter_op_threads: local workers' TF inter-op threads (0: TF's).
    client_group_size: clients trained one after another in one TFF slot
      ('auto' or N; 1: one client a slot, the ungrouped path;
      `federated_vision.algorithms.client_groups`). Results equal the
      ungrouped path's up to float summation order. 'auto', the default
      (issue 27: small clients cost several times the per-client floor
      ungrouped): the methods the groups cover train grouped, with
      `methods.groups.resolve_group_size`'s size, a function of C alone (the
      same numbers on any machine); the others ungrouped.
  """
  local_workers: int = 1
  workers: Tuple[str, ...] = ()
  max_concurrent_computation_calls: int = -1
  worker_startup_timeout: float = worker_config_lib.DEFAULT_STARTUP_TIMEOUT_SEC
  worker_malloc_arena_max: int = worker_config_lib.WorkerConfig().malloc_arena_max
  worker_intra_op_threads: int = 0
  worker_inter_op_threads: int = 0
  client_group_size: str = "auto"

  def worker_config(self) -> worker_config_lib.WorkerConfig:
    """The local workers' `runtime.worker_config.WorkerConfig`."""
    return worker_config_lib.WorkerConfig(
        intra_op_threads=self.worker_intra_op_threads,
        inter_op_threads=self.worker_inter_op_threads,
        malloc_arena_max=self.worker_malloc_arena_max)

  def context(self):
    """`runtime.contexts.managed_execution_context` over these workers."""
    # TFF (seconds to import): only when workers are started, not when a
    # config is built or checked.
    from federated_vision.runtime import contexts  # pylint: disable=g-import-not-at-top
    return contexts.managed_execution_context(
        self.max_concurrent_computation_calls, self.worker_config(),
        local_workers=self.local_workers, workers=self.workers,
        startup_timeout=self.worker_startup_timeout)


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
  """Everything `runner.run` needs (see the module docstring)."""
  data: DataConfig = DataConfig()
  model: ModelConfig = ModelConfig()
  methods: MethodsConfig = MethodsConfig()
  training: TrainingConfig = TrainingConfig()
  output: OutputConfig = OutputConfig()
  mixing: MixingConfig = MixingConfig()
  run: RunConfig = RunConfig()
  execution: ExecutionConfig = ExecutionConfig()

  @property
  def output_dir(self) -> str:
    return os.path.join(self.output.root_output_dir,
                        self.output.experiment_name)

  def to_dict(self) -> Dict[str, Dict[str, object]]:
    """{section: {field: value}}, JSON-safe (tuples -> lists, inf -> 'inf');
    without the fields a section says had no effect (`unused_fields`)."""
    return {name: {k: _json_value(name, k, v)
                   for k, v in config_fields.leaves(section)
                   if k not in getattr(section, "unused_fields", tuple)()}
            for name, section in self.sections().items()}

  def sections(self) -> Dict[str, object]:
    return {name: getattr(self, name) for name in SECTIONS}


# Section name -> its dataclass. A new section is one entry here.
SECTIONS = {"data": DataConfig, "model": ModelConfig, "methods": MethodsConfig,
            "training": TrainingConfig, "output": OutputConfig,
            "mixing": MixingConfig, "run": RunConfig,
            "execution": ExecutionConfig}


def field_sections() -> Dict[str, str]:
  """Leaf field (== flag) name -> its section name (components' declared
  fields included, `config_fields`).

  Raises:
    ValueError: a declared field named like another section's field.
  """
  out = {}
  for section, cls in SECTIONS.items():
    for name in config_fields.leaf_names(cls):
      if name in out:
        raise ValueError(f"config field {name!r} is in sections {out[name]} "
                         f"and {section} (a declared option must not reuse "
                         "a flag name)")
      out[name] = section
  return out


def _json_value(section: str, name: str, value):
  if isinstance(value, tuple):
    return list(value)
  if isinstance(value, float) and not math.isfinite(value):
    if math.isnan(value):
      raise ValueError(f"{section}.{name} is NaN")
    return "inf" if value > 0 else "-inf"
  return value


def flat(config: ExperimentConfig) -> Dict[str, object]:
  """{field (== flag) name: value} over all sections, JSON-safe."""
  return {k: v for section in config.to_dict().values() for k, v in section.items()}


def replace_fields(config: ExperimentConfig,
                   values: Mapping[str, object]) -> ExperimentConfig:
  """`dataclasses.replace` by flag name: {'alpha': 0.1, 'model': 'x'}.

  Lists become tuples. Raises ConfigError for an unknown name.
  """
  where = field_sections()
  by_section: Dict[str, Dict[str, object]] = {}
  for name, value in values.items():
    if name not in where:
      raise ConfigError(f"--{name}: not a setting of train_main", name)
    by_section.setdefault(where[name], {})[name] = (
        tuple(value) if isinstance(value, list) else value)
  return dataclasses.replace(config, **{
      s: config_fields.replace_leaves(getattr(config, s), v)
      for s, v in by_section.items()})



def from_values(values: Mapping[str, object],
                given: Iterable[str] = ()) -> ExperimentConfig:
  """A validated config from {flag name: value} (missing = default)."""
  return checked(values, given)[0]


def checked(values: Mapping[str, object], given: Iterable[str] = ()
            ) -> Tuple[ExperimentConfig, Dict[str, object]]:
  """(config, resolved settings) from {flag name: value}: validated once
  (`validate`); pass both to `runner.run(config, resolved)`, which then does
  not validate again."""
  config = replace_fields(ExperimentConfig(), values)
  return config, validate(config, given)


def from_flags(flag_values) -> ExperimentConfig:
  """The validated config of parsed absl flags (`checked_flags`)."""
  return checked_flags(flag_values)[0]


def checked_flags(flag_values) -> Tuple[ExperimentConfig, Dict[str, object]]:
  """(config, resolved settings) of parsed absl flags, validated once.

  Every config field is read from the flag of the same name; the flags given
  on the command line (`.present`) also take part in validation (a flag the
  chosen task or model does not read is an error).

  Raises:
    ConfigError: naming the flag.
  """
  names = list(field_sections())
  values = {n: flag_values[n].value for n in names}
  return checked(values, [n for n in names if flag_values[n].present])


def check_output(output: OutputConfig) -> None:
  if not output.root_output_dir.strip():  # Not the working directory unasked.
    raise bad("root_output_dir", repr(output.root_output_dir),
              "must be a non-empty path (results go to "
              "<root_output_dir>/<experiment_name>)")
  name = output.experiment_name
  # One directory inside --root_output_dir: never the root itself ('.'),
  # its parent ('..') or anywhere else (a path, an absolute one).
  if not name or name in (".", "..") or "/" in name or os.sep in name:
    raise bad("experiment_name", repr(name),
              "must be a non-empty name without '/', not '.' or '..' (one "
              "directory in --root_output_dir)")


def check_execution(e: ExecutionConfig) -> None:
  """The --local_workers / --workers / --worker_* checks (ConfigError)."""
  for name in ("local_workers", "worker_malloc_arena_max",
               "worker_intra_op_threads", "worker_inter_op_threads"):
    if getattr(e, name) < 0:
      raise bad(name, getattr(e, name), "must be >= 0")
  if not e.worker_startup_timeout > 0:
    raise bad("worker_startup_timeout", e.worker_startup_timeout,
              "must be > 0 seconds")
  try:
    worker_config_lib.parse_worker_addresses(e.workers)
  except ValueError as err:
    raise bad("workers", e.workers, str(err).partition(": ")[2]) from None
  try:
    groups.parse_group_size(e.client_group_size)
  except ValueError as err:
    raise bad("client_group_size", e.client_group_size, str(err)) from None
  if e.local_workers == 0 and not e.workers:
    raise ConfigError("--local_workers=0 needs --workers=host:port,...: no "
                      "worker to run on", "local_workers")


def check_method_selection(m: MethodsConfig, given: Iterable[str]) -> None:
  """--methods (parsed once, errors naming it) and its shorthands: with
  --methods, a shorthand given on the command line or set to a non-default
  value is an error naming both flags (it would be ignored).

  Raises:
    ConfigError: naming --methods.
  """
  if not m.methods:
    if "methods" in given:
      raise ConfigError("--methods: give at least one method", "methods")
    return
  method_names.parse_methods(m.methods)
  default = MethodsConfig()
  shorthands = method_shorthands()
  for name in shorthands:
    if name in given or getattr(m, name) != getattr(default, name):
      raise ConfigError(f"--methods and --{name}: give only one (--methods "
                        "lists exactly the methods trained; "
                        f"{usage.flag_list(shorthands, 'and')} are "
                        "its shorthands)", "methods")


def validate(config: ExperimentConfig,
             given: Iterable[str] = ()) -> Dict[str, object]:
  """Checks the whole config before any data is loaded.

  Args:
    config: the experiment.
    given: fields set explicitly (on the command line).

  Returns:
    The resolved settings (`resolve`).

  Raises:
    ConfigError: naming the field (== flag).
  """
  given = frozenset(given)
  t, m = config.training, config.methods
  for name in ("total_rounds", "rounds_per_eval", "rounds_per_checkpoint",
               "clients_per_round"):
    if getattr(t, name) < 1:
      raise bad(name, getattr(t, name), "must be >= 1")
  if t.total_rounds > MAX_TOTAL_ROUNDS:
    raise bad("total_rounds", t.total_rounds, f"must be <= {MAX_TOTAL_ROUNDS:,} "
              "(5x the most rounds in the reproduced papers)")
  if t.seed < 0 or t.seed >= 2**32:
    raise bad("seed", t.seed, "must be in [0, 2**32)")
  if config.run.on_divergence not in ("stop", "continue"):
    raise bad("on_divergence", config.run.on_divergence,
              "must be stop or continue")
  if t.centralized_epochs < 0:
    raise bad("centralized_epochs", t.centralized_epochs, "must be >= 0")
  if t.client_fraction is not None and not 0 <= t.client_fraction <= 1:
    raise bad("client_fraction", t.client_fraction, "must be in [0, 1]")
  if {"client_fraction", "clients_per_round"} <= given and \
      t.client_fraction is not None:
    raise ConfigError("--client_fraction and --clients_per_round: give only "
                      "one (--client_fraction sets clients per round = "
                      "max(C*K, 1))", "client_fraction")
  if t.target_accuracy is not None and not 0 < t.target_accuracy <= 1:
    raise bad("target_accuracy", t.target_accuracy, "must be in (0, 1]")
  check_method_selection(m, given)
  if not m.methods and not m.algorithm:
    raise ConfigError("--algorithm: give at least one", "algorithm")
  for a in () if m.methods else m.algorithm:
    if a not in methods_lib.algorithm_names():
      raise bad("algorithm", list(m.algorithm), "each must be one of "
                f"{', '.join(methods_lib.algorithm_names())}")
    if m.algorithm.count(a) > 1:
      raise bad("algorithm", list(m.algorithm), f"{a} is given "
                f"{m.algorithm.count(a)} times; give each algorithm once")
  expanded = m.expand()
  if not expanded:
    raise ConfigError("--noinclude_plain needs "
                      f"{usage.flag_list(methods_lib.shorthands())}: nothing to run",
                      "include_plain")
  for method in expanded:  # Each method's fields, once (`methods.validate`).
    methods_lib.validate(method)
    method_usage.check_overrides(method)
  check_output(config.output)
  check_execution(config.execution)
  mixing_lib.validate(config.mixing, expanded, given)
  groups.check_methods(config.execution.client_group_size, expanded,
                       config.mixing.mixing)
  if config.mixing.mixing and config.data.dataset not in \
      tasks.scenario_task_names():
    raise ConfigError(f"--mixing: --dataset={config.data.dataset} has no "
                      "mixing scenario (one of "
                      f"{', '.join(tasks.scenario_task_names())})", "mixing")
  resolved = tasks.get_task(config.data.dataset).validate(
      config.data, config.model, given)
  resolved["clients_per_round"] = clients_per_round(config, resolved["num_clients"])
  usage.check_given(config, given)  # A flag the run does not read: an error.
  return resolved


def clients_per_round(config: ExperimentConfig,
                      num_clients: Optional[int]) -> Optional[int]:
  """--clients_per_round, or max(round(C K), 1) with --client_fraction
  (None while K is unknown, i.e. it comes from a split CSV)."""
  t = config.training
  if t.client_fraction is None:
    return t.clients_per_round
  if num_clients is None:
    return None
  return convergence.clients_per_round(t.client_fraction, num_clients)


def resolve(config: ExperimentConfig) -> Dict[str, object]:
  """The defaults left unset, resolved: model, num_clients,
  examples_per_client, partition, clients_per_round[, image_size, ...]."""
  return validate(config)

