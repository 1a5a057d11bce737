"""Methods: a learning process + the client data spec + the client sampler.

A `Method` is what one curve of an experiment needs: the TFF
`LearningProcess`, the `client_data.TrainingSpec` that builds each selected
client's batches inside the executor, the sampler choosing the clients of a
round, and `settings`, the fully resolved description recorded in
hparams.json / summary.json (report_main reads it; nothing parses names).

A method is an explicit, named composition of registered components
(`method_components`; the built-ins in `method_builtins`):
  * an *algorithm* (server side + local B, E: fedavg, fedavgm, fedsgd);
  * at most one *client-work variant* (fedir: Hsu, Qi & Brown 2020,
    importance reweighting; fedprox: Li et al. 2020): both replace the same
    component, so combining them is a ValueError;
  * any *data-side variants* (fedvc: virtual clients, `algorithms.fedvc`);
  * optionally a *mixing strategy* (Augenstein et al.; `mixing_strategies`:
    none, parallel, example_transfer, gradient_transfer, oracle) on the
    task's `MixingScenario`, named '<method>+<strategy>'. The `Method` then
    carries the data it trains on (`fed_data`: the oracle's / example
    transfer's client data) and its `extra_broadcast_bytes` per round.
`build_method` is the one builder of all of them.

Extending: `register_algorithm(Algorithm(...))`, `register_variant(Variant(
...))` or `mixing_strategies.register_mixing_strategy(MixingStrategy(...))`
from any module (e.g. one passed to the binaries' --extra_modules).

Importing this module does not import TensorFlow (validation runs before any
data or TFF is loaded); builders import the algorithms when called.
"""

import dataclasses
from typing import NamedTuple, Optional

from federated_vision import client_group_size
from federated_vision import method_builtins  # pylint: disable=unused-import  (registers the built-ins)
from federated_vision import mixing_strategies
from federated_vision.method_builtins import (  # pylint: disable=unused-import
    client_sgd, fedir_target, server_settings)
from federated_vision.method_components import (  # pylint: disable=unused-import
    _VARIANTS, CLIENT_WORK, DATA_SIDE, FEDIR_TARGETS, Algorithm,
    AlgorithmBuilder, HyperParameters, Method, MethodConfig, MethodInputs,
    Variant, algorithm_names, default_client_spec, fedsgd_client_spec,
    get_algorithm, get_variant, register_algorithm, register_variant,
    validate_method_config, variant_names)
from federated_vision.mixing_settings import MixingSettings  # pylint: disable=unused-import


class MixingRun(NamedTuple):
  """The mixing part of a method.

  Attributes:
    strategy: a registered mixing strategy (`mixing_strategies`).
    settings: the run's `MixingSettings` (its hyper-parameters' flags).
    scenario: the task's `data.mixing_scenarios.MixingScenario`.
  """
  strategy: str
  settings: MixingSettings
  scenario: object


def build_method(config: MethodConfig, inputs: MethodInputs,
                 mixing: Optional[MixingRun] = None) -> Method:
  """Builds the method's process, spec, sampler and resolved settings.

  Without `mixing`: the algorithm's process with its client-work variant's
  client work, its spec and a uniform sampler changed by the data-side
  variants. With `mixing`: the strategy's process on its data (its
  registered `build`), given the components built here once: the
  algorithm's server optimizer and spec, the client SGD, the variants'
  `mixing` parts (FedIR's client work) and `sampling`, the same spec and
  sampler (data-side variants: FedVC) over the clients of the strategy's
  data.

  Raises:
    ConfigError / ValueError: see `validate_method_config` and
      `mixing_strategies.checked_params`.
  """
  validate_method_config(config)
  if mixing is not None:
    return _build_mixing(config, inputs, mixing)
  variants = [get_variant(v) for v in config.variants]
  client_work = None
  settings = _plain_settings()
  for v in variants:
    if v.kind == CLIENT_WORK:
      client_work, extra = v.build(config, inputs)
      settings.update(extra, client_work=v.name)
    own = config.options.section(v.name)  # Its declared hyper-parameters.
    settings.update(dataclasses.asdict(own) if own is not None else {})
  process, algo_settings = get_algorithm(config.algorithm).build(
      config, inputs, client_work)
  settings.update(algo_settings)
  spec, sampler, extra = _sampling(config, inputs)
  settings.update(extra)
  settings.update(_identity(config, config.name, spec, inputs))
  return Method(config.name, process, spec, sampler, settings)


