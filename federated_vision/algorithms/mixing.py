"""Mixing federated and centralized data (Augenstein et al.): one entry point.

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews) modifies
FedAvg (their Algorithm 1) in three ways, all keeping client data on clients:

* parallel training (Algorithm 2, `mixing_parallel.build_parallel_training`):
  from w_t, one FedAvg round on the selected clients gives w_fed and K SGD
  steps on centralized batches give w_central;
  w_{t+1} = a w_fed + (1 - a) w_central.
* example transfer (Algorithm 3): each selected client trains FedAvg's client
  update on its own examples shuffled with M centralized ones. Only the data
  changes, so the process is FedAvg's (`fedavg.build_fedavg`) and the strategy
  is `mixing_data.example_transfer_data`.
* gradient transfer (Algorithm 4, `mixing_gradient.build_gradient_transfer`):
  the server computes g_c on one centralized batch at w_t and broadcasts it
  with the model; every local step uses g_k + lambda g_c.

Baselines: no mixing (FedAvg on the federated data) and the oracle (FedAvg on
`mixing_data.recombined_data`, every centralized example handed back to its
client). This module's job is choosing among them: `build_mixing_method`
builds any of the five, with FedAvgM's server optimizer, FedIR's client work
and FedVC's virtual clients where they make sense (see `check_combination`),
and `extra_broadcast_bytes` counts what each broadcasts beyond the model.
`build_strategy` is the entry the strategy registry
(`federated_vision.mixing_strategies`, used by `methods.build_method`) calls.

Reproducibility: the centralized data of round r depends only on (seed, r)
(see `mixing_parallel` and `mixing_gradient`), so a resumed run sees exactly
the batches of an uninterrupted one.
"""
import dataclasses
from typing import Any, Dict, NamedTuple, Optional, Sequence

import tensorflow_federated as tff

from federated_vision import mixing_settings
from federated_vision.algorithms import fedavg
from federated_vision.algorithms import fedir as fedir_lib
from federated_vision.algorithms import mixing_data
from federated_vision.algorithms import mixing_gradient
from federated_vision.algorithms import mixing_parallel
from federated_vision.algorithms import mixing_payload
from federated_vision.algorithms import mixing_steps
from federated_vision.algorithms import sampling
from federated_vision.data import client_data as client_data_lib
from federated_vision.data import mixing_scenarios

NONE = "none"
PARALLEL = "parallel"
EXAMPLE_TRANSFER = "example_transfer"
GRADIENT_TRANSFER = "gradient_transfer"
ORACLE = "oracle"
STRATEGIES = mixing_settings.MIXING_STRATEGIES
assert STRATEGIES == (NONE, PARALLEL, EXAMPLE_TRANSFER, GRADIENT_TRANSFER, ORACLE)


def extra_broadcast_bytes(strategy: str, *, clients_per_round: int,
                          examples_per_client: int = 0,
                          bytes_per_example: int = 0,
                          model_bytes: int = 0) -> int:
  """Bytes the server broadcasts per round beyond the model.

  example transfer: M x clients x bytes per example (each client gets its own
  M examples); gradient transfer: one model's trainable size (g_c, broadcast
  to all clients, counted once like the model); parallel training, no mixing
  and the oracle: 0. Clients never send anything extra.
  """
  check_strategy(strategy)
  if strategy == EXAMPLE_TRANSFER:
    return int(examples_per_client) * int(clients_per_round) * int(bytes_per_example)
  if strategy == GRADIENT_TRANSFER:
    return int(model_bytes)
  return 0


# --- one entry point --------------------------------------------------------

def check_strategy(strategy: str) -> None:
  if strategy not in STRATEGIES:
    raise ValueError(f"mixing strategy must be one of {', '.join(STRATEGIES)}; "
                     f"got {strategy!r}")


def check_combination(strategy: str, fedir: bool, fedvc: bool) -> None:
  """Refuses strategy x (FedIR, FedVC) combinations that have no single
  meaning (gradient transfer + FedIR, example transfer + FedVC; the rules are
  `mixing_settings.REFUSED_VARIANTS`, stated once)."""
  check_strategy(strategy)
  for variant, used in (("fedir", fedir), ("fedvc", fedvc)):
    if used and variant in dict(
        mixing_settings.REFUSED_VARIANTS.get(strategy, ())):
      raise ValueError(mixing_settings.refusal(strategy, variant))


# The strategies' hyper-parameters: the run's mixing settings (one config;
# the flags' names and defaults).
MixingConfig = mixing_settings.MixingSettings


class MixingMethod(NamedTuple):
  """Everything the training loop needs to run one strategy.

  Attributes:
    name: e.g. 'parallel' or 'gradient_transfer+fedvc'.
    process: the learning process.
    fed_data: the data the loop trains on (the oracle's recombined data,
      example transfer's mixed data, or the federated data unchanged).
    spec: client training spec (FedVC's N_VC set when used).
    sampler: has `round_keys(round_num)`.
    extra_broadcast_bytes: per round, beyond the model (`extra_broadcast_bytes`).
    settings: resolved settings for hparams/summary files (the strategy's
      hyper-parameters are added by `methods.build_method`).
  """
  name: str
  process: tff.learning.templates.LearningProcess
  fed_data: client_data_lib.FederatedDataset
  spec: client_data_lib.TrainingSpec
  sampler: Any
  extra_broadcast_bytes: int
  settings: Dict[str, object]


