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
  1. a frozen dataclass whose fields are declared with
     `config_fields.option` (default, --help text, bounds; the field's name
     is its flag's), generated as flags by `experiments.flags_lib`;
  2. a field of that type on `ExperimentConfig` and an entry in `SECTIONS`;
  3. its checks in `validate` (or in the library, raising `ConfigError`);
  4. a rule in `federated_vision.experiment.fields_read` saying when a run reads
     each field.
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
from federated_vision.experiment import resolved_run
from federated_vision.experiment import sections
from federated_vision.experiment import fields_read
from federated_vision.methods import groups
from federated_vision.mixing import strategy as mixing_lib
from federated_vision.methods import names as method_names
from federated_vision.methods import usage as method_usage
from federated_vision.tasks.models import ModelConfig

TrainingConfig = sections.TrainingConfig
OutputConfig = sections.OutputConfig
RunConfig = sections.RunConfig
ExecutionConfig = sections.ExecutionConfig
check_output = sections.check_output
check_execution = sections.check_execution

DataConfig = tasks.DataConfig
MethodConfig = methods_lib.MethodConfig
MixingConfig = methods_lib.MixingSettings

# Ours: 5x the most rounds in the reproduced papers (McMahan et al. 2017,
# Sec. 3: 197,500 SGD updates, one round each): a metrics.csv of ~100 MB; more
# is a typo (weeks of running even at digits' ~0.2 s per round).
MAX_TOTAL_ROUNDS = 1_000_000
MethodsConfig = methods_section.MethodsConfig


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
for _name, _cls in SECTIONS.items():  # Their fields' flags (`flags_lib`).
  config_fields.declare(config_fields.CONFIG, _name, _cls)


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
            ) -> Tuple[ExperimentConfig, resolved_run.ResolvedRun]:
  """(config, its `ResolvedRun`) from {flag name: value}: validated once
  (`validate`); pass both to `runner.run(config, resolved)`, which then does
  not validate again."""
  config = replace_fields(ExperimentConfig(), values)
  return config, validate(config, given)


def from_flags(flag_values) -> ExperimentConfig:
  """The validated config of parsed absl flags (`checked_flags`)."""
  return checked_flags(flag_values)[0]


def checked_flags(flag_values
                  ) -> Tuple[ExperimentConfig, resolved_run.ResolvedRun]:
  """(config, its `ResolvedRun`) of parsed absl flags, validated once.

  Every config field is read from the flag of the same name; the flags given
  on the command line (`.present`) also take part in validation (a flag the
  chosen task or model does not read is an error).

  Raises:
    ConfigError: naming the flag.
  """
  names = list(field_sections())
  values = {n: flag_values[n].value for n in names}
  return checked(values, [n for n in names if flag_values[n].present])


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
  shorthands = fields_read.method_shorthands()
  for name in shorthands:
    if name in given or getattr(m, name) != getattr(default, name):
      raise ConfigError(f"--methods and --{name}: give only one (--methods "
                        "lists exactly the methods trained; "
                        f"{fields_read.flag_list(shorthands, 'and')} are "
                        "its shorthands)", "methods")


def check_methods(config: ExperimentConfig, given: Iterable[str] = ()
                  ) -> Tuple[MethodConfig, ...]:
  """The method selection and every method of `config`: each method's own
  fields once (`methods.validate`), its own settings read, each x mixing
  strategy, its client groups (`methods.groups.check_methods`).

  Returns:
    The methods (`MethodsConfig.expand()`).

  Raises:
    ConfigError: naming the field (== flag).
  """
  m = config.methods
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
                      f"{fields_read.flag_list(methods_lib.shorthands())}: nothing "
                      "to run", "include_plain")
  for method in expanded:
    methods_lib.validate(method)
    method_usage.check_overrides(method)
  mixing_lib.validate(config.mixing, expanded, given)
  groups.check_methods(config.execution.client_group_size, expanded,
                       config.mixing.mixing)
  return expanded


def validate(config: ExperimentConfig,
             given: Iterable[str] = ()) -> resolved_run.ResolvedRun:
  """Checks the whole config before any data is loaded.

  Args:
    config: the experiment.
    given: fields set explicitly (on the command line).

  Returns:
    The run's `resolved_run.ResolvedRun` (defaults, C, each method's
    client-group size), computed here once.

  Raises:
    ConfigError: naming the field (== flag).
  """
  given = frozenset(given)
  t = config.training
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
  check_output(config.output)
  check_execution(config.execution)
  expanded = check_methods(config, given)
  if config.mixing.mixing and config.data.dataset not in \
      tasks.scenario_task_names():
    raise ConfigError(f"--mixing: --dataset={config.data.dataset} has no "
                      "mixing scenario (one of "
                      f"{', '.join(tasks.scenario_task_names())})", "mixing")
  defaults = tasks.get_task(config.data.dataset).validate(
      config.data, config.model, given)
  fields_read.check_given(config, given)  # A flag the run does not read: an error.
  return resolved_run.resolve(
      defaults, expanded, config.mixing.mixing, t.clients_per_round,
      t.client_fraction, config.execution.client_group_size)


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
  """The defaults left unset, resolved, as a run records them: model,
  num_clients, examples_per_client, partition, clients_per_round[,
  image_size, ...] (`ResolvedRun.recorded`)."""
  return validate(config).recorded()

