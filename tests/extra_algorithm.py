"""An algorithm with its own hyper-parameter, for --extra_modules (issue 27,
acceptance 1 (a)): one module, no package file touched.

`fedavg_clip`: FedAvg (McMahan et al. 2017, Algorithm 1) whose clients'
updates are each clipped to L2 norm --clip_norm before the weighted mean
(TFF's `tff.aggregators.clipping_factory`; ours: a test algorithm). Its
option becomes the --clip_norm flag; its server optimizer is any of
`@<optimizer>` (default sgd).
"""

import dataclasses

from federated_vision import config_fields
from federated_vision import methods


@dataclasses.dataclass(frozen=True)
class ClipOptions:
  """fedavg_clip's own hyper-parameter."""
  clip_norm: float = config_fields.option(
      1.0, "L2 norm every client's model delta is clipped to.",
      lower_bound=0.0)

  def validate(self) -> None:
    if not self.clip_norm > 0:
      from federated_vision.errors import bad  # pylint: disable=g-import-not-at-top
      raise bad("clip_norm", self.clip_norm, "must be a finite number > 0")


def _build(config, inputs, parts):
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
  aggregator = tff.aggregators.clipping_factory(
      config.clip_norm, tff.aggregators.MeanFactory())
  process = fedavg.build_fedavg(inputs.model_fn, parts.client_optimizer,
                                parts.server_optimizer,
                                client_work=parts.client_work,
                                model_aggregator=aggregator)
  return process, {"client_optimizer": "sgd",
                   "client_learning_rate": config.client_learning_rate}


methods.register(methods.Algorithm(
    name="fedavg_clip", build=_build, options=ClipOptions,
    reads=("client_epochs", "client_batch_size", "client_learning_rate"),
    citation="ours: a test algorithm (McMahan et al. 2017, Algorithm 1 with "
             "client updates clipped, TFF's clipping_factory)",
    summary="FedAvg with every client's update clipped to --clip_norm"))
