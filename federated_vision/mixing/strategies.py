"""The mixing strategies of Augenstein et al.: maths, builders, declarations.

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews) modifies
FedAvg (their Algorithm 1) in three ways, all keeping client data on clients:

* parallel training (Algorithm 2, `parallel_training.build_parallel_training`):
  from w_t, one FedAvg round on the selected clients gives w_fed and K SGD
  steps on centralized batches give w_central;
  w_{t+1} = a w_fed + (1 - a) w_central.
* example transfer (Algorithm 3): each selected client trains FedAvg's client
  update on its own examples shuffled with M centralized ones. Only the data
  change, so the process is FedAvg's and the strategy is
  `central_data.example_transfer_data`.
* gradient transfer (Algorithm 4, `gradient_transfer.build_gradient_transfer`):
  the server computes g_c on one centralized batch at w_t and broadcasts it
  with the model; every local step uses g_k + lambda g_c.

Baselines: no mixing (FedAvg on the federated data) and the oracle (FedAvg on
`central_data.recombined_data`, every centralized example handed back to its
client). One builder per strategy (`build_none`, `build_oracle`,
`build_example_transfer`, `build_parallel`, `build_gradient_transfer`), each
registered as that strategy's `build` and called by `methods.build_method`,
the one method builder, with the method's components already built there
(`strategy.StrategyInputs`: FedAvgM's server optimizer, FedIR's client work,
the sampler and spec of FedVC's virtual clients); a builder only adds its
data transform and process. `extra_broadcast_bytes` counts what each
strategy broadcasts beyond the model.

Reproducibility: the centralized data of round r depend only on (seed, r)
(see `parallel_training` and `gradient_transfer`), so a resumed run sees
exactly the batches of an uninterrupted one. Importing this module does not
import TensorFlow.
"""

import dataclasses
import math
from typing import Any, Dict, Optional

from federated_vision.errors import bad
from federated_vision.methods import components as comp
from federated_vision.mixing import strategy as mixing
from federated_vision.mixing.strategy import MixingMethod, MixingSettings

NONE = "none"
PARALLEL = "parallel"
EXAMPLE_TRANSFER = "example_transfer"
GRADIENT_TRANSFER = "gradient_transfer"
ORACLE = "oracle"
STRATEGIES = (NONE, PARALLEL, EXAMPLE_TRANSFER, GRADIENT_TRANSFER, ORACLE)


def _at_least_one(name: str, value: int) -> None:
  if value < 1:
    raise bad(name, value, "must be >= 1")


@dataclasses.dataclass(frozen=True)
class ParallelParams:
  """Parallel training (Augenstein et al., Algorithm 2): a, K, B_c and the
  learning rate of the K centralized steps (None: the client's)."""
  merge_weight: float = MixingSettings.merge_weight
  central_steps: int = MixingSettings.central_steps
  central_batch_size: int = MixingSettings.central_batch_size
  central_learning_rate: Optional[float] = MixingSettings.central_learning_rate

  def validate(self) -> None:
    if not 0 <= self.merge_weight <= 1:
      raise bad("merge_weight", self.merge_weight, "must be in [0, 1]")
    _at_least_one("central_steps", self.central_steps)
    _at_least_one("central_batch_size", self.central_batch_size)
    if self.central_learning_rate is not None and not (
        self.central_learning_rate > 0
        and math.isfinite(self.central_learning_rate)):
      raise bad("central_learning_rate", self.central_learning_rate,
                "must be a finite number > 0")


@dataclasses.dataclass(frozen=True)
class ExampleTransferParams:
  """Example transfer (Augenstein et al., Algorithm 3): M examples sent to
  each selected client per round."""
  central_examples_per_client: int = MixingSettings.central_examples_per_client

  def validate(self) -> None:
    if self.central_examples_per_client < 0:
      raise bad("central_examples_per_client",
                self.central_examples_per_client, "must be >= 0")


@dataclasses.dataclass(frozen=True)
class GradientTransferParams:
  """Gradient transfer (Augenstein et al., Algorithm 4): lambda and B_c."""
  gradient_weight: float = MixingSettings.gradient_weight
  central_batch_size: int = MixingSettings.central_batch_size

  def validate(self) -> None:
    # >= 0 as `gradient_transfer.build_gradient_transfer` requires (0 is
    # FedAvg).
    if not (math.isfinite(self.gradient_weight) and self.gradient_weight >= 0):
      raise bad("gradient_weight", self.gradient_weight,
                "must be a finite number >= 0")
    _at_least_one("central_batch_size", self.central_batch_size)


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


# --- one builder per strategy (`MixingStrategy.build`) ----------------------
# Each gets (name, its validated hyper-parameters, `StrategyInputs`).

def build_none(name: str, params, parts) -> MixingMethod:
  """No mixing: FedAvg(M) on the federated data (the baseline)."""
  del params
  return _fedavg_on(name, NONE, parts.scenario.federated, parts)


def build_oracle(name: str, params, parts) -> MixingMethod:
  """The oracle: FedAvg(M) on `central_data.recombined_data`, every
  centralized example handed back to its client."""
  from federated_vision.mixing import central_data  # pylint: disable=g-import-not-at-top
  del params
  scenario = parts.scenario
  return _fedavg_on(name, ORACLE, central_data.recombined_data(
      scenario.federated, scenario.central), parts)


