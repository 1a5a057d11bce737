"""The built-in mixing strategies (Augenstein et al., *Jointly Learning from
Decentralized (Federated) and Centralized Data to Mitigate Distribution
Shift*): their hyper-parameters, refusals and builders
(`algorithms.mixing`, imported when a method is built).
"""

import dataclasses
import math
from typing import Optional

from federated_vision.errors import bad
from federated_vision.methods import mixing
from federated_vision.methods.mixing import MixingSettings


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
    # >= 0 as `mixing_gradient.build_gradient_transfer` requires (0 is
    # FedAvg).
    if not (math.isfinite(self.gradient_weight) and self.gradient_weight >= 0):
      raise bad("gradient_weight", self.gradient_weight,
                "must be a finite number >= 0")
    _at_least_one("central_batch_size", self.central_batch_size)


def _builder(function: str):
  """`algorithms.mixing.<function>`, imported when called (no TensorFlow at
  import)."""
  def build(name: str, params, strategy_inputs):
    from federated_vision.algorithms import mixing as mixing_lib  # pylint: disable=g-import-not-at-top
    return getattr(mixing_lib, function)(name, params, strategy_inputs)
  build.__name__ = build.__qualname__ = function
  return build


_PAPER = "Augenstein et al., Jointly Learning from Decentralized (Federated) " \
         "and Centralized Data to Mitigate Distribution Shift"
# ours: client groups train a strategy whose process is FedAvg's on the
# strategy's data (no mixing, the oracle, example transfer); parallel and
# gradient transfer change the round itself.
for _name, _params, _grouped, _replaces, _summary, _where in (
    ("none", mixing.NoParams(), True, False,
     "the federated clients alone (the baseline)",
     "Sec. 3, scenario i (pure FedAvg, Algorithm 1)"),
    ("parallel", ParallelParams(), False, False,
     "parallel training: FedAvg and K centralized steps merged with weight a",
     "Algorithm 2"),
    ("example_transfer", ExampleTransferParams(), True, False,
     "example transfer: M centralized examples sent to each client",
     "Algorithm 3"),
    ("gradient_transfer", GradientTransferParams(), False, True,
     "gradient transfer: clients add lambda times the centralized gradient",
     "Algorithm 4"),
    ("oracle", mixing.NoParams(), True, False,
     "the oracle: FedAvg on the recombined data (the upper baseline)",
     "Sec. 3, scenario v ('oracle' performance)")):
  mixing.register_mixing_strategy(mixing.MixingStrategy(
      name=_name, build=_builder(f"build_{_name}"), params=_params,
      grouped=_grouped, replaces_client_work=_replaces, summary=_summary,
      citation=f"{_PAPER}, {_where}"))
