"""A mixing-like strategy registered from --extra_modules (issue 17,
acceptance 4b): `--extra_modules=extra_mixing_strategy --mixing=parallel_shared`.

'parallel_shared' is parallel training (Augenstein et al., Algorithm 2:
w_{t+1} = a w_fed + (1 - a) w_central) built here from the library's parts
(`mixing_parallel.build_parallel_training`, a uniform sampler), with its own
hyper-parameter dataclass: the federated share a is `federated_share`, no
`MixingSettings` field (so no flag: it keeps the value registered here),
while `central_steps`, `central_batch_size` and `central_learning_rate` are
read from the run's flags like 'parallel' reads them. With
`federated_share == --merge_weight` it is 'parallel' exactly
(tests/test_extra_mixing_strategy.py checks the numbers).
"""

import dataclasses
from typing import Optional

from federated_vision.errors import bad
from federated_vision.mixing import strategy as mixing_strategies
from federated_vision.mixing import strategies as builtins

FEDERATED_SHARE = 0.25


@dataclasses.dataclass(frozen=True)
class SharedParams:
  """a (own), K, B_c and the centralized learning rate (flags)."""
  federated_share: float = FEDERATED_SHARE
  central_steps: int = 1
  central_batch_size: int = 32
  central_learning_rate: Optional[float] = None

  def validate(self) -> None:
    if not 0 <= self.federated_share <= 1:
      raise bad("federated_share", self.federated_share, "must be in [0, 1]")
    builtins.ParallelParams(
        self.federated_share, self.central_steps, self.central_batch_size,
        self.central_learning_rate).validate()


def _build(name, params, parts):
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision.mixing import strategy as mixing  # pylint: disable=g-import-not-at-top
  from federated_vision.mixing import parallel_training as mixing_parallel  # pylint: disable=g-import-not-at-top
  from federated_vision.learning import sampling  # pylint: disable=g-import-not-at-top
  fed, central = parts.scenario.federated, parts.scenario.central
  central_optimizer = (
      None if params.central_learning_rate is None else
      tff.learning.optimizers.build_sgdm(params.central_learning_rate))
  process = mixing_parallel.build_parallel_training(
      parts.inputs.model_fn, parts.client_optimizer, central,
      merge_weight=params.federated_share, central_steps=params.central_steps,
      central_batch_size=params.central_batch_size,
      central_optimizer=central_optimizer,
      server_optimizer=parts.server_optimizer, seed=parts.spec.seed)
  sampler = sampling.UniformSampler(fed.client_data.client_ids,
                                    parts.inputs.clients_per_round,
                                    parts.spec.seed)
  return mixing.MixingMethod(name, process, fed, parts.spec, sampler, 0,
                             {"centralized": central.name, "own_builder": True})


mixing_strategies.register_mixing_strategy(mixing_strategies.MixingStrategy(
    name="parallel_shared", build=_build, params=SharedParams(),
    citation="Augenstein et al., Algorithm 2 (a test strategy)",
    refuses=(("fedir", "FedIR: this test strategy builds FedAvg's client "
                       "work only"),
             ("fedvc", "FedVC: this test strategy samples clients "
                       "uniformly"))))
