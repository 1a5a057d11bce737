"""The server optimizers (`@<name>` in a method name): maths and declarations.

The server applies an optimizer to the round's aggregated model delta
(`tff.learning.templates.build_apply_optimizer_finalizer`): the mean delta
u = x - y (initial minus trained weights, a pseudo-gradient) plays the
gradient's part, w <- opt(w, u). Each reads --server_learning_rate (eta_s;
one method's own: `fedavg@adam:server_learning_rate=0.01`), whose default
is the optimizer's own (`ServerOptimizer.learning_rate`), and declares its
own hyper-parameters:

* sgd: w <- w - eta_s u (McMahan et al. 2017, Algorithm 1: eta_s = 1 is
  plain averaging). FedAvg's default.
* sgdm: heavy-ball momentum v <- beta v + u; w <- w - eta_s v (Hsu, Qi &
  Brown 2019, Sec. 3: "v <- beta v + Delta w, w <- w - v"). FedAvgM's
  default.
* nesterov: Nesterov momentum in TensorFlow's
  `MomentumOptimizer(use_nesterov=True)` form: v <- beta v + u;
  w <- w - eta_s (u + beta v). (TFF's `build_sgdm` is heavy-ball only.)
* adagrad, adam, yogi: FedAdagrad, FedAdam, FedYogi of Reddi, Charles,
  Zaheer, Garrett, Rush, Konecny, Kumar & McMahan 2021, "Adaptive Federated
  Optimization", Algorithm 2, with Delta_t = -u, the mean of the clients'
  y - x weighted by their examples, as every method here averages
  (Algorithm 2 writes the uniform 1/|S| sum; a method's own weighting
  applies):
      m_t = beta_1 m_{t-1} + (1 - beta_1) Delta_t
      v_t = v_{t-1} + Delta_t^2                                (Adagrad)
      v_t = beta_2 v_{t-1} + (1 - beta_2) Delta_t^2            (Adam)
      v_t = v_{t-1} - (1 - beta_2) Delta_t^2 sign(v_{t-1} - Delta_t^2) (Yogi)
      x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)
  with m_{-1} = 0 and v_{-1} = tau^2 (Algorithm 2: "v_{-1} >= tau^2"; the
  paper's experiments start at tau^2). TFF's `build_adam` / `build_yogi`
  are not these: they add Adam's bias correction and start Yogi at 1e-6;
  TFF's `build_adagrad` has no first moment. Their default eta_s is 0.01
  (ours: the issue's reading of Reddi et al. 2021's tuned server rates,
  "around 1e-2" for FedAdam and FedYogi; 1 diverges on the default digits
  run), not the SGD family's 1.

The momentum optimizers record the effective learning rate
eta_s / (1 - beta) (Hsu et al. 2019; Hsu, Qi & Brown 2020, Appendix A).
Importing this module does not import TensorFlow.
"""

import collections
import dataclasses
import math
from typing import Dict

from federated_vision import config_fields
from federated_vision import methods
from federated_vision.errors import bad

ADAGRAD, ADAM, YOGI = "adagrad", "adam", "yogi"
RULES = (ADAGRAD, ADAM, YOGI)
_LR = "learning_rate"
_READS = ("server_learning_rate",)
ADAPTIVE_LEARNING_RATE = 0.01

def _zeros(specs):
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
      return collections.OrderedDict([(_LR, learning_rate),
                                      ("momentum", momentum),
                                      ("accumulator", _zeros(specs))])

    def next(self, state, weights, gradients):
      lr, beta = state[_LR], state["momentum"]
      accumulator = tf.nest.map_structure(
          lambda a, g: tf.cast(beta, a.dtype) * a + g, state["accumulator"],
          gradients)
      weights = tf.nest.map_structure(
          lambda w, g, a: w - tf.cast(lr, w.dtype) * (
              g + tf.cast(beta, w.dtype) * a), weights, gradients,
          accumulator)
      return collections.OrderedDict([(_LR, lr), ("momentum", beta),
                                      ("accumulator", accumulator)]), weights

    def get_hparams(self, state):
      return collections.OrderedDict([(_LR, state[_LR]),
                                      ("momentum", state["momentum"])])

    def set_hparams(self, state, hparams):
      out = collections.OrderedDict(state)
      out.update(hparams)
      return out

  return Nesterov()


