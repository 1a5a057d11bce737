"""Which config fields a resolved experiment reads: one rule, no gaps.

README ("a flag the run does not read is an error"): every field of
`config.ExperimentConfig` (== a flag of train_main) is owned by one rule
here, and `unused_fields(config)` says, for the resolved experiment, which
fields it does not read and why:

  data      the task (`tasks.Task.unused_fields`): fields it never reads,
            and fields its partition leaves unread (--alpha with
            --split_csv or --partition=iid, ...).
  model     the model (`tasks.models.unused_model_fields`).
  methods   the expanded methods (`MethodsConfig.expand()`, so an explicit
            method list is covered too): the union of the hyper-parameters
            their algorithms and variants declare
            (`federated_vision.method_usage`), plus the centralized
            baseline's B and client learning rate (`runner._centralized`);
            --include_plain only with a variant to include it beside;
            --methods or its shorthands (--algorithm, --fedir, --fedprox,
            --fedvc, --include_plain), whichever chose the methods; a
            variant's own hyper-parameters (`Variant.options`) only when a
            method uses the variant.
  training  --clients_per_round or --client_fraction, whichever sets the
            clients per round; the rest always.
  mixing    without --mixing none (`mixing_strategies.validate`); with
            it, each strategy's own hyper-parameters (the fields of its
            registered hyper-parameter dataclass, `MixingStrategy.reads`)
            and the task scenario's (`Task.mixing_reads`).
  execution the local workers' settings only with --local_workers >= 1.
  output, run, and the fields of `ALWAYS_USED`: read by every run.

`check_given` refuses a field given on the command line that the run does
not read (one `ConfigError` naming it and why; exit 2 before any directory
is created). `recorded` / `recorded_flat` are the config as the run records
it (experiment.json, hparams.json, summary.json): without those fields, so
a recorded value always had an effect.
"""

from typing import Dict, Iterable

from federated_vision import methods as methods_lib
from federated_vision import tasks
from federated_vision.mixing import strategy as mixing_strategies
from federated_vision.methods import usage as method_usage
from federated_vision.errors import ConfigError
from federated_vision.tasks import base as task_base
from federated_vision.tasks import models as model_registry

# Fields every run reads, with the reason (tests/experiment/test_usage.py lists
# them).
ALWAYS_USED = {
    "dataset": "selects the task",
    "model": "selects the model (None: the task's default)",
    "mixed_precision": "the model's compute precision",
    "total_rounds": "rounds of every method",
    "rounds_per_eval": "evaluation cadence of every method",
    "rounds_per_checkpoint": "checkpoint cadence of every method",
    "centralized_epochs": "the centralized baseline (0 skips it)",
    "seed": "partition, sampling, shuffling and initialisation",
    "target_accuracy": "rounds to target in summary.json (None: none)",
    "full_train_loss": "the training-set loss column of every method",
    "mixing": "the mixing strategies (empty: none)",
    "workers": "the remote TFF workers (empty: none)",
    "local_workers": "the local TFF workers",
    "worker_startup_timeout": "start-up / connect deadline of every worker",
    "client_group_size": "clients per TFF slot of every method",
}
ALWAYS_USED.update({n: "output location"
                    for n in ("root_output_dir", "experiment_name")})
ALWAYS_USED.update({n: "run control" for n in (
    "overwrite", "on_divergence", "resume_from_last_valid")})

LOCAL_WORKER_FIELDS = ("max_concurrent_computation_calls",
                       "worker_malloc_arena_max", "worker_intra_op_threads",
                       "worker_inter_op_threads")


def _methods_unused(config) -> Dict[str, str]:
  m = config.methods
  expanded = m.expand()
  read = set()
  for method in expanded:
    # A field every method reading it sets itself (its name's own setting)
    # is not read from the flag.
    read |= method_usage.fields_read(method) - set(method.overrides)
  if config.training.centralized_epochs > 0:  # runner._centralized.
    read |= {"client_learning_rate", "client_batch_size"}
  names = ", ".join(x.name for x in expanded)
  out = {}
  for field in method_usage.hyper_parameters():
    if field not in read:
      users = ", ".join(method_usage.readers(field)) or "no method"
      out[field] = (f"not used: read by {users}; this run's methods are "
                    f"{names}")
  shorthands = methods_lib.shorthands()
  if not any(getattr(m, v) for v in shorthands):
    out["include_plain"] = (
        f"not used: without {flag_list(shorthands)} every method is plain")
  # The method selection: --methods or its shorthands, whichever chose the
  # methods (giving both is refused by config.check_method_selection).
  out.update({n: "not used: --methods lists the methods trained"
              for n in m.unused_fields()})
  if not m.methods:
    out["methods"] = (
        "unset: the shorthands ("
        f"{', '.join('--' + n for n in method_shorthands())}) choose "
        "the methods")
  return out


