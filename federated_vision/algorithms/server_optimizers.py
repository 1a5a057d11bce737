"""Server optimizers TFF 0.87 does not have: Nesterov momentum and the
adaptive optimizers exactly as Reddi et al. 2021 define them.

The server applies an optimizer to the round's aggregated model delta
(`tff.learning.templates.build_apply_optimizer_finalizer`): the mean delta
u = x - y (initial minus trained weights, a pseudo-gradient) plays the
gradient's part, w <- opt(w, u).

* `build_nesterov`: SGD with Nesterov momentum in TensorFlow's
  `MomentumOptimizer(use_nesterov=True)` form: v <- beta v + u;
  w <- w - eta (u + beta v). (TFF's `build_sgdm` is heavy-ball only:
  v <- beta v + u; w <- w - eta v, Hsu et al. 2019's FedAvgM.)
* `build_adaptive(rule, ...)`: FedAdagrad, FedAdam, FedYogi of Reddi,
  Charles, Zaheer, Garrett, Rush, Konecny, Kumar & McMahan 2021, "Adaptive
  Federated Optimization", Algorithm 2, with Delta_t = -u (the mean of the
  clients' y - x):
      m_t = beta_1 m_{t-1} + (1 - beta_1) Delta_t
      v_t = v_{t-1} + Delta_t^2                                (Adagrad)
      v_t = beta_2 v_{t-1} + (1 - beta_2) Delta_t^2            (Adam)
      v_t = v_{t-1} - (1 - beta_2) Delta_t^2 sign(v_{t-1} - Delta_t^2) (Yogi)
      x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)
  with m_{-1} = 0 and v_{-1} = tau^2 (Algorithm 2: "v_{-1} >= tau^2"; the
  paper's experiments start at tau^2). TFF's `build_adam` / `build_yogi`
  are not these: they add Adam's bias correction (the learning rate times
  sqrt(1 - beta_2^t) / (1 - beta_1^t)) and start Yogi at 1e-6, so they do
  not match Algorithm 2; TFF's `build_adagrad` has no first moment.

Each is a `tff.learning.optimizers.Optimizer`, usable wherever TFF's are
(the finalizer, mixing strategies' server side, SCAFFOLD's server).
"""

import collections

import tensorflow as tf
import tensorflow_federated as tff

ADAGRAD, ADAM, YOGI = "adagrad", "adam", "yogi"
RULES = (ADAGRAD, ADAM, YOGI)
_LR = "learning_rate"


def _zeros(specs):
  return tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), specs)


class _Nesterov(tff.learning.optimizers.Optimizer):
  """SGD with Nesterov momentum (see `build_nesterov`)."""

  def __init__(self, learning_rate: float, momentum: float):
    self._lr, self._momentum = learning_rate, momentum

  def initialize(self, specs):
    return collections.OrderedDict([(_LR, self._lr),
                                    ("momentum", self._momentum),
                                    ("accumulator", _zeros(specs))])

  def next(self, state, weights, gradients):
    lr, beta = state[_LR], state["momentum"]
    accumulator = tf.nest.map_structure(
        lambda a, g: tf.cast(beta, a.dtype) * a + g, state["accumulator"],
        gradients)
    weights = tf.nest.map_structure(
        lambda w, g, a: w - tf.cast(lr, w.dtype) * (
            g + tf.cast(beta, w.dtype) * a), weights, gradients, accumulator)
    return collections.OrderedDict([(_LR, lr), ("momentum", beta),
                                    ("accumulator", accumulator)]), weights

  def get_hparams(self, state):
    return collections.OrderedDict([(_LR, state[_LR]),
                                    ("momentum", state["momentum"])])

  def set_hparams(self, state, hparams):
    out = collections.OrderedDict(state)
    out.update(hparams)
    return out


def build_nesterov(learning_rate: float, momentum: float
                   ) -> tff.learning.optimizers.Optimizer:
  """SGD with Nesterov momentum: v <- beta v + u; w <- w - eta (u + beta v).

  Raises:
    ValueError: learning_rate <= 0 or momentum outside [0, 1).
  """
  if not learning_rate > 0:
    raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
  if not 0 <= momentum < 1:
    raise ValueError(f"momentum must be in [0, 1), got {momentum}")
  return _Nesterov(learning_rate, momentum)


class _Adaptive(tff.learning.optimizers.Optimizer):
  """Reddi et al. 2021, Algorithm 2 (see `build_adaptive`)."""

  def __init__(self, rule, learning_rate, beta_1, beta_2, tau):
    self._rule = rule
    self._hparams = collections.OrderedDict([
        (_LR, learning_rate), ("beta_1", beta_1), ("beta_2", beta_2),
        ("tau", tau)])

  def initialize(self, specs):
    tau = self._hparams["tau"]
    v0 = tf.nest.map_structure(
        lambda s: tf.fill(s.shape, tf.cast(tau * tau, s.dtype)), specs)
    return collections.OrderedDict(
        list(self._hparams.items()) + [("m", _zeros(specs)), ("v", v0)])

  def next(self, state, weights, gradients):
    lr, b1, b2, tau = (state[k] for k in (_LR, "beta_1", "beta_2", "tau"))

    def update(w, m, v, u):
      cast = lambda x: tf.cast(x, w.dtype)
      delta = -u  # Algorithm 2's Delta_t: the mean of y - x.
      m = cast(b1) * m + (1.0 - cast(b1)) * delta
      square = tf.math.square(delta)
      if self._rule == ADAGRAD:
        v = v + square
      elif self._rule == ADAM:
        v = cast(b2) * v + (1.0 - cast(b2)) * square
      else:  # Yogi.
        v = v - (1.0 - cast(b2)) * square * tf.math.sign(v - square)
      return w + cast(lr) * m / (tf.math.sqrt(v) + cast(tau)), m, v

    flat = [update(*t) for t in zip(tf.nest.flatten(weights),
                                    tf.nest.flatten(state["m"]),
                                    tf.nest.flatten(state["v"]),
                                    tf.nest.flatten(gradients))]
    pack = lambda i: tf.nest.pack_sequence_as(weights, [t[i] for t in flat])
    out = collections.OrderedDict(
        [(k, state[k]) for k in self._hparams] + [("m", pack(1)),
                                                  ("v", pack(2))])
    return out, pack(0)

  def get_hparams(self, state):
    return collections.OrderedDict((k, state[k]) for k in self._hparams)

  def set_hparams(self, state, hparams):
    out = collections.OrderedDict(state)
    out.update(hparams)
    return out


def build_adaptive(rule: str, learning_rate: float, beta_1: float = 0.9,
                   beta_2: float = 0.99, tau: float = 1e-3
                   ) -> tff.learning.optimizers.Optimizer:
  """FedAdagrad / FedAdam / FedYogi's server step (Reddi et al. 2021,
  Algorithm 2; `rule` one of `RULES`; beta_2 unused by Adagrad).

  Raises:
    ValueError: a bad rule or hyper-parameter.
  """
  if rule not in RULES:
    raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
  if not learning_rate > 0:
    raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
  for name, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
    if not 0 <= beta < 1:
      raise ValueError(f"{name} must be in [0, 1), got {beta}")
  if not tau > 0:
    raise ValueError(f"tau must be > 0, got {tau}")
  return _Adaptive(rule, learning_rate, beta_1, beta_2, tau)
