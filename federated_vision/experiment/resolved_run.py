"""The resolved run: what a validated config leaves to defaults or derives,
computed once and passed down.

    config, resolved = config_lib.checked(values)   # validated once
    resolved.clients_per_round, resolved.methods[0].group_size
    runner.run(config, resolved)                    # never re-derives them

`ResolvedRun` holds the task's and model's resolved defaults (model, K,
n, partition, image side, the model's extras), the clients per round C and
one `PlannedMethod` per curve: a method with its mixing strategy (None
without --mixing), its name and the client-group size it trains with
(`methods.groups.method_group_size`). When K comes from the data (a split
CSV), C with --client_fraction and the group sizes are known only once the
data are loaded: `with_num_clients(K)` completes them, once. `describe` is
`train_main --dry_run`'s plan.

Plain Python: no TensorFlow.
"""

import dataclasses
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from federated_vision.errors import bad
from federated_vision.evaluation import convergence
from federated_vision.methods import groups
from federated_vision.methods import method_config
from federated_vision.methods import names as method_names
from federated_vision.methods import usage as method_usage


@dataclasses.dataclass(frozen=True)
class PlannedMethod:
  """One curve of a run.

  Attributes:
    config: the method.
    mixing: its mixing strategy (Augenstein et al.), or None.
    group_size: clients trained one after another in one TFF slot (1: the
      per-client path); None while C is unknown (K from the data).
  """
  config: method_config.MethodConfig
  mixing: Optional[str]
  group_size: Optional[int]

  @property
  def name(self) -> str:
    """'<method>' or '<method>+<strategy>' (`methods.names.method_name`)."""
    return method_names.method_name(self.config, self.mixing)


@dataclasses.dataclass(frozen=True)
class ResolvedRun:
  """A validated run's derived settings (see the module docstring).

  Attributes:
    defaults: ((setting, value), ...): the task's and model's resolution
      (`tasks.Task.resolve`: model, num_clients, examples_per_client,
      partition[, image_size, the model's extras]); num_clients None while
      the data give K.
    clients_per_round: C (--clients_per_round, or max(round(C K), 1) with
      --client_fraction); None while K is unknown.
    client_fraction: --client_fraction (None: C is --clients_per_round).
    client_group_size: --client_group_size, parsed ('auto' or an int).
    methods: every curve, in training order.
  """
  defaults: Tuple[Tuple[str, object], ...]
  clients_per_round: Optional[int]
  client_fraction: Optional[float]
  client_group_size: groups.GroupSize
  methods: Tuple[PlannedMethod, ...]

  @property
  def num_clients(self) -> Optional[int]:
    return dict(self.defaults).get("num_clients")

  def recorded(self) -> Dict[str, object]:
    """What summary.json and hparams.json record as `resolved`."""
    return dict(self.defaults, clients_per_round=self.clients_per_round)

  def with_num_clients(self, num_clients: int, dataset: str) -> "ResolvedRun":
    """The run on data of `num_clients` clients (K as loaded): C and the
    group sizes completed.

    Raises:
      ConfigError: C > K (naming --clients_per_round).
    """
    per_round = self.clients_per_round
    if self.client_fraction is not None:
      per_round = convergence.clients_per_round(self.client_fraction,
                                                num_clients)
    elif per_round > num_clients:
      raise bad("clients_per_round", per_round, f"must be in [1, "
                f"{num_clients}] (the number of clients of "
                f"--dataset={dataset})")
    defaults = dict(self.defaults, num_clients=num_clients)
    return dataclasses.replace(
        self, defaults=tuple(defaults.items()), clients_per_round=per_round,
        methods=tuple(dataclasses.replace(
            m, group_size=_group_size(m.config, m.mixing,
                                      self.client_group_size, per_round))
                       for m in self.methods))


