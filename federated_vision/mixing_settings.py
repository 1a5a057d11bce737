"""The mixing settings of a run (the one mixing config) and the built-in
strategies' names and refused combinations.

Mixing federated and centralized data (Augenstein et al.): `MixingSettings`
holds the strategies a run trains and their flag-named hyper-parameters; each
strategy (`mixing_strategies`, the registry) reads the fields its own
hyper-parameter dataclass names. In a module of its own so that
`mixing_strategies` / `methods` and `algorithms.mixing` (the builders)
import it without importing each other (ours: no import cycle).
"""

import dataclasses
from typing import Optional, Tuple

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


# Built-in strategy -> ((variant, why they cannot be combined), ...): stated
# once for `mixing_strategies` (the registry) and `algorithms.mixing` (the
# builders), which cannot import each other.
REFUSED_VARIANTS = {
    "gradient_transfer": (("fedir", "FedIR: both replace FedAvg's client "
                                    "work"),),
    "example_transfer": (("fedvc", "FedVC: FedVC fixes each client's examples "
                                   "to N_VC, example transfer adds M to "
                                   "them"),),
}


def refusal(strategy: str, variant: str, why: Optional[str] = None) -> str:
  """The one-line refusal of a strategy x variant combination (`why`:
  default the built-in's reason)."""
  why = why or dict(REFUSED_VARIANTS.get(strategy, ())).get(variant)
  return (f"--mixing={strategy} and --{variant}: mixing strategy "
          f"{strategy!r} cannot be combined with {why}")
