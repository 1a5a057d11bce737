"""`build_method`: a `MethodConfig` -> the `Method` the training loop runs.

A `Method` is what one curve of an experiment needs: the TFF
`LearningProcess` (or a process object with `build_training_process`), the
`client_data.TrainingSpec` that builds each selected client's batches
inside the executor, the sampler choosing the clients of a round, and
`settings`, the fully resolved description recorded in hparams.json /
summary.json (reports and plots read it; nothing parses names).

The parts every method shares are built here once each, from the
components' declarations (`methods.components`): the server optimizer, the
client SGD, the client work, the spec and sampler (changed by the
data-side variants). With a mixing strategy (`MixingRun`) the strategy's
process is built on its data from the same parts, named
'<method>+<strategy>'. `with_client_groups` trains a covered method
through client groups (`methods.groups`).

Importing this module does not import TensorFlow.
"""

from typing import Dict, NamedTuple, Optional

from federated_vision.methods import components as comp
from federated_vision.methods import groups
from federated_vision.methods import mixing as mixing_lib
from federated_vision.methods.builtins import fedavg as fedavg_builtins
from federated_vision.methods.method_config import (Method, MethodConfig,
                                                    MethodInputs, validate)


class MixingRun(NamedTuple):
  """The mixing part of a method.

  Attributes:
    strategy: a registered mixing strategy.
    settings: the run's `MixingSettings` (its hyper-parameters' flags).
    scenario: the task's `data.mixing_scenarios.MixingScenario`.
  """
  strategy: str
  settings: mixing_lib.MixingSettings
  scenario: object


def client_spec(config: MethodConfig, seed: int = 0):
  """The method's local `client_data.TrainingSpec` before data-side
  variants (its algorithm's B, E; e.g. B = inf, E = 1 for fedsgd).

  Raises:
    ConfigError: see `method_config.validate`.
  """
  validate(config)
  return comp.get(config.algorithm, comp.ALGORITHM).client_spec(config, seed)


def server_optimizer(config: MethodConfig):
  """(the method's server optimizer or None, its recorded settings)."""
  if config.optimizer is None:
    return None, {}
  optimizer = comp.get(config.optimizer, comp.SERVER_OPTIMIZER)
  return optimizer.build(config), optimizer.record(config)


def plain_settings() -> Dict[str, object]:
  """Settings of a method before its variants: the plain client work and
  data side, and what each built-in variant records when not used."""
  out = {"client_work": "plain", "data_side": "plain"}
  for c in comp.components(comp.CLIENT_WORK) + comp.components(comp.DATA_SIDE):
    out.update(c.off_settings)
  return out


