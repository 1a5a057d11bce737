"""The SGD-family server optimizers (`@sgd`, `@sgdm`, `@nesterov`).

The server applies an optimizer to the round's aggregated model delta
(`tff.learning.templates.build_apply_optimizer_finalizer`): the mean delta
u = x - y (initial minus trained weights, a pseudo-gradient) plays the
gradient's part, w <- opt(w, u). Each reads --server_learning_rate (eta_s;
one method's own: `fedavg@sgdm:server_learning_rate=0.5`), whose default
is the optimizer's own (`ServerOptimizer.learning_rate`, 1 here):

* sgd: w <- w - eta_s u (McMahan et al. 2017, Algorithm 1: eta_s = 1 is
  plain averaging). FedAvg's default.
* sgdm: heavy-ball momentum v <- beta v + u; w <- w - eta_s v (Hsu, Qi &
  Brown 2019, Sec. 3: "v <- beta v + Delta w, w <- w - v"). FedAvgM's
  default.
* nesterov: Nesterov momentum in TensorFlow's
  `MomentumOptimizer(use_nesterov=True)` form: v <- beta v + u;
  w <- w - eta_s (u + beta v). (TFF's `build_sgdm` is heavy-ball only.)

They record the effective learning rate eta_s / (1 - beta) (Hsu et al.
2019; Hsu, Qi & Brown 2020, Appendix A). The adaptive optimizers are
`server_adaptive`. Importing this module does not import TensorFlow.
"""

import collections
import dataclasses
from typing import Dict

from federated_vision import config_fields
from federated_vision import methods
from federated_vision.errors import bad

LEARNING_RATE = "learning_rate"
READS = ("server_learning_rate",)


def zeros(specs):
  """Zeros shaped as `specs` (an optimizer's initial accumulators)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), specs)

def build_nesterov(learning_rate: float, momentum: float):
  """SGD with Nesterov momentum: v <- beta v + u; w <- w - eta (u + beta v)
  (a `tff.learning.optimizers.Optimizer`).

  Raises:
    ValueError: learning_rate <= 0 or momentum outside [0, 1).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  if not learning_rate > 0:
    raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
  if not 0 <= momentum < 1:
    raise ValueError(f"momentum must be in [0, 1), got {momentum}")

  class Nesterov(tff.learning.optimizers.Optimizer):
    """SGD with Nesterov momentum."""

    def initialize(self, specs):
      return collections.OrderedDict([(LEARNING_RATE, learning_rate),
                                      ("momentum", momentum),
                                      ("accumulator", zeros(specs))])

    def next(self, state, weights, gradients):
      lr, beta = state[LEARNING_RATE], state["momentum"]
      accumulator = tf.nest.map_structure(
          lambda a, g: tf.cast(beta, a.dtype) * a + g, state["accumulator"],
          gradients)
      weights = tf.nest.map_structure(
          lambda w, g, a: w - tf.cast(lr, w.dtype) * (
              g + tf.cast(beta, w.dtype) * a), weights, gradients,
          accumulator)
      return collections.OrderedDict([(LEARNING_RATE, lr), ("momentum", beta),
                                      ("accumulator", accumulator)]), weights

    def get_hparams(self, state):
      return collections.OrderedDict([(LEARNING_RATE, state[LEARNING_RATE]),
                                      ("momentum", state["momentum"])])

    def set_hparams(self, state, hparams):
      out = collections.OrderedDict(state)
      out.update(hparams)
      return out

  return Nesterov()


def momentum_settings(name: str, learning_rate: float,
                      momentum: float = 0.0) -> Dict[str, object]:
  """Recorded settings of an SGD-family server optimizer, with the effective
  learning rate eta_s / (1 - beta) (Hsu et al. 2019)."""
  return {"server_optimizer": name, "server_learning_rate": learning_rate,
          "server_momentum": momentum,
          "effective_server_learning_rate": learning_rate / (1.0 - momentum)}


@dataclasses.dataclass(frozen=True)
class MomentumOptions:
  """Server momentum of sgdm and nesterov."""
  server_momentum: float = config_fields.option(
      0.9, "Server momentum beta (Hsu et al. 2019's FedAvgM: 0.9).")

  def validate(self) -> None:
    if not 0 <= self.server_momentum < 1:
      raise bad("server_momentum", self.server_momentum, "must be in [0, 1)")

def _sgd(config):
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  return tff.learning.optimizers.build_sgdm(config.server_learning_rate)


def _sgdm(config):
  from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
  return fedavg.build_server_momentum_optimizer(config.server_learning_rate,
                                                config.server_momentum)


def _nesterov(config):
  return build_nesterov(config.server_learning_rate, config.server_momentum)


methods.register(methods.ServerOptimizer(
    name="sgd", build=_sgd, reads=READS, label="SGD",
    citation="McMahan et al. 2017, Algorithm 1 (server step w <- w - eta_s u)",
    summary="plain server SGD on the averaged update (eta_s = 1: averaging)",
    settings=lambda c: momentum_settings("sgd", c.server_learning_rate)))
methods.register(methods.ServerOptimizer(
    name="sgdm", build=_sgdm, reads=READS, options=MomentumOptions,
    label="heavy-ball momentum",
    citation="Hsu, Qi & Brown 2019, Sec. 3 (v <- beta v + Delta w; "
             "w <- w - v)",
    summary="server SGD with heavy-ball momentum (FedAvgM's)",
    settings=lambda c: momentum_settings("sgdm", c.server_learning_rate,
                                         c.server_momentum)))
methods.register(methods.ServerOptimizer(
    name="nesterov", build=_nesterov, reads=READS, options=MomentumOptions,
    label="Nesterov momentum",
    citation="Nesterov 1983; TensorFlow MomentumOptimizer(use_nesterov=True)",
    summary="server SGD with Nesterov momentum",
    settings=lambda c: momentum_settings("nesterov", c.server_learning_rate,
                                         c.server_momentum)))