def build_mixing_method(
    strategy: str,
    *,
    fed_data: client_data_lib.FederatedDataset,
    central: mixing_data.CentralizedData,
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    spec: client_data_lib.TrainingSpec,
    clients_per_round: int,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    config: MixingConfig = MixingConfig(),
    fedir: bool = False,
    fedir_target_distribution: Optional[Sequence[float]] = None,
    virtual_client_size: Optional[int] = None,
) -> MixingMethod:
  """Builds one of the five strategies as (process, data, spec, sampler, bytes).

  Args:
    strategy: one of `STRATEGIES`.
    fed_data: the federated data (clients lacking what `central` covers).
    central: the server's examples.
    model_fn: TFF model builder over the batched {'x', 'y'} datasets of `spec`.
    client_optimizer: local optimizer.
    spec: client training spec; its seed is the run's seed (sampling of
      clients and of centralized examples).
    clients_per_round: clients (FedVC: virtual clients) per round.
    server_optimizer: SGD(1) when None; a momentum optimizer gives FedAvgM.
    config: the strategies' hyper-parameters.
    fedir: use FedIR's client work (Hsu, Qi & Brown 2020).
    fedir_target_distribution: FedIR's p(y); uniform when None.
    virtual_client_size: FedVC's N_VC (size-proportional sampling of
      virtual clients), or None.

  Returns:
    A `MixingMethod`.

  Raises:
    ValueError: unknown strategy, refused combination (`check_combination`)
      or invalid hyper-parameter (named).
  """
  check_combination(strategy, fedir, virtual_client_size is not None)
  mixing_steps.check_int("clients_per_round", clients_per_round, 1)
  seed = spec.seed
  data = fed_data
  if strategy == ORACLE:
    data = mixing_data.recombined_data(fed_data, central)
  elif strategy == EXAMPLE_TRANSFER:
    data = mixing_data.example_transfer_data(
        fed_data, central, config.central_examples_per_client, seed)

  fedavg_kwargs = {}
  if fedir:
    fedavg_kwargs["client_work"] = fedir_lib.build_fedir_client_work(
        model_fn, client_optimizer, data.num_classes, fedir_target_distribution)
  if strategy == PARALLEL:
    central_optimizer = None
    if config.central_learning_rate is not None:
      if not config.central_learning_rate > 0:
        raise ValueError("central_learning_rate must be > 0, got "
                         f"{config.central_learning_rate}")
      central_optimizer = tff.learning.optimizers.build_sgdm(
          config.central_learning_rate)
    process = mixing_parallel.build_parallel_training(
        model_fn, client_optimizer, central, merge_weight=config.merge_weight,
        central_steps=config.central_steps,
        central_batch_size=config.central_batch_size,
        central_optimizer=central_optimizer, server_optimizer=server_optimizer,
        seed=seed, **fedavg_kwargs)
  elif strategy == GRADIENT_TRANSFER:
    process = mixing_gradient.build_gradient_transfer(
        model_fn, client_optimizer, central,
        gradient_weight=config.gradient_weight,
        central_batch_size=config.central_batch_size,
        server_optimizer=server_optimizer, seed=seed)
  else:
    process = fedavg.build_fedavg(model_fn, client_optimizer, server_optimizer,
                                  **fedavg_kwargs)

  ids = data.client_data.client_ids
  if virtual_client_size is not None:
    spec = spec._replace(virtual_client_size=virtual_client_size)
    sampler = sampling.SizeProportionalSampler(
        ids, [data.client_sizes[c] for c in ids], clients_per_round, seed)
  else:
    sampler = sampling.UniformSampler(ids, clients_per_round, seed)
  extra = extra_broadcast_bytes(
      strategy, clients_per_round=clients_per_round,
      examples_per_client=config.central_examples_per_client,
      bytes_per_example=mixing_scenarios.bytes_per_example(central.element_spec),
      model_bytes=mixing_payload.model_trainable_bytes(model_fn))
  name = "+".join([strategy] + (["fedir"] if fedir else [])
                  + (["fedvc"] if virtual_client_size is not None else []))
  settings = {"strategy": strategy, "fedir": fedir,
              "virtual_client_size": virtual_client_size,
              "centralized": central.name,
              "centralized_examples": central.num_examples,
              "extra_broadcast_bytes_per_round": extra}
  return MixingMethod(name, process, data, spec, sampler, extra, settings)


def build_strategy(strategy: str, params, parts) -> MixingMethod:
  """A built-in strategy as `mixing_strategies` registers it: its
  hyper-parameter dataclass `params` (fields named as `MixingConfig`'s) and
  the method's other components, built (`mixing_strategies.StrategyInputs`).
  """
  return build_mixing_method(
      strategy, fed_data=parts.scenario.federated,
      central=parts.scenario.central, model_fn=parts.inputs.model_fn,
      client_optimizer=parts.client_optimizer, spec=parts.spec,
      clients_per_round=parts.inputs.clients_per_round,
      server_optimizer=parts.server_optimizer,
      config=MixingConfig(**dataclasses.asdict(params)), fedir=parts.fedir,
      fedir_target_distribution=parts.fedir_target_distribution,
      virtual_client_size=parts.virtual_client_size)
