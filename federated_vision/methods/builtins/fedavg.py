"""The FedAvg family: fedavg, fedavgm, fedsgd.

* fedavg: McMahan et al. 2017, Algorithm 1: E local epochs of SGD with
  batch size B on each selected client, the weighted mean of the deltas,
  a server step (default: SGD with eta_s = 1, plain averaging).
* fedavgm: FedAvg with server momentum (Hsu, Qi & Brown 2019, Sec. 3): the
  same round with the heavy-ball `sgdm` server optimizer by default.
* fedsgd: McMahan et al. 2017, Sec. 2: FedAvg with B = inf and E = 1
  whatever the flags say (one full-batch gradient step per client).

`client_sgd` is the clients' SGD every built-in builds from
--client_learning_rate. Importing this module does not import TensorFlow.
"""

import dataclasses

from federated_vision.methods import components as comp

_LOCAL = ("client_epochs", "client_batch_size", "client_learning_rate")


def client_sgd(config):
  """The clients' SGD of --client_learning_rate (every built-in's)."""
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  return tff.learning.optimizers.build_sgdm(config.client_learning_rate)


def fedsgd_client_spec(config, seed: int):
  """McMahan et al. 2017's FedSGD: B = inf, E = 1 whatever the config says."""
  return comp.default_client_spec(
      dataclasses.replace(config, client_batch_size=0, client_epochs=1), seed)


def _client_settings(config):
  """What FedAvg's builders record (per client or grouped alike)."""
  return {"client_optimizer": "sgd",
          "client_learning_rate": config.client_learning_rate}


def _build(fedsgd: bool):
  """FedAvg's composition (`algorithms.fedavg`) with the method's client
  work and server optimizer."""
  def build(config, inputs, parts: comp.BuildParts):
    from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
    if fedsgd:
      process = fedavg.build_fedsgd(inputs.model_fn,
                                    config.client_learning_rate,
                                    parts.server_optimizer,
                                    client_work=parts.client_work)
    else:
      process = fedavg.build_fedavg(inputs.model_fn, parts.client_optimizer,
                                    parts.server_optimizer,
                                    client_work=parts.client_work)
    return process, _client_settings(config)
  return build


def grouped_fedavg(config, inputs, parts: comp.BuildParts, update,
                   group_size):
  """FedAvg's round (McMahan et al. 2017, Algorithm 1) through client groups
  (`algorithms.client_groups.GroupedMethod`): the same server optimizer and
  client SGD, the client work's per-client `update`; an algorithm whose
  round is FedAvg's composition declares it as its `grouped_build`. Returns
  (process, the settings `build` records)."""
  from federated_vision.algorithms import client_groups  # pylint: disable=g-import-not-at-top
  return client_groups.GroupedMethod(
      inputs.model_fn, parts.client_optimizer, parts.server_optimizer,
      group_size=group_size, clients_per_round=inputs.clients_per_round,
      update=update), _client_settings(config)


comp.register(comp.Algorithm(
    name="fedavg", build=_build(False), reads=_LOCAL, server_optimizer="sgd",
    grouped_build=grouped_fedavg, mixable=True, label="FedAvg",
    citation="McMahan et al. 2017, Algorithm 1",
    summary="Federated Averaging: E local epochs of SGD (batch B) per "
            "client, weighted mean of the deltas"))
comp.register(comp.Algorithm(
    name="fedavgm", build=_build(False), reads=_LOCAL, server_optimizer="sgdm",
    grouped_build=grouped_fedavg, mixable=True, calibrates_as="fedavg",
    label="FedAvgM",
    citation="Hsu, Qi & Brown 2019, Sec. 3 (server momentum)",
    summary="FedAvg with server momentum (heavy-ball sgdm by default)"))
# FedSGD composes with no mixing strategy (ours: the strategies train with
# local B and E, which FedSGD fixes to inf and 1): not mixable.
comp.register(comp.Algorithm(
    name="fedsgd", build=_build(True), reads=("client_learning_rate",),
    client_spec=fedsgd_client_spec, server_optimizer="sgd",
    # FedSGD's round is FedAvg's with one full-batch SGD step of the client
    # learning rate (B = inf, E = 1: its spec).
    grouped_build=grouped_fedavg,
    calibrates_as=None, label="FedSGD",
    citation="McMahan et al. 2017, Sec. 2 (FedSGD: B = inf, E = 1)",
    summary="one full-batch gradient step per client (B = inf, E = 1)"))
