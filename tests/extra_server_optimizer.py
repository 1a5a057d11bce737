"""A server optimizer with its own flags, for --extra_modules (issue 27,
acceptance 1 (c)): one module, no package file touched.

`clipped_sgd`: server SGD whose step is the averaged update scaled down to
global L2 norm at most --server_clip_norm, times --server_learning_rate
(ours: a test optimizer; with a large norm it is plain `sgd`). A method
uses it as `<algorithm>@clipped_sgd`.
"""

import collections
import dataclasses

from federated_vision import config_fields
from federated_vision import methods


@dataclasses.dataclass(frozen=True)
class ServerClipOptions:
  """clipped_sgd's own hyper-parameter."""
  server_clip_norm: float = config_fields.option(
      10.0, "largest global L2 norm of the server's step (before the "
      "learning rate).", lower_bound=0.0)

  def validate(self) -> None:
    if not self.server_clip_norm > 0:
      from federated_vision.errors import bad  # pylint: disable=g-import-not-at-top
      raise bad("server_clip_norm", self.server_clip_norm,
                "must be a finite number > 0")


def _build(config):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top

  class ClippedSGD(tff.learning.optimizers.Optimizer):
    """w <- w - lr * clip_by_global_norm(u, c)."""

    def initialize(self, specs):
      del specs
      return collections.OrderedDict(
          learning_rate=config.server_learning_rate,
          clip_norm=config.server_clip_norm)

    def next(self, state, weights, gradients):
      clipped, _ = tf.clip_by_global_norm(tf.nest.flatten(gradients),
                                          state["clip_norm"])
      clipped = tf.nest.pack_sequence_as(gradients, clipped)
      return state, tf.nest.map_structure(
          lambda w, g: w - state["learning_rate"] * g, weights, clipped)

    def get_hparams(self, state):
      return collections.OrderedDict(state)

    def set_hparams(self, state, hparams):
      return collections.OrderedDict(hparams)

  return ClippedSGD()


methods.register(methods.ServerOptimizer(
    name="clipped_sgd", build=_build, options=ServerClipOptions,
    reads=("server_learning_rate",),
    citation="ours: a test server optimizer (SGD on the update clipped by "
             "global norm)",
    summary="server SGD with the step's global norm clipped"))
