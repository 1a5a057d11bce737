"""The adaptive server optimizers (`@adagrad`, `@adam`, `@yogi`).

FedAdagrad, FedAdam, FedYogi of Reddi, Charles, Zaheer, Garrett, Rush,
Konecny, Kumar & McMahan 2021, "Adaptive Federated Optimization",
Algorithm 2, applied as every server optimizer is (`server_sgd`) to the
round's mean delta u, with Delta_t = -u, the mean of the clients' y - x
weighted by their examples, as every method here averages (Algorithm 2
writes the uniform 1/|S| sum; a method's own weighting applies):

    m_t = beta_1 m_{t-1} + (1 - beta_1) Delta_t
    v_t = v_{t-1} + Delta_t^2                                (Adagrad)
    v_t = beta_2 v_{t-1} + (1 - beta_2) Delta_t^2            (Adam)
    v_t = v_{t-1} - (1 - beta_2) Delta_t^2 sign(v_{t-1} - Delta_t^2) (Yogi)
    x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)

with m_{-1} = 0 and v_{-1} = tau^2 (Algorithm 2: "v_{-1} >= tau^2"; the
paper's experiments start at tau^2). TFF's `build_adam` / `build_yogi` are
not these: they add Adam's bias correction and start Yogi at 1e-6; TFF's
`build_adagrad` has no first moment. Their default eta_s is 0.01 (ours: the
issue's reading of Reddi et al. 2021's tuned server rates, "around 1e-2"
for FedAdam and FedYogi; 1 diverges on the default digits run), not the
SGD family's 1. Importing this module does not import TensorFlow.
"""

import collections
import dataclasses
import math

from federated_vision import config_fields
from federated_vision import methods
from federated_vision.algorithms.server_sgd import LEARNING_RATE, READS, zeros
from federated_vision.errors import bad

ADAGRAD, ADAM, YOGI = "adagrad", "adam", "yogi"
RULES = (ADAGRAD, ADAM, YOGI)
ADAPTIVE_LEARNING_RATE = 0.01


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
      (LEARNING_RATE, learning_rate), ("beta_1", beta_1), ("beta_2", beta_2),
      ("tau", tau)])

  class Adaptive(tff.learning.optimizers.Optimizer):
    """Reddi et al. 2021, Algorithm 2."""

    def initialize(self, specs):
      v0 = tf.nest.map_structure(
          lambda s: tf.fill(s.shape, tf.cast(tau * tau, s.dtype)), specs)
      return collections.OrderedDict(
          list(hparams.items()) + [("m", zeros(specs)), ("v", v0)])

    def next(self, state, weights, gradients):
      lr, b1, b2, t = (state[k] for k in (LEARNING_RATE, "beta_1", "beta_2", "tau"))

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


def _adaptive(rule: str):
  def build(config):
    return build_adaptive(
        rule, config.server_learning_rate, getattr(config, f"{rule}_beta_1"),
        getattr(config, f"{rule}_beta_2", 0.0), getattr(config, f"{rule}_tau"))
  return build


for _rule, _label in (("adagrad", "FedAdagrad"), ("adam", "FedAdam"),
                      ("yogi", "FedYogi")):
  methods.register(methods.ServerOptimizer(
      name=_rule, build=_adaptive(_rule), reads=READS,
      learning_rate=ADAPTIVE_LEARNING_RATE,
      options=_betas(_rule, beta_2=_rule != "adagrad"), label=_label,
      citation="Reddi et al. 2021, Adaptive Federated Optimization, "
               "Algorithm 2",
      summary=f"{_label}'s adaptive server optimizer"))
