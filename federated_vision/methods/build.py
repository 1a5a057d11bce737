"""`build_method`: a `MethodConfig` -> the `Method` the training loop runs.

A `Method` is what one curve of an experiment needs: the TFF
`LearningProcess` (or a process object with `build_training_process`), the
`client_data.TrainingSpec` that builds each selected client's batches
inside the executor, the sampler choosing the clients of a round, and
`settings`, the fully resolved description recorded in hparams.json /
summary.json (reports and plots read it; nothing parses names).

The parts every method shares are built here once each, from the
components' declarations (`methods.components`): the server optimizer, the
client SGD, the client work (its local objective), the spec and sampler
(changed by the data-side variants); the algorithm's `build` composes them.
With a mixing strategy (`MixingRun`) the strategy's process is built on its
data from the same parts, named '<method>+<strategy>'. The recorded
settings are derived: every component's options (None for the variants a
method does not use), its names, and what the built method trains with
(its spec's B, E and N_VC, its sampler).

Importing this module does not import TensorFlow.
"""

from typing import Dict, NamedTuple, Optional

from federated_vision.methods import components as comp
from federated_vision.methods import groups
from federated_vision.methods import usage
from federated_vision.methods.method_config import (Method, MethodConfig,
                                                    MethodInputs, validate)
from federated_vision.mixing import strategy as mixing_lib


class MixingRun(NamedTuple):
  """The mixing part of a method.

  Attributes:
    strategy: a registered mixing strategy.
    settings: the run's `MixingSettings` (its hyper-parameters' flags).
    scenario: the task's `mixing.scenarios.MixingScenario`.
  """
  strategy: str
  settings: mixing_lib.MixingSettings
  scenario: object


def client_spec(config: MethodConfig, seed: int = 0):
  """The method's local `client_data.TrainingSpec` before data-side
  variants (`components.client_spec`: B = inf, E = 1 for fedsgd).

  Raises:
    ConfigError: see `method_config.validate`.
  """
  validate(config)
  return comp.client_spec(config, seed)


