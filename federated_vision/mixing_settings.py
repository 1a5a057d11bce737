"""Which mixing strategies a run trains, their settings, and what composes.

Mixing federated and centralized data (Augenstein et al.): the strategies,
their flag-named hyper-parameters and the combination rules, in a module of
their own so that both `methods` (validation, the method builder) and
`algorithms.mixing` (the strategies) import them without importing each
other (ours: breaks the methods <-> algorithms.mixing import cycle).
"""

import dataclasses
from typing import Optional, Sequence, Tuple

from federated_vision.errors import ConfigError

MIXING_STRATEGIES = ("none", "parallel", "example_transfer",
                     "gradient_transfer", "oracle")


@dataclasses.dataclass(frozen=True)
class MixingSettings:
  """The mixing strategies to run and their hyper-parameters (flag names).

  Attributes:
    mixing: strategies run side by side (`MIXING_STRATEGIES`); () = no
      mixing scenario, the methods run on the task's plain data.
    merge_weight: parallel training's a in [0, 1] (Algorithm 2).
    central_steps: parallel training's K centralized SGD steps per round.
    central_batch_size: centralized batch size (parallel, gradient transfer).
    central_learning_rate: SGD learning rate of the K centralized steps; None
      = --client_learning_rate.
    central_examples_per_client: example transfer's M (Algorithm 3).
    gradient_weight: gradient transfer's lambda (Algorithm 4).
    missing_classes: e.g. '8,9': classes the clients lose to the server
      (tasks whose scenario lets you choose; None = the task's default).
  """
  mixing: Tuple[str, ...] = ()
  merge_weight: float = 0.5
  central_steps: int = 1
  central_batch_size: int = 32
  central_learning_rate: Optional[float] = None
  central_examples_per_client: int = 10
  gradient_weight: float = 1.0
  missing_classes: Optional[str] = None


def check_mixing_combination(strategy: str, algorithm: str = "fedavg",
                             variants: Sequence[str] = ()) -> None:
  """Refuses a strategy x algorithm / variant combination with no single
  meaning (ConfigError, a ValueError, naming both flags).

  * any strategy + fedsgd or fedprox: the strategies compose FedAvg's and
    FedAvgM's server optimizers and FedIR's client work only.
  * gradient transfer + FedIR: both replace FedAvg's client work.
  * example transfer + FedVC: FedVC fixes what a client trains on to N_VC
    examples while example transfer adds M per client.
  Everything else composes: FedIR's client work runs on whatever data the
  strategy gives the client (its q_k then counts transferred examples), FedVC
  resamples the strategy's client data, FedAvgM's server optimizer works with
  all five.
  """
  if strategy not in MIXING_STRATEGIES:
    raise ConfigError(f"mixing strategy must be one of "
                      f"{', '.join(MIXING_STRATEGIES)}; got {strategy!r}",
                      "mixing")
  if algorithm not in ("fedavg", "fedavgm"):
    raise ConfigError(f"--mixing={strategy} and --algorithm={algorithm}: the "
                      "mixing strategies compose fedavg and fedavgm only",
                      "algorithm")
  if "fedprox" in variants:
    raise ConfigError(f"--mixing={strategy} and --fedprox: the mixing "
                      "strategies compose FedIR's client work only", "fedprox")
  if "fedir" in variants and strategy == "gradient_transfer":
    raise ConfigError("--mixing=gradient_transfer and --fedir: mixing strategy "
                      "'gradient_transfer' cannot be combined with FedIR: both "
                      "replace FedAvg's client work", "fedir")
  if "fedvc" in variants and strategy == "example_transfer":
    raise ConfigError("--mixing=example_transfer and --fedvc: mixing strategy "
                      "'example_transfer' cannot be combined with FedVC: FedVC "
                      "fixes each client's examples to N_VC, example transfer "
                      "adds M to them", "fedvc")