def build_method(config: MethodConfig, inputs: MethodInputs,
                 mixing: Optional[MixingRun] = None,
                 client_group_size: Optional[groups.GroupSize] = None,
                 validated: bool = False) -> Method:
  """Builds the method's process, spec, sampler and resolved settings.

  The method is checked first (`methods.method_config.validate`, pure
  Python: the same one-line errors for research code building a method by
  hand as config validation gives a binary).

  Without `mixing`: the algorithm's process with its client-work variant's
  client work and its server optimizer, its spec and a uniform sampler
  changed by the data-side variants. With `mixing`: the strategy's process
  on its data (its registered `build`), given the same components.

  Args:
    config: the method.
    inputs: what its builders read (model, clients, seed, ...).
    mixing: its mixing strategy, or None.
    client_group_size: `--client_group_size` ('auto' or an int): the method
      is trained through client groups when its size
      (`groups.method_group_size`) is > 1, and records the size it runs
      with as its `client_group_size` setting; None: trained per client,
      no size recorded. Without `mixing`, a grouped method's process is
      built once, by its components' grouped builders
      (`Algorithm.grouped_build`, `ClientWork.grouped_update`, which give
      the settings their builders give), not built per client first and
      replaced (ours: each build traces TFF computations, seconds per
      method); with `mixing`, see `with_client_groups`.
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
  parts, update = {}, None
  for name in config.variants:
    v = comp.get(name)
    if v.kind == comp.CLIENT_WORK:
      if size > 1:
        update, extra = v.grouped_update(config, inputs)
      else:
        parts["client_work"], extra = v.build(config, inputs)
      settings.update(extra, client_work=v.name)
    settings.update(v.recorded(config))  # Its declared hyper-parameters.
  optimizer, optimizer_settings = server_optimizer(config)
  algorithm = comp.get(config.algorithm, comp.ALGORITHM)
  build_parts = comp.BuildParts(
      server_optimizer=optimizer,
      client_optimizer=fedavg_builtins.client_sgd(config), **parts)
  if size > 1:
    process, algo_settings = algorithm.grouped_build(config, inputs,
                                                     build_parts, update, size)
  else:
    process, algo_settings = algorithm.build(config, inputs, build_parts)
  settings.update(optimizer_settings)
  settings.update(algorithm.recorded(config))
  settings.update(algo_settings)
  spec, sampler, extra = _sampling(config, inputs)
  settings.update(extra)
  settings.update(_identity(config, config.name, spec, inputs))
  if client_group_size is not None:
    settings["client_group_size"] = size
  return Method(config.name, process, spec, sampler, settings)


def _sampling(config: MethodConfig, inputs: MethodInputs):
  """The method's (spec, sampler, settings) over `inputs.client_ids`: the
  algorithm's spec and a uniform sampler, changed by the data-side variants
  (the one place both are built, with or without a mixing strategy)."""
  from federated_vision.algorithms import sampling  # pylint: disable=g-import-not-at-top
  spec = comp.get(config.algorithm).client_spec(config, inputs.seed)
  sampler = sampling.UniformSampler(inputs.client_ids,
                                    inputs.clients_per_round, inputs.seed)
  settings = {}
  for name in config.variants:
    v = comp.get(name)
    if v.kind == comp.DATA_SIDE:
      spec, sampler, extra = v.build(config, inputs, spec, sampler)
      settings.update(extra, data_side=v.name)
  return spec, sampler, settings


def _identity(config: MethodConfig, name: str, spec, inputs: MethodInputs):
  """The settings naming the method and its local data side."""
  out = dict(name=name, algorithm=config.algorithm,
             variants=list(config.variants), E=spec.epochs,
             B=spec.batch_size, clients_per_round=inputs.clients_per_round)
  if config.overrides:
    out["own_settings"] = {k: getattr(config, k) for k in config.overrides}
  return out


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
  parts, variant_settings = {}, plain_settings()
  for name in config.variants:
    v = comp.get(name)
    fields, extra = v.mixing(config, inputs)
    parts.update(fields)
    variant_settings.update(extra, **{v.kind: name})
    variant_settings.update(v.recorded(config))

  def sampling(fed_data):  # The spec and sampler over fed_data's clients.
    ids = fed_data.client_data.client_ids
    spec, sampler, _ = _sampling(config, inputs._replace(
        client_ids=ids, client_sizes=[fed_data.client_sizes[c] for c in ids]))
    return spec, sampler

  built = strategy.build(mixing.strategy, params, mixing_lib.StrategyInputs(
      inputs=inputs, scenario=mixing.scenario,
      spec=comp.get(config.algorithm).client_spec(config, inputs.seed),
      client_optimizer=fedavg_builtins.client_sgd(config),
      server_optimizer=server, sampling=sampling,
      variants=tuple(config.variants), **parts))
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  name = names.method_name(config, mixing.strategy)
  settings.update(built.settings)
  settings.update(strategy.settings(params))
  settings.update(variant_settings, mixing=mixing.strategy,
                  client_optimizer="sgd",
                  client_learning_rate=config.client_learning_rate,
                  N_VC=built.spec.virtual_client_size)
  settings.update(_identity(config, name, built.spec, inputs))
  return Method(name, built.process, built.spec, built.sampler, settings,
                built.fed_data, built.extra_broadcast_bytes)


def with_client_groups(method: Method, config: MethodConfig,
                       inputs: MethodInputs, group_size) -> Method:
  """`method` trained through client groups (`algorithms.client_groups`:
  one TFF client slot trains several clients in one graph call), if its
  components are covered (`groups.uncovered`).

  The grouped process is built from the method's own components, as
  `build_method` builds them: the client SGD, the server optimizer, the
  client work's grouped update (`ClientWork.grouped_update`).
  `client_group_size` joins its settings. (`build_method(...,
  client_group_size=...)` builds a method without mixing grouped at once.)

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
  update = None
  work = [comp.get(v) for v in config.variants
          if comp.get(v).kind == comp.CLIENT_WORK]
  if work:
    update, _ = work[0].grouped_update(config, inputs)
  optimizer, _ = server_optimizer(config)
  grouped, _ = comp.get(config.algorithm).grouped_build(
      config, inputs, comp.BuildParts(
          server_optimizer=optimizer,
          client_optimizer=fedavg_builtins.client_sgd(config)), update, size)
  return method._replace(process=grouped,
                         settings={**s, "client_group_size": size})
