"""A client-work variant with its own hyper-parameter, for --extra_modules.

Issue 17, acceptance check 4 (a). `scaled`: FedAvg's model-delta client work
(McMahan et al. 2017, Algorithm 1, as `algorithms.fedavg.build_fedavg`
builds it by default) whose update is multiplied by --update_scale (ours: a
test variant; 1.0 is plain FedAvg exactly). The variant declares its
hyper-parameter as a config section (`federated_vision.config_fields`); the
binaries generate the --update_scale flag from it when this module is passed
with --extra_modules=extra_client_variant (tests/ on PYTHONPATH).
"""

import dataclasses
import math

from federated_vision import config_fields
from federated_vision import methods
from federated_vision.errors import bad

NAME = "scaled"


@dataclasses.dataclass(frozen=True)
class UpdateScaleOptions:
  """The `scaled` variant's own hyper-parameter.

  Attributes:
    update_scale: factor of every client's model delta (ours: test variant).
  """
  update_scale: float = config_fields.option(
      1.0, "multiplies every client's model delta (1 = plain client work).")

  def validate(self) -> None:
    if not (self.update_scale > 0 and math.isfinite(self.update_scale)):
      raise bad("update_scale", self.update_scale,
                "must be a finite number > 0")


def _scaled(config, inputs):
  """`(client work, settings)`: the model-delta client work, update x s."""
  # TF / TFF only when a method is built (the module is imported at parsing).
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
  scale = config.options.section(NAME).update_scale
  work = tff.learning.templates.build_model_delta_client_work(
      model_fn=inputs.model_fn,
      optimizer=tff.learning.optimizers.build_sgdm(config.client_learning_rate),
      client_weighting=tff.learning.ClientWeighting.NUM_EXAMPLES,
      loop_implementation=local.DEFAULT_LOOP)
  param_types = work.next.type_signature.parameter
  result_type = work.next.type_signature.result.result.member

  @tff.tensorflow.computation(result_type)
  def scale_update(result):
    update = tf.nest.map_structure(lambda u: u * scale, result.update)
    return tff.learning.templates.ClientResult(
        update=update, update_weight=result.update_weight)

  @tff.federated_computation(*list(param_types))
  def next_fn(state, weights, data):
    out = work.next(state, weights, data)
    return tff.templates.MeasuredProcessOutput(
        out.state, tff.federated_map(scale_update, out.result),
        out.measurements)

  return tff.learning.templates.ClientWorkProcess(
      work.initialize, next_fn, get_hparams_fn=work.get_hparams,
      set_hparams_fn=work.set_hparams), {}


methods.register(methods.ClientWork(
    name=NAME, build=_scaled, options=UpdateScaleOptions,
    reads=("client_learning_rate",),
    citation="ours: a test variant (McMahan et al. 2017's client update, "
             "scaled)",
    summary="FedAvg's model-delta client work, update x --update_scale"))
