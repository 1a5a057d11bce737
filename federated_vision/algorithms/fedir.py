"""FedIR: federated importance reweighting (Hsu, Qi & Brown 2020, Sec. 5.2).

Client k reweights each example's loss by w = p(y) / q_k(y), p the target
distribution the server broadcasts (--fedir_target: uniform, or the test
labels'), q_k its own class distribution (it never leaves the client),
self-normalised per mini-batch (eq. 4): sum_i w_i l_i / sum_i w_i; the
model's loss minus the mean per-example loss (weight decay) is kept. q_k is
over the client's whole local data, as in the paper: its batches carry its
class counts (`client_data.LABEL_COUNTS_KEY`), so under FedVC it is no
estimate from the N_VC resample; in a mixing strategy's method it is
counted over the round's batches (ours: the data the client trains on,
with example transfer's). FedAvg's round runs `objective` per client,
through client groups and in the mixing strategies.
"""

import dataclasses
from typing import Optional, Sequence

import numpy as np

from federated_vision import config_fields
from federated_vision import methods
from federated_vision.errors import ConfigError, bad


@dataclasses.dataclass(frozen=True)
class FedIROptions:
  """FedIR's target distribution p(y)."""
  fedir_target: str = config_fields.option(
      "uniform", "FedIR target p(y): uniform, or estimated from the "
      "server-held test labels.", enum_values=["uniform", "test"])


def importance_weights(labels, target, client_distribution):
  """Per-example w = p(y) / q_k(y); 0 where q_k(y) = 0 (such y never occur)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
  p = tf.gather(tf.cast(target, tf.float32), labels)
  q = tf.gather(tf.cast(client_distribution, tf.float32), labels)
  return tf.math.divide_no_nan(p, q)


def self_normalized_loss(per_example_losses, weights):
  """Eq. 4: sum_i w_i l_i / sum_i w_i (0 if sum w = 0)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  weights = tf.cast(weights, per_example_losses.dtype)
  return tf.math.divide_no_nan(tf.reduce_sum(weights * per_example_losses),
                               tf.reduce_sum(weights))


def label_distribution(dataset, num_classes: int, label_key: str = "y"):
  """q_k: the normalised label histogram of a (batched) client dataset."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
  counts = local.label_counts(dataset, num_classes, label_key)
  return tf.math.divide_no_nan(counts, tf.reduce_sum(counts))


def objective(output, batch, client):
  """Eq. 4: the model's loss, its mean per-example loss swapped for the
  self-normalised weighted one (p: `client.message`, q_k: the counts)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from federated_vision import models  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data  # pylint: disable=g-import-not-at-top
  counts = batch[client_data.LABEL_COUNTS_KEY]
  q_k = tf.math.divide_no_nan(counts, tf.reduce_sum(counts))
  losses = models.per_example_loss(batch["y"], output.predictions)
  weights = importance_weights(batch["y"], client.message, q_k)
  return (output.loss - tf.reduce_mean(losses)
          + self_normalized_loss(losses, weights), None)


def check_distribution(target, num_classes: int) -> np.ndarray:
  """p normalised (ValueError unless C finite numbers >= 0, sum > 0)."""
  p = np.asarray(target, dtype=np.float32)
  if p.shape != (num_classes,) or np.any(p < 0) or not np.isfinite(p).all() \
      or p.sum() <= 0:
    raise ValueError(f"target_distribution must be {num_classes} non-negative "
                     f"finite numbers with a positive sum, got shape {p.shape}")
  return p / p.sum()


def estimate_target_distribution(labels: Sequence[int], num_classes: int,
                                 smoothing: float = 0.0) -> np.ndarray:
  """p(y) from labels the server holds (e.g. a validation/test set)."""
  labels = np.asarray(labels, np.int64)
  if labels.size == 0 or labels.min() < 0 or labels.max() >= num_classes:
    raise ValueError(f"labels must lie in [0, {num_classes}), got "
                     f"{labels.size} labels")
  counts = np.bincount(labels, minlength=num_classes) + float(smoothing)
  return (counts / counts.sum()).astype(np.float32)


def local_objective(num_classes: int,
                    target_distribution: Optional[Sequence[float]] = None):
  """FedIR's `methods.LocalObjective`: eq. 4, p (uniform when None)."""
  if num_classes <= 0:
    raise ValueError(f"num_classes must be > 0, got {num_classes}")
  if target_distribution is None:
    target_distribution = np.full([num_classes], 1.0 / num_classes, np.float32)
  return methods.LocalObjective(
      objective, check_distribution(target_distribution, num_classes),
      label_counts=True)


def build_fedir_client_work(model_fn, client_optimizer, num_classes: int,
                            target_distribution=None,
                            client_weighting=None, loop_implementation=None,
                            client_label_counts: bool = False):
  """FedIR's per-client work (`local.build_client_work` of eq. 4): q_k from
  the counts its batches carry (`client_label_counts`, the binaries') or
  counted over the round's batches; p is its state's `message`."""
  from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
  update = local_objective(num_classes, target_distribution)
  counts = local.COUNTS_IN_BATCHES if client_label_counts else local.COUNT_LABELS
  return local.build_client_work(
      model_fn, client_optimizer, update.fn, message=update.message,
      label_counts=counts, num_classes=num_classes,
      client_weighting=client_weighting,
      loop_implementation=loop_implementation)


def build_fedir(model_fn, client_optimizer, num_classes: int,
                server_optimizer=None, target_distribution=None,
                client_label_counts: bool = False, **kwargs):
  """FedIR: FedAvg with importance-weighted clients (`fedavg.build_fedavg`'s
  other arguments in `kwargs`; a momentum `server_optimizer`: + FedAvgM)."""
  from federated_vision.algorithms import fedavg  # pylint: disable=g-import-not-at-top
  work = build_fedir_client_work(
      model_fn, client_optimizer, num_classes, target_distribution,
      kwargs.get("client_weighting"), kwargs.get("loop_implementation"),
      client_label_counts)
  return fedavg.build_fedavg(model_fn, client_optimizer, server_optimizer,
                             client_work=work, **kwargs)


def with_target_distribution(state, target_distribution: Sequence[float]):
  """A FedIR learning-process state whose target p is replaced."""
  work = state.client_work
  p = check_distribution(target_distribution, len(work.message))
  return state._replace(client_work=work._replace(message=p))


def _objective(config, inputs):
  """p: uniform, or the server's test label distribution (ConfigError
  without test labels, or with a label per position: FedIR weighs each
  example by its one label's p(y) / q_k(y))."""
  if getattr(inputs.model_fn, "sequence_labels", False):
    raise ConfigError("--fedir: FedIR weighs each example by p(y)/q_k(y) of "
                      "its one label; this data set's examples have a label "
                      "per position (next characters)", "fedir")
  target = None
  if config.fedir_target == "test":
    if inputs.test_labels_fn is None:
      raise bad("fedir_target", "test", "needs the server's test labels")
    target = estimate_target_distribution(inputs.test_labels_fn(),
                                          inputs.num_classes)
  return local_objective(inputs.num_classes, target)


methods.register(methods.ClientWork(
    name="fedir", label="FedIR", options=FedIROptions,
    reads=("client_learning_rate",), objective=_objective,
    citation="Hsu, Qi & Brown 2020, Sec. 5.2, eq. 4",
    summary="importance reweighting p(y)/q_k(y), self-normalised per "
            "mini-batch",
    shorthand="Also run each algorithm with FedIR importance reweighting "
              "(Hsu, Qi & Brown 2020)."))
