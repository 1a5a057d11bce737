"""FedIR: importance-reweighted client work (Hsu, Qi & Brown 2020, Sec. 5.2).

Each client reweights every example's loss by p(y) / q_k(y), self-normalised
over the mini-batch (eq. 4); p is uniform (--fedir_target=uniform) or the
server's test label distribution (test). q_k is client k's class
distribution over its whole local data, as in the paper, read once per
client from the counts `training_loop.build_training_process` adds to its
batches: not counted over the round's batches, which under FedVC are a
resample of N_VC examples (a noisy estimate of q_k). In a mixing
strategy's method q_k is counted over the round's batches (ours: the data
the client trains on that round, which under example transfer includes
the transferred centralized examples). The maths and the TFF client work:
`algorithms.fedir`.
"""

import dataclasses
from typing import Optional, Sequence

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad
from federated_vision.methods import components as comp
from federated_vision.methods.builtins import fedavg

NAME = "fedir"


@dataclasses.dataclass(frozen=True)
class FedIROptions:
  """FedIR's target distribution p(y)."""
  fedir_target: str = config_fields.option(
      "uniform", "FedIR target p(y): uniform, or estimated from the "
      "server-held test labels.", enum_values=["uniform", "test"])


def target(config, inputs) -> Optional[Sequence[float]]:
  """p(y): None (uniform) or the server's test label distribution
  (ConfigError without test labels, or with a label per position: FedIR
  weighs each example by its one label's p(y) / q_k(y))."""
  if getattr(inputs.model_fn, "sequence_labels", False):
    raise ConfigError("--fedir: FedIR weighs each example by p(y)/q_k(y) of "
                      "its one label; this data set's examples have a label "
                      "per position (next characters)", "fedir")
  if config.fedir_target != "test":
    return None
  from federated_vision.algorithms import fedir  # pylint: disable=g-import-not-at-top
  if inputs.test_labels_fn is None:
    raise bad("fedir_target", "test", "needs the server's test labels")
  return fedir.estimate_target_distribution(inputs.test_labels_fn(),
                                            inputs.num_classes)


def _settings(config):
  """What FedIR's client work records, per client or grouped alike."""
  return {"fedir_target": config.fedir_target}


def _work(config, inputs, client_label_counts: bool):
  from federated_vision.algorithms import fedir  # pylint: disable=g-import-not-at-top
  work = fedir.build_fedir_client_work(
      inputs.model_fn, fedavg.client_sgd(config), inputs.num_classes,
      target_distribution=target(config, inputs),
      client_label_counts=client_label_counts)
  return work, _settings(config)


def _mixing(config, inputs):
  work, settings = _work(config, inputs, client_label_counts=False)
  return {"client_work": work}, settings


def _grouped(config, inputs):
  """The grouped update and the settings `_work` records."""
  from federated_vision.algorithms import fedir  # pylint: disable=g-import-not-at-top
  return (fedir.grouped_update(inputs.num_classes, target(config, inputs)),
          _settings(config))


comp.register(comp.ClientWork(
    name=NAME, label="FedIR", options=FedIROptions,
    reads=("client_learning_rate",),
    citation="Hsu, Qi & Brown 2020, Sec. 5.2, eq. 4",
    summary="importance reweighting p(y)/q_k(y), self-normalised per "
            "mini-batch",
    build=lambda config, inputs: _work(config, inputs, True),
    mixing=_mixing, grouped_update=_grouped,
    shorthand="Also run each algorithm with FedIR importance reweighting "
              "(Hsu, Qi & Brown 2020).",
    off_settings={"fedir_target": None}))
