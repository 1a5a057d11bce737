"""The built-in server optimizers (`@<name>` in a method name).

Each reads the shared --server_learning_rate (eta_s; one method's own:
`fedavg@adam:server_learning_rate=0.01`) and declares its own
hyper-parameters:

* sgd: w <- w - eta_s u (McMahan et al. 2017, Algorithm 1: eta_s = 1 is
  plain averaging). FedAvg's default.
* sgdm: heavy-ball momentum v <- beta v + u; w <- w - eta_s v (Hsu, Qi &
  Brown 2019, Sec. 3: "v <- beta v + Delta w, w <- w - v"). FedAvgM's
  default.
* nesterov: Nesterov momentum v <- beta v + u; w <- w - eta_s (u + beta v)
  (TensorFlow's `MomentumOptimizer(use_nesterov=True)`).
* adagrad, adam, yogi: FedAdagrad, FedAdam, FedYogi (Reddi et al. 2021,
  "Adaptive Federated Optimization", Algorithm 2; `algorithms.
  server_optimizers`), with beta_1, beta_2 and the adaptivity tau.

The momentum optimizers record the effective learning rate
eta_s / (1 - beta) (Hsu et al. 2019; Hsu, Qi & Brown 2020, Appendix A).
"""

import dataclasses
import math
from typing import Dict

from federated_vision import config_fields
from federated_vision.errors import bad
from federated_vision.methods import components as comp

_LR = ("server_learning_rate",)


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
  from federated_vision.algorithms import server_optimizers  # pylint: disable=g-import-not-at-top
  return server_optimizers.build_nesterov(config.server_learning_rate,
                                          config.server_momentum)


def _adaptive(rule: str):
  def build(config):
    from federated_vision.algorithms import server_optimizers  # pylint: disable=g-import-not-at-top
    beta_2 = getattr(config, f"{rule}_beta_2", 0.0)
    return server_optimizers.build_adaptive(
        rule, config.server_learning_rate, getattr(config, f"{rule}_beta_1"),
        beta_2, getattr(config, f"{rule}_tau"))
  return build


comp.register(comp.ServerOptimizer(
    name="sgd", build=_sgd, reads=_LR, label="SGD",
    citation="McMahan et al. 2017, Algorithm 1 (server step w <- w - eta_s u)",
    summary="plain server SGD on the averaged update (eta_s = 1: averaging)",
    settings=lambda c: momentum_settings("sgd", c.server_learning_rate)))
comp.register(comp.ServerOptimizer(
    name="sgdm", build=_sgdm, reads=_LR, options=MomentumOptions,
    label="heavy-ball momentum",
    citation="Hsu, Qi & Brown 2019, Sec. 3 (v <- beta v + Delta w; "
             "w <- w - v)",
    summary="server SGD with heavy-ball momentum (FedAvgM's)",
    settings=lambda c: momentum_settings("sgdm", c.server_learning_rate,
                                         c.server_momentum)))
comp.register(comp.ServerOptimizer(
    name="nesterov", build=_nesterov, reads=_LR, options=MomentumOptions,
    label="Nesterov momentum",
    citation="Nesterov 1983; TensorFlow MomentumOptimizer(use_nesterov=True)",
    summary="server SGD with Nesterov momentum",
    settings=lambda c: momentum_settings("nesterov", c.server_learning_rate,
                                         c.server_momentum)))
for _rule, _label in (("adagrad", "FedAdagrad"), ("adam", "FedAdam"),
                      ("yogi", "FedYogi")):
  comp.register(comp.ServerOptimizer(
      name=_rule, build=_adaptive(_rule), reads=_LR,
      options=_betas(_rule, beta_2=_rule != "adagrad"), label=_label,
      citation="Reddi et al. 2021, Adaptive Federated Optimization, "
               "Algorithm 2",
      summary=f"{_label}'s adaptive server optimizer"))