def build_example_transfer(name: str, params, parts) -> MixingMethod:
  """Example transfer (Augenstein et al., Algorithm 3): FedAvg(M) on each
  client's examples shuffled with M centralized ones
  (`central_data.example_transfer_data`)."""
  from federated_vision.mixing import central_data  # pylint: disable=g-import-not-at-top
  scenario = parts.scenario
  data = central_data.example_transfer_data(
      scenario.federated, scenario.central,
      params.central_examples_per_client, parts.spec.seed)
  return _fedavg_on(name, EXAMPLE_TRANSFER, data, parts,
                    examples_per_client=params.central_examples_per_client)


def build_parallel(name: str, params, parts) -> MixingMethod:
  """Parallel training (Augenstein et al., Algorithm 2,
  `parallel_training.build_parallel_training`)."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision.mixing import parallel_training  # pylint: disable=g-import-not-at-top
  central_optimizer = None
  if params.central_learning_rate is not None:  # Validated: ParallelParams.
    central_optimizer = tff.learning.optimizers.build_sgdm(
        params.central_learning_rate)
  process = parallel_training.build_parallel_training(
      parts.inputs.model_fn, parts.client_optimizer, parts.scenario.central,
      merge_weight=params.merge_weight, central_steps=params.central_steps,
      central_batch_size=params.central_batch_size,
      central_optimizer=central_optimizer,
      server_optimizer=parts.server_optimizer, seed=parts.spec.seed,
      **_client_work(parts))
  return _method(name, PARALLEL, process, parts.scenario.federated, parts)


def build_gradient_transfer(name: str, params, parts) -> MixingMethod:
  """Gradient transfer (Augenstein et al., Algorithm 4,
  `gradient_transfer.build_gradient_transfer`); it replaces FedAvg's client
  work, so it refuses every client-work variant."""
  from federated_vision.mixing import gradient_transfer  # pylint: disable=g-import-not-at-top
  process = gradient_transfer.build_gradient_transfer(
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
  from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
  process = fedavg.build_fedavg(parts.inputs.model_fn, parts.client_optimizer,
                                parts.server_optimizer, **_client_work(parts))
  return _method(name, strategy, process, data, parts, **bytes_kwargs)


def _method(name: str, strategy: str, process, data, parts,
            examples_per_client: int = 0) -> MixingMethod:
  """The `MixingMethod` of `strategy` (one of `STRATEGIES`, registered as
  `name`): the method's sampler and spec over the clients of `data`
  (`StrategyInputs.sampling`), its extra broadcast bytes and the settings it
  records."""
  from federated_vision.mixing import payload  # pylint: disable=g-import-not-at-top
  from federated_vision.mixing import scenarios  # pylint: disable=g-import-not-at-top
  spec, sampler = parts.sampling(data)
  central = parts.scenario.central
  extra = extra_broadcast_bytes(
      strategy, clients_per_round=parts.inputs.clients_per_round,
      examples_per_client=examples_per_client,
      bytes_per_example=scenarios.bytes_per_example(central.element_spec),
      model_bytes=payload.model_trainable_bytes(parts.inputs.model_fn))
  settings = {"strategy": name, "centralized": central.name,
              "centralized_examples": central.num_examples,
              "extra_broadcast_bytes_per_round": extra}
  return MixingMethod("+".join((name,) + tuple(parts.variants)), process, data,
                      spec, sampler, extra, settings)


_PAPER = "Augenstein et al., Jointly Learning from Decentralized (Federated) " \
         "and Centralized Data to Mitigate Distribution Shift"
# ours: client groups train a strategy whose process is FedAvg's on the
# strategy's data (no mixing, the oracle, example transfer); parallel and
# gradient transfer change the round itself.
_REPLACES = ((comp.CLIENT_WORK, "both replace FedAvg's client work"),)
for _name, _params, _build, _grouped, _refuses, _summary, _where in (
    (NONE, mixing.NoParams(), build_none, True, (),
     "the federated clients alone (the baseline)",
     "Sec. 3, scenario i (pure FedAvg, Algorithm 1)"),
    (PARALLEL, ParallelParams(), build_parallel, False, (),
     "parallel training: FedAvg and K centralized steps merged with weight a",
     "Algorithm 2"),
    (EXAMPLE_TRANSFER, ExampleTransferParams(), build_example_transfer, True,
     (), "example transfer: M centralized examples sent to each client",
     "Algorithm 3"),
    (GRADIENT_TRANSFER, GradientTransferParams(), build_gradient_transfer,
     False, _REPLACES,
     "gradient transfer: clients add lambda times the centralized gradient",
     "Algorithm 4"),
    (ORACLE, mixing.NoParams(), build_oracle, True, (),
     "the oracle: FedAvg on the recombined data (the upper baseline)",
     "Sec. 3, scenario v ('oracle' performance)")):
  mixing.register_mixing_strategy(mixing.MixingStrategy(
      name=_name, build=_build, params=_params, grouped=_grouped,
      refuses=_refuses, summary=_summary, citation=f"{_PAPER}, {_where}"))
