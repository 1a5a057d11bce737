"""SCAFFOLD (Karimireddy, Kale, Mohri, Reddi, Stich & Suresh 2020,
"SCAFFOLD: Stochastic Controlled Averaging for Federated Learning",
Algorithm 1 with option II control variates): local SGD corrected by
c - c_k, a control variate c_k kept per client across rounds in the
client-state store (`training.client_states`), the server's c updated by
|S|/N times the mean change. The process: `algorithms.scaffold`; its server
step is the method's server optimizer applied to -Delta x (SGD(eta_g), the
default, is line 17 exactly).
"""

from federated_vision.methods import components as comp

_LOCAL = ("client_epochs", "client_batch_size", "client_learning_rate")


def _build(config, inputs, parts: comp.BuildParts):
  from federated_vision.algorithms import scaffold  # pylint: disable=g-import-not-at-top
  method = scaffold.ScaffoldMethod(inputs.model_fn,
                                   config.client_learning_rate,
                                   parts.server_optimizer)
  return method, {"client_optimizer": "sgd",
                  "client_learning_rate": config.client_learning_rate,
                  "client_weighting": "uniform",
                  "client_state": "control_variate"}


comp.register(comp.Algorithm(
    name="scaffold", build=_build, reads=_LOCAL, server_optimizer="sgd",
    client_state_models=1, takes_variants=False, label="SCAFFOLD",
    citation="Karimireddy et al. 2020, SCAFFOLD, Algorithm 1 (option II "
             "control variates)",
    summary="local SGD corrected by control variates kept per client "
            "(per-client state, on disk)"))