def _sampling(config: MethodConfig, inputs: MethodInputs):
  """The method's (spec, sampler, settings) over `inputs.client_ids`: the
  algorithm's spec and a uniform sampler, changed by the data-side variants
  (the one place both are built, with or without a mixing strategy)."""
  from federated_vision.algorithms import sampling  # pylint: disable=g-import-not-at-top
  spec = client_spec(config, inputs.seed)
  sampler = sampling.UniformSampler(inputs.client_ids,
                                    inputs.clients_per_round, inputs.seed)
  settings = {}
  for name in config.variants:
    v = get_variant(name)
    if v.kind == DATA_SIDE:
      spec, sampler, extra = v.build(config, inputs, spec, sampler)
      settings.update(extra, data_side=v.name)
  return spec, sampler, settings


def _plain_settings():
  """Settings of a method before its variants: plain client work and data."""
  return {"client_work": "plain", "data_side": "plain", "fedir_target": None,
          "fedprox_mu": None, "sampler": "uniform", "N_VC": None}


def _identity(config: MethodConfig, name: str, spec, inputs: MethodInputs):
  """The settings naming the method and its local data side."""
  return dict(name=name, algorithm=config.algorithm,
              variants=list(config.variants), E=spec.epochs,
              B=spec.batch_size, clients_per_round=inputs.clients_per_round)


def _build_mixing(config: MethodConfig, inputs: MethodInputs,
                  mixing: MixingRun) -> Method:
  """`build_method` with a mixing strategy, named '<method>+<strategy>'."""
  strategy = mixing_strategies.get_strategy(mixing.strategy)
  params = mixing_strategies.checked_params(
      mixing.strategy, mixing.settings, config.algorithm, config.variants)
  server, settings = get_algorithm(config.algorithm).server_optimizer(config)
  parts, variant_settings = {}, _plain_settings()
  for name in config.variants:
    v = get_variant(name)
    fields, extra = v.mixing(config, inputs)
    parts.update(fields)
    variant_settings.update(extra, **{v.kind: name})

  def sampling(fed_data):  # The spec and sampler over fed_data's clients.
    ids = fed_data.client_data.client_ids
    spec, sampler, _ = _sampling(config, inputs._replace(
        client_ids=ids, client_sizes=[fed_data.client_sizes[c] for c in ids]))
    return spec, sampler

  built = strategy.build(mixing.strategy, params, mixing_strategies.StrategyInputs(
      inputs=inputs, scenario=mixing.scenario,
      spec=client_spec(config, inputs.seed), client_optimizer=client_sgd(config),
      server_optimizer=server, sampling=sampling,
      variants=tuple(config.variants), **parts))
  name = f"{config.name}+{mixing.strategy}"
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
  one TFF client slot trains several clients in one graph call), if it can.

  The grouped process is built from the method's own components, as
  `build_method` builds them: the client SGD of `config`, its algorithm's
  server optimizer, FedIR's target. `client_group_size` joins its settings.

  Args:
    method: `build_method(config, inputs, mixing)`.
    config, inputs: what it was built from.
    group_size: `--client_group_size` ('auto' or an int).

  Returns:
    The method unchanged (group size 1, or 'auto' for a method the groups
    do not cover: FedProx, parallel training, gradient transfer) or with a
    `client_groups.GroupedMethod` as its process.

  Raises:
    ValueError: an explicit group size > 1 for a method not covered
      (`client_group_size.uncovered`; config validation refuses it first).
  """
  # Local: client_groups imports TensorFlow; this module must not (see above).
  from federated_vision.algorithms import client_groups  # pylint: disable=g-import-not-at-top
  s = method.settings
  size = client_groups.resolve_group_size(group_size, inputs.clients_per_round)
  # The one coverage rule (config validation refuses the same up front).
  uncovered = client_group_size.uncovered(config, s.get("mixing"))
  if size == 1 or uncovered is not None:
    if size > 1 and group_size != client_groups.AUTO:
      raise ValueError(uncovered)
    return method._replace(settings={**s, "client_group_size": 1})
  server, _ = method_builtins.server_optimizer(s["server_optimizer"] == "sgdm")(
      config)
  fedir = {}
  if s["client_work"] == "fedir":
    fedir = dict(fedir_num_classes=inputs.num_classes,
                 fedir_target=fedir_target(config, inputs),
                 fedir_label_counts=True)
  grouped = client_groups.GroupedMethod(
      inputs.model_fn, client_sgd(config), server, group_size=size,
      clients_per_round=inputs.clients_per_round, **fedir)
  return method._replace(process=grouped,
                         settings={**s, "client_group_size": size})


def client_spec(config: MethodConfig, seed: int = 0):
  """The method's local `client_data.TrainingSpec` before data-side variants
  (its algorithm's B, E; e.g. B = inf, E = 1 for fedsgd).

  Raises:
    ConfigError: see `validate_method_config`.
  """
  validate_method_config(config)
  return get_algorithm(config.algorithm).client_spec(config, seed)

