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
client). This module holds one builder per strategy (`build_none`,
`build_oracle`, `build_example_transfer`, `build_parallel`,
`build_gradient_transfer`), each registered as that strategy's `build` in
`federated_vision.mixing_strategies` and called by `methods.build_method`,
the one method builder, with the method's components already built there
(`mixing_strategies.StrategyInputs`: FedAvgM's server optimizer, FedIR's
client work, the sampler and spec of FedVC's virtual clients); a builder
only adds its data transform and process. `extra_broadcast_bytes` counts
what each strategy broadcasts beyond the model.

Reproducibility: the centralized data of round r depends only on (seed, r)
(see `mixing_parallel` and `mixing_gradient`), so a resumed run sees exactly
the batches of an uninterrupted one.
"""
from typing import Any, Dict, NamedTuple

import tensorflow_federated as tff

from federated_vision.algorithms import fedavg
from federated_vision.algorithms import mixing_data
from federated_vision.algorithms import mixing_gradient
from federated_vision.algorithms import mixing_parallel
from federated_vision.algorithms import mixing_payload
from federated_vision.data import client_data as client_data_lib
from federated_vision.data import mixing_scenarios
from federated_vision.methods import mixing as mixing_lib

NONE = "none"
PARALLEL = "parallel"
EXAMPLE_TRANSFER = "example_transfer"
GRADIENT_TRANSFER = "gradient_transfer"
ORACLE = "oracle"
STRATEGIES = (NONE, PARALLEL, EXAMPLE_TRANSFER, GRADIENT_TRANSFER, ORACLE)


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


def check_strategy(strategy: str) -> None:
  if strategy not in STRATEGIES:
    raise ValueError(f"mixing strategy must be one of {', '.join(STRATEGIES)}; "
                     f"got {strategy!r}")


# The strategies' hyper-parameters: the run's mixing settings (one config;
# the flags' names and defaults).
MixingConfig = mixing_lib.MixingSettings


class MixingMethod(NamedTuple):
  """Everything the training loop needs to run one strategy.

  Attributes:
    name: the strategy + the method's variants, e.g. 'parallel' or
      'gradient_transfer+fedvc'.
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


# --- one builder per strategy (`mixing_strategies.MixingStrategy.build`) -----
# Each gets (name, its validated hyper-parameters, `StrategyInputs`).

def build_none(name: str, params, parts) -> MixingMethod:
  """No mixing: FedAvg(M) on the federated data (the baseline)."""
  del params
  return _fedavg_on(name, NONE, parts.scenario.federated, parts)


def build_oracle(name: str, params, parts) -> MixingMethod:
  """The oracle: FedAvg(M) on `mixing_data.recombined_data`, every
  centralized example handed back to its client."""
  del params
  scenario = parts.scenario
  return _fedavg_on(name, ORACLE, mixing_data.recombined_data(
      scenario.federated, scenario.central), parts)


def build_example_transfer(name: str, params, parts) -> MixingMethod:
  """Example transfer (Augenstein et al., Algorithm 3): FedAvg(M) on each
  client's examples shuffled with M centralized ones
  (`mixing_data.example_transfer_data`)."""
  scenario = parts.scenario
  data = mixing_data.example_transfer_data(
      scenario.federated, scenario.central,
      params.central_examples_per_client, parts.spec.seed)
  return _fedavg_on(name, EXAMPLE_TRANSFER, data, parts,
                    examples_per_client=params.central_examples_per_client)


def build_parallel(name: str, params, parts) -> MixingMethod:
  """Parallel training (Augenstein et al., Algorithm 2,
  `mixing_parallel.build_parallel_training`)."""
  central_optimizer = None
  if params.central_learning_rate is not None:  # Validated: ParallelParams.
    central_optimizer = tff.learning.optimizers.build_sgdm(
        params.central_learning_rate)
  process = mixing_parallel.build_parallel_training(
      parts.inputs.model_fn, parts.client_optimizer, parts.scenario.central,
      merge_weight=params.merge_weight, central_steps=params.central_steps,
      central_batch_size=params.central_batch_size,
      central_optimizer=central_optimizer,
      server_optimizer=parts.server_optimizer, seed=parts.spec.seed,
      **_client_work(parts))
  return _method(name, PARALLEL, process, parts.scenario.federated, parts)


def build_gradient_transfer(name: str, params, parts) -> MixingMethod:
  """Gradient transfer (Augenstein et al., Algorithm 4,
  `mixing_gradient.build_gradient_transfer`); it replaces FedAvg's client
  work, so it refuses every client-work variant
  (`MixingStrategy.replaces_client_work`)."""
  process = mixing_gradient.build_gradient_transfer(
      parts.inputs.model_fn, parts.client_optimizer, parts.scenario.central,
      gradient_weight=params.gradient_weight,
      central_batch_size=params.central_batch_size,
      server_optimizer=parts.server_optimizer, seed=parts.spec.seed)
  return _method(name, GRADIENT_TRANSFER, process, parts.scenario.federated,
                 parts)


def _client_work(parts) -> Dict[str, Any]:
  """The method's client work (FedIR's) as a process builder's keyword."""
  return {} if parts.client_work is None else {"client_work": parts.client_work}


def _fedavg_on(name: str, strategy: str, data, parts,
               **bytes_kwargs) -> MixingMethod:
  """FedAvg's process (the method's server optimizer and client work) on
  the strategy's `data`."""
  process = fedavg.build_fedavg(parts.inputs.model_fn, parts.client_optimizer,
                                parts.server_optimizer, **_client_work(parts))
  return _method(name, strategy, process, data, parts, **bytes_kwargs)


def _method(name: str, strategy: str, process, data, parts,
            examples_per_client: int = 0) -> MixingMethod:
  """The `MixingMethod` of `strategy` (one of `STRATEGIES`, registered as
  `name`): the method's sampler and spec over the clients of `data`
  (`StrategyInputs.sampling`), its extra broadcast bytes and the settings it
  records."""
  spec, sampler = parts.sampling(data)
  central = parts.scenario.central
  extra = extra_broadcast_bytes(
      strategy, clients_per_round=parts.inputs.clients_per_round,
      examples_per_client=examples_per_client,
      bytes_per_example=mixing_scenarios.bytes_per_example(central.element_spec),
      model_bytes=mixing_payload.model_trainable_bytes(parts.inputs.model_fn))
  settings = {"strategy": name, "centralized": central.name,
              "centralized_examples": central.num_examples,
              "extra_broadcast_bytes_per_round": extra}
  return MixingMethod("+".join((name,) + tuple(parts.variants)), process, data,
                      spec, sampler, extra, settings)