def method_shorthands():
  """The shorthands of --methods: --algorithm, each variant's --<name> flag
  (`Variant.shorthand`), --include_plain."""
  return ("algorithm",) + methods_lib.shorthands() + ("include_plain",)


def flag_list(names, last: str = "or") -> str:
  """'--a, --b or --c'."""
  names = [f"--{n}" for n in names]
  if len(names) < 2:
    return "".join(names)
  return ", ".join(names[:-1]) + f" {last} {names[-1]}"


def _mixing_unused(config) -> Dict[str, str]:
  strategies = config.mixing.mixing
  fields = [n for n in mixing_strategies.SETTINGS_FIELDS if n != "mixing"]
  if not strategies:
    return {n: "only used with --mixing" for n in fields}
  read = set()
  for s in strategies:  # Each strategy's hyper-parameter dataclass.
    read |= set(mixing_strategies.get_strategy(s).flags_read())
  task = tasks.get_task(config.data.dataset)
  out = {}
  for n in fields:
    if n == "missing_classes":
      if n not in task.mixing_reads:
        out[n] = (f"not used by --dataset={task.name}'s mixing scenario (its "
                  "classes are fixed)")
    elif n not in read:
      users = mixing_strategies.readers(n)
      out[n] = f"only used with --mixing={'|'.join(users)}"
  return out


def ruled_fields() -> Dict[str, str]:
  """{field: the rule that decides whether a run reads it}, for every field
  a rule of this module covers (`uncovered` lists the others)."""
  out = {n: "always used" for n in ALWAYS_USED}
  out.update({n: "the task" for n in task_base.data_fields() if n != "dataset"})
  out.update({n: "the model" for n in model_registry.MODEL_FIELDS})
  out.update({n: "the methods" for n in method_usage.hyper_parameters() +
              method_shorthands() + ("methods",)})
  out.update({n: "clients per round" for n in ("clients_per_round",
                                               "client_fraction")})
  out.update({n: "the mixing strategies"
              for n in mixing_strategies.SETTINGS_FIELDS if n != "mixing"})
  out.update({n: "the local workers" for n in LOCAL_WORKER_FIELDS})
  return out


def uncovered(config) -> Iterable[str]:
  """Fields of `config` (an ExperimentConfig) no rule covers (taken as read
  and recorded; tests/experiment/test_usage.py fails until a new field has a
  rule)."""
  ruled = ruled_fields()
  return [k for section in config.to_dict().values() for k in section
          if k not in ruled]


def unused_fields(config) -> Dict[str, str]:
  """{field (== flag): why the resolved experiment does not read it}.

  `config` is an `federated_vision.experiment.config.ExperimentConfig` whose task, model,
  algorithms and variants are known (it passed `validate`'s other checks).
  """
  task = tasks.get_task(config.data.dataset)
  out = task.unused_fields(config.data)
  out.update(model_registry.unused_model_fields(
      config.model.model or task.default_model))
  out.update(_methods_unused(config))
  t = config.training
  if t.client_fraction is not None:
    out["clients_per_round"] = ("not used: --client_fraction sets clients per "
                                "round = max(C*K, 1)")
  else:
    out["client_fraction"] = "unset: --clients_per_round is used"
  out.update(_mixing_unused(config))
  if config.execution.local_workers == 0:
    out.update({n: "not used: --local_workers=0 starts no local worker"
                for n in LOCAL_WORKER_FIELDS})
  return out


def check_given(config, given: Iterable[str]) -> None:
  """Refuses a field given on the command line that the run does not read.

  Raises:
    ConfigError: '--<field>: <why>' for the first such field (field order).
  """
  given = set(given)
  unused = unused_fields(config)
  for name in [k for s in config.to_dict().values() for k in s]:
    if name in given and name in unused:
      raise ConfigError(f"--{name}: {unused[name]}", name)


def recorded(config) -> Dict[str, Dict[str, object]]:
  """`config.to_dict()` without the fields the run does not read."""
  unused = unused_fields(config)
  return {section: {k: v for k, v in values.items() if k not in unused}
          for section, values in config.to_dict().items()}


def recorded_flat(config) -> Dict[str, object]:
  """{field: value} of `recorded` over all sections."""
  return {k: v for section in recorded(config).values()
          for k, v in section.items()}