def resolve(defaults: Mapping[str, object],
            methods: Sequence[method_config.MethodConfig],
            mixing: Sequence[str], clients_per_round: int,
            client_fraction: Optional[float],
            client_group_size: str) -> ResolvedRun:
  """The `ResolvedRun` of a config that passed validation.

  Args:
    defaults: the task's resolution (`tasks.Task.validate`).
    methods: the methods (`MethodsConfig.expand()`).
    mixing: the --mixing strategies (each method runs once per strategy).
    clients_per_round: --clients_per_round.
    client_fraction: --client_fraction, or None.
    client_group_size: --client_group_size ('auto' or an integer).
  """
  k = defaults.get("num_clients")
  per_round = clients_per_round
  if client_fraction is not None:
    per_round = (None if k is None else
                 convergence.clients_per_round(client_fraction, k))
  size = groups.parse_group_size(client_group_size)
  planned = tuple(
      PlannedMethod(m, s, None if per_round is None else
                    _group_size(m, s, size, per_round))
      for m in methods for s in (tuple(mixing) or (None,)))
  return ResolvedRun(tuple(defaults.items()), per_round, client_fraction,
                     size, planned)


def _group_size(config, mixing: Optional[str], size: groups.GroupSize,
                per_round: int) -> int:
  try:
    return groups.method_group_size(config, mixing, size, per_round)
  except ValueError as e:  # Config validation refuses these first.
    raise bad("client_group_size", size, str(e)) from None


def _show(value) -> str:
  if isinstance(value, (list, tuple)):
    return ",".join(map(str, value))
  return f"{value:g}" if isinstance(value, float) else str(value)


def method_lines(planned: PlannedMethod) -> List[str]:
  """A planned method as the plan prints it: its components, then every
  hyper-parameter it reads (`methods.usage.fields_read`) with its value
  (a rate's schedule only when not constant), then its client-group
  size."""
  m = planned.config
  parts = [f"algorithm {m.algorithm}"]
  if m.variants:
    parts.append("variants " + "+".join(m.variants))
  if m.optimizer is not None:
    parts.append(f"server optimizer {m.optimizer}")
  if planned.mixing is not None:
    parts.append(f"mixing {planned.mixing}")
  read = method_usage.fields_read(m)
  constant = {d for d in method_usage.SCHEDULES.values()
              if getattr(m, d) == 1.0}
  values = [f"{n}={_show(getattr(m, n))}"
            for n in method_usage.hyper_parameters()
            if n in read and n not in constant]
  size = ("unknown until the data give K" if planned.group_size is None
          else f"{planned.group_size} per TFF slot")
  return [f"    {planned.name}: {', '.join(parts)}",
          f"      {', '.join(values) or 'no hyper-parameter'}",
          f"      client groups: {size}"]


def describe(configs: Sequence[object], resolved: ResolvedRun) -> List[str]:
  """`train_main --dry_run`: what the run would do, nothing trained or
  written: the data and model as resolved, the schedule, C, every method
  with its settings and client-group size, and the output directory of
  each repetition (`configs`: the --seeds repetitions, first the run's)."""
  config = configs[0]
  d, t = resolved.recorded(), config.training
  k = d.get("num_clients")
  part = d.get("partition")
  if part in ("dirichlet", "dirichlet_per_class"):
    part += f" (alpha {config.data.alpha:g})"
  lines = ["plan (--dry_run: nothing is trained or written):",
           f"  data: --dataset={config.data.dataset}, partition {part}, "
           f"{'K from the data' if k is None else f'K={k} clients'}"
           + ("" if d.get("examples_per_client") is None else
              f", n={d['examples_per_client']} examples per client"),
           f"  model: {d.get('model')}",
           f"  rounds: {t.total_rounds}, evaluated every "
           f"{t.rounds_per_eval}, checkpointed every "
           f"{t.rounds_per_checkpoint}; seed {t.seed}",
           "  clients per round: " + (
               "max(round(C K), 1) once the data give K" if
               resolved.clients_per_round is None else
               str(resolved.clients_per_round)) + (
                   "" if t.client_fraction is None else
                   f" (--client_fraction={t.client_fraction:g})"),
           "  centralized baseline: " + (
               f"{t.centralized_epochs} epochs" if t.centralized_epochs
               else "none (--centralized_epochs=0)"),
           f"  methods ({len(resolved.methods)}):"]
  for planned in resolved.methods:
    lines += method_lines(planned)
  lines.append("  output: " + ", ".join(c.output_dir for c in configs))
  return lines