def client_sgd(config: MethodConfig):
  """The clients' SGD of --client_learning_rate (every built-in's)."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  return tff.learning.optimizers.build_sgdm(config.client_learning_rate)


def server_optimizer(config: MethodConfig):
  """(the method's server optimizer or None, its recorded settings)."""
  if config.optimizer is None:
    return None, {}
  optimizer = comp.get(config.optimizer, comp.SERVER_OPTIMIZER)
  return optimizer.build(config), optimizer.record(config)


def plain_settings() -> Dict[str, object]:
  """Settings of a method before its variants: the plain client work and
  data side, and every variant's options as None."""
  out = {"client_work": "plain", "data_side": "plain"}
  for c in comp.components(comp.CLIENT_WORK) + comp.components(comp.DATA_SIDE):
    out.update({n: None for n in c.option_names()})
  return out


def _client_work(config: MethodConfig):
  """The method's client-work variant, or None."""
  work = [comp.get(v) for v in config.variants
          if comp.get(v).kind == comp.CLIENT_WORK]
  return work[0] if work else None


def local_objective(variant, config, inputs) -> comp.LocalObjective:
  """A client-work variant's `LocalObjective` (a bare function wrapped)."""
  objective = variant.objective(config, inputs)
  if not isinstance(objective, comp.LocalObjective):
    objective = comp.LocalObjective(objective)
  return objective


def build_method(config: MethodConfig, inputs: MethodInputs,
                 mixing: Optional[MixingRun] = None,
                 client_group_size: Optional[groups.GroupSize] = None,
                 validated: bool = False) -> Method:
  """Builds the method's process, spec, sampler and resolved settings.

  The method is checked first (`methods.method_config.validate`, pure
  Python: the same one-line errors for research code building a method by
  hand as config validation gives a binary).

  Without `mixing`: its algorithm's `build` with the parts (client work,
  server optimizer, client SGD), its spec and a uniform sampler changed by
  the data-side variants. With `mixing`: the strategy's process on its
  data (its registered `build`), given the same components.

  Args:
    config: the method.
    inputs: what its builders read (model, clients, seed, ...).
    mixing: its mixing strategy, or None.
    client_group_size: `--client_group_size` ('auto' or an int): the method
      is trained through client groups when its size
      (`groups.method_group_size`) is > 1, and records the size it runs
      with as its `client_group_size` setting; None: trained per client,
      no size recorded. A grouped method's process is built once, grouped
      (each build traces TFF computations, seconds per method).
    validated: the caller validated `config` and `mixing`'s settings
      (config validation, `experiment.config.validate`, does for a run),
      so they are not checked again.

  Raises:
    ConfigError: see `validate`.
    ValueError: an explicit group size > 1 for a method the groups do not
      cover (config validation refuses it first).
  """
  if not validated:
    validate(config)
  if mixing is not None:
    method = _build_mixing(config, inputs, mixing, validated)
    if client_group_size is None:
      return method
    return with_client_groups(method, config, inputs, client_group_size)
  size = 1 if client_group_size is None else groups.method_group_size(
      config, None, client_group_size, inputs.clients_per_round)
  settings = plain_settings()
  objective, work_fn = None, None
  variant = _client_work(config)
  if variant is not None:
    if variant.objective is not None:
      objective = local_objective(variant, config, inputs)
    else:
      work, extra = variant.build(config, inputs)
      work_fn = lambda: work
      settings.update(extra)
    settings["client_work"] = variant.name
  optimizer, optimizer_settings = server_optimizer(config)
  algorithm = comp.get(config.algorithm, comp.ALGORITHM)
  process, algo_settings = algorithm.build(config, inputs, comp.BuildParts(
      inputs.model_fn, client_sgd(config), optimizer, objective, work_fn,
      size, inputs.num_classes))
  spec, sampler, extra = _sampling(config, inputs)
  settings.update(extra)
  settings.update(optimizer_settings)
  settings.update(_recorded(config, algo_settings, spec, inputs))
  if client_group_size is not None:
    settings["client_group_size"] = size
  return Method(config.name, process, spec, sampler, settings)


def _recorded(config: MethodConfig, extra, spec, inputs,
              name: Optional[str] = None) -> Dict[str, object]:
  """What every method records beside its server optimizer's settings:
  its components' options, the clients' SGD, its builder's `extra`, the
  settings naming it and its local data side (B, E, N_VC: FedVC's virtual
  client size, None without)."""
  out = {}
  for c in config.used():
    if c.kind != comp.SERVER_OPTIMIZER:
      out.update(c.recorded(config))
  out.update(client_optimizer="sgd",
             client_learning_rate=config.client_learning_rate)
  read = usage.fields_read(config)
  for decay in usage.SCHEDULES.values():  # A schedule, when one is set.
    if decay in read and getattr(config, decay) != 1.0:
      out[decay] = getattr(config, decay)
  out.update(extra)
  out.update(name=name or config.name, algorithm=config.algorithm,
             variants=list(config.variants), E=spec.epochs,
             B=spec.batch_size, N_VC=spec.virtual_client_size,
             clients_per_round=inputs.clients_per_round)
  if config.overrides:
    out["own_settings"] = {k: getattr(config, k) for k in config.overrides}
  return out


def _sampling(config: MethodConfig, inputs: MethodInputs):
  """The method's (spec, sampler, settings) over `inputs.client_ids`: the
  algorithm's spec and a uniform sampler, changed by the data-side variants
  (the one place both are built, with or without a mixing strategy)."""
  from federated_vision.learning import sampling  # pylint: disable=g-import-not-at-top
  spec = comp.client_spec(config, inputs.seed)
  sampler = sampling.UniformSampler(inputs.client_ids,
                                    inputs.clients_per_round, inputs.seed)
  settings = {}
  for name in config.variants:
    v = comp.get(name)
    if v.kind == comp.DATA_SIDE:
      spec, sampler, extra = v.build(config, inputs, spec, sampler)
      settings.update(extra, data_side=v.name)
  settings["sampler"] = sampler.name
  return spec, sampler, settings


def method_spec(config: MethodConfig):
  """The method's `TrainingSpec` as its data-side variants build it, on a
  stand-in population (one client): what a client trains on per round,
  without the data (the cost estimate)."""
  inputs = MethodInputs(None, 1, ["0"], [1], 1)
  return _sampling(config, inputs)[0]


# Settings every method records, as plots label them (`display_settings`).
_SHOWN = (("E", "E"), ("B", "B"), ("client_learning_rate", "client lr"),
          ("server_optimizer", "server"), ("server_learning_rate",
                                           "server lr"))


def display_settings(settings) -> Dict[str, object]:
  """{label: value} of a built method's recorded `settings` that set its
  results: local E and B, the learning rates, its server optimizer and each
  of its components' own hyper-parameters (their declarations say which),
  in that order; read from what was recorded, so custom components' show."""
  out = {label: settings[k] for k, label in _SHOWN if k in settings}
  if out.get("B", "") is None:
    out["B"] = "∞"
  used = [settings.get("algorithm")] + list(settings.get("variants", ()))
  used += [settings.get("server_optimizer"), settings.get("mixing")]
  for name in used:
    if name in comp.names():
      for field in comp.get(name).option_names():
        if field in settings:
          out[field] = settings[field]
  return out


def _build_mixing(config: MethodConfig, inputs: MethodInputs,
                  mixing: MixingRun, validated: bool) -> Method:
  """`build_method` with a mixing strategy, named '<method>+<strategy>'."""
  strategy = mixing_lib.get_strategy(mixing.strategy)
  params = (strategy.params_from(mixing.settings) if validated else
            mixing_lib.checked_params(mixing.strategy, mixing.settings))
  server, settings = server_optimizer(config)
  variant_settings = plain_settings()
  client_work = None
  variant = _client_work(config)
  if variant is not None:  # A local objective (`check_combination`).
    from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
    objective = local_objective(variant, config, inputs)
    client_work = local.build_client_work(
        inputs.model_fn, client_sgd(config), objective.fn,
        message=objective.message,
        label_counts=local.COUNT_LABELS if objective.label_counts else None,
        num_classes=inputs.num_classes)
    variant_settings["client_work"] = variant.name

  def sampling(fed_data):  # The spec and sampler over fed_data's clients.
    ids = fed_data.client_data.client_ids
    spec, sampler, extra = _sampling(config, inputs._replace(
        client_ids=ids, client_sizes=[fed_data.client_sizes[c] for c in ids]))
    variant_settings.update(extra)
    return spec, sampler

  built = strategy.build(mixing.strategy, params, mixing_lib.StrategyInputs(
      inputs=inputs, scenario=mixing.scenario,
      spec=comp.client_spec(config, inputs.seed),
      client_optimizer=client_sgd(config), server_optimizer=server,
      client_work=client_work, sampling=sampling,
      variants=tuple(config.variants)))
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  name = names.method_name(config, mixing.strategy)
  settings.update(built.settings)
  settings.update(strategy.settings(params))
  settings.update(variant_settings, mixing=mixing.strategy)
  settings.update(_recorded(config, {}, built.spec, inputs, name))
  return Method(name, built.process, built.spec, built.sampler, settings,
                built.fed_data, built.extra_broadcast_bytes)


def with_client_groups(method: Method, config: MethodConfig,
                       inputs: MethodInputs, group_size) -> Method:
  """`method` (built with a mixing strategy) trained through client groups
  (`learning.client_groups`: one TFF client slot trains several clients
  in one graph call), if its components are covered (`groups.uncovered`):
  its algorithm's round built grouped, with the same client SGD and server
  optimizer. `client_group_size` joins its settings.

  Args:
    method: `build_method(config, inputs, mixing)`.
    config, inputs: what it was built from.
    group_size: `--client_group_size` ('auto' or an int).

  Returns:
    The method unchanged (group size 1, or 'auto' for a method the groups
    do not cover) or with a `client_groups.GroupedMethod` as its process.

  Raises:
    ValueError: an explicit group size > 1 for a method not covered
      (config validation refuses it first).
  """
  s = method.settings
  size = groups.method_group_size(config, s.get("mixing"), group_size,
                                  inputs.clients_per_round)
  if size == 1:
    return method._replace(settings={**s, "client_group_size": 1})
  optimizer, _ = server_optimizer(config)
  grouped, _ = comp.get(config.algorithm).build(config, inputs, comp.BuildParts(
      inputs.model_fn, client_sgd(config), optimizer, group_size=size,
      num_classes=inputs.num_classes))
  return method._replace(process=grouped,
                         settings={**s, "client_group_size": size})