def build_adaptive(rule: str, learning_rate: float, beta_1: float = 0.9,
                   beta_2: float = 0.99, tau: float = 1e-3):
  """FedAdagrad / FedAdam / FedYogi's server step (Reddi et al. 2021,
  Algorithm 2; `rule` one of `RULES`; beta_2 unused by Adagrad), a
  `tff.learning.optimizers.Optimizer`.

  Raises:
    ValueError: a bad rule or hyper-parameter.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  if rule not in RULES:
    raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
  if not learning_rate > 0:
    raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
  for name, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
    if not 0 <= beta < 1:
      raise ValueError(f"{name} must be in [0, 1), got {beta}")
  if not tau > 0:
    raise ValueError(f"tau must be > 0, got {tau}")
  hparams = collections.OrderedDict([
      (_LR, learning_rate), ("beta_1", beta_1), ("beta_2", beta_2),
      ("tau", tau)])

  class Adaptive(tff.learning.optimizers.Optimizer):
    """Reddi et al. 2021, Algorithm 2."""

    def initialize(self, specs):
      v0 = tf.nest.map_structure(
          lambda s: tf.fill(s.shape, tf.cast(tau * tau, s.dtype)), specs)
      return collections.OrderedDict(
          list(hparams.items()) + [("m", _zeros(specs)), ("v", v0)])

    def next(self, state, weights, gradients):
      lr, b1, b2, t = (state[k] for k in (_LR, "beta_1", "beta_2", "tau"))

      def update(w, m, v, u):
        cast = lambda x: tf.cast(x, w.dtype)
        delta = -u  # Algorithm 2's Delta_t: the mean of y - x.
        m = cast(b1) * m + (1.0 - cast(b1)) * delta
        square = tf.math.square(delta)
        if rule == ADAGRAD:
          v = v + square
        elif rule == ADAM:
          v = cast(b2) * v + (1.0 - cast(b2)) * square
        else:  # Yogi.
          v = v - (1.0 - cast(b2)) * square * tf.math.sign(v - square)
        return w + cast(lr) * m / (tf.math.sqrt(v) + cast(t)), m, v

      flat = [update(*x) for x in zip(tf.nest.flatten(weights),
                                      tf.nest.flatten(state["m"]),
                                      tf.nest.flatten(state["v"]),
                                      tf.nest.flatten(gradients))]
      pack = lambda i: tf.nest.pack_sequence_as(weights, [x[i] for x in flat])
      out = collections.OrderedDict(
          [(k, state[k]) for k in hparams] + [("m", pack(1)),
                                              ("v", pack(2))])
      return out, pack(0)

    def get_hparams(self, state):
      return collections.OrderedDict((k, state[k]) for k in hparams)

    def set_hparams(self, state, hparams_):
      out = collections.OrderedDict(state)
      out.update(hparams_)
      return out

  return Adaptive()


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


def _betas(prefix: str, beta_2: bool = True):
  """A Reddi et al. 2021 optimizer's own options (prefixed field names)."""
  fields = [(f"{prefix}_beta_1", float, config_fields.option(
      0.9, "first-moment decay beta_1 (Reddi et al. 2021, Algorithm 2; "
      "their experiments: 0.9).", lower_bound=0.0))]
  if beta_2:
    fields.append((f"{prefix}_beta_2", float, config_fields.option(
        0.99, "second-moment decay beta_2 (Reddi et al. 2021: 0.99).",
        lower_bound=0.0)))
  fields.append((f"{prefix}_tau", float, config_fields.option(
      1e-3, "adaptivity tau; v starts at tau^2 (Reddi et al. 2021, "
      "Algorithm 2; their grid: 1e-10 to 1).")))

  def validate(self):
    for f in dataclasses.fields(self):
      value = getattr(self, f.name)
      if f.name.endswith("_tau"):
        if not (value > 0 and math.isfinite(value)):
          raise bad(f.name, value, "must be a finite number > 0")
      elif not 0 <= value < 1:
        raise bad(f.name, value, "must be in [0, 1)")

  return dataclasses.make_dataclass(f"{prefix.capitalize()}Options", fields,
                                    namespace={"validate": validate},
                                    frozen=True)


def _sgd(config):
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  return tff.learning.optimizers.build_sgdm(config.server_learning_rate)


def _sgdm(config):
  from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
  return fedavg.build_server_momentum_optimizer(config.server_learning_rate,
                                                config.server_momentum)


def _nesterov(config):
  return build_nesterov(config.server_learning_rate, config.server_momentum)


def _adaptive(rule: str):
  def build(config):
    return build_adaptive(
        rule, config.server_learning_rate, getattr(config, f"{rule}_beta_1"),
        getattr(config, f"{rule}_beta_2", 0.0), getattr(config, f"{rule}_tau"))
  return build


methods.register(methods.ServerOptimizer(
    name="sgd", build=_sgd, reads=_READS, label="SGD",
    citation="McMahan et al. 2017, Algorithm 1 (server step w <- w - eta_s u)",
    summary="plain server SGD on the averaged update (eta_s = 1: averaging)",
    settings=lambda c: momentum_settings("sgd", c.server_learning_rate)))
methods.register(methods.ServerOptimizer(
    name="sgdm", build=_sgdm, reads=_READS, options=MomentumOptions,
    label="heavy-ball momentum",
    citation="Hsu, Qi & Brown 2019, Sec. 3 (v <- beta v + Delta w; "
             "w <- w - v)",
    summary="server SGD with heavy-ball momentum (FedAvgM's)",
    settings=lambda c: momentum_settings("sgdm", c.server_learning_rate,
                                         c.server_momentum)))
methods.register(methods.ServerOptimizer(
    name="nesterov", build=_nesterov, reads=_READS, options=MomentumOptions,
    label="Nesterov momentum",
    citation="Nesterov 1983; TensorFlow MomentumOptimizer(use_nesterov=True)",
    summary="server SGD with Nesterov momentum",
    settings=lambda c: momentum_settings("nesterov", c.server_learning_rate,
                                         c.server_momentum)))
for _rule, _label in (("adagrad", "FedAdagrad"), ("adam", "FedAdam"),
                      ("yogi", "FedYogi")):
  methods.register(methods.ServerOptimizer(
      name=_rule, build=_adaptive(_rule), reads=_READS,
      learning_rate=ADAPTIVE_LEARNING_RATE,
      options=_betas(_rule, beta_2=_rule != "adagrad"), label=_label,
      citation="Reddi et al. 2021, Adaptive Federated Optimization, "
               "Algorithm 2",
      summary=f"{_label}'s adaptive server optimizer"))
