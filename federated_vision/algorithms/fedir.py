"""FedIR: federated importance reweighting (Hsu, Qi & Brown 2020, Sec. 5.2).

Each client k reweights every example's loss by w = p(y) / q_k(y), where p is
the target class distribution broadcast by the server and q_k the client's own
class distribution, computed on the client from its local data (it never
leaves the client). The weights are self-normalised over each mini-batch
(eq. 4): loss = sum_i w_i l_i / sum_i w_i.

The client work is a `tff.learning.templates.ClientWorkProcess`; `build_fedir`
plugs it into FedAvg's composition, so any server optimizer (FedIR + FedAvgM)
works. The server state of the client work holds the optimizer's
hyper-parameters and the target distribution p.
"""

import collections
import functools
from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import models as models_lib
from federated_vision.algorithms import fedavg
from federated_vision.data import client_data as client_data_lib
from federated_vision.runtime import learning_internals

PerExampleLossFn = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]


class FedIRState(NamedTuple):
  """Server state of the FedIR client work (immutable)."""
  optimizer_hparams: object
  target_distribution: np.ndarray


def importance_weights(labels: tf.Tensor, target: tf.Tensor,
                       client_distribution: tf.Tensor) -> tf.Tensor:
  """Per-example w = p(y) / q_k(y); 0 where q_k(y) = 0 (such y never occur)."""
  labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
  p = tf.gather(tf.cast(target, tf.float32), labels)
  q = tf.gather(tf.cast(client_distribution, tf.float32), labels)
  return tf.math.divide_no_nan(p, q)


def self_normalized_loss(per_example_losses: tf.Tensor,
                         weights: tf.Tensor) -> tf.Tensor:
  """Eq. 4 of Hsu, Qi & Brown 2020: sum_i w_i l_i / sum_i w_i (0 if sum w = 0)."""
  weights = tf.cast(weights, per_example_losses.dtype)
  return tf.math.divide_no_nan(tf.reduce_sum(weights * per_example_losses),
                               tf.reduce_sum(weights))


def label_distribution(dataset: tf.data.Dataset, num_classes: int,
                       label_key: str = "y") -> tf.Tensor:
  """q_k: the normalised label histogram of a (batched) client dataset."""
  def count(acc, batch):
    labels = tf.reshape(tf.cast(batch[label_key], tf.int32), [-1])
    return acc + tf.math.bincount(labels, minlength=num_classes,
                                  maxlength=num_classes, dtype=tf.float32)
  counts = dataset.reduce(tf.zeros([num_classes], tf.float32), count)
  return tf.math.divide_no_nan(counts, tf.reduce_sum(counts))


def _check_distribution(target, num_classes: int) -> np.ndarray:
  p = np.asarray(target, dtype=np.float32)
  if p.shape != (num_classes,) or np.any(p < 0) or not np.isfinite(p).all() \
      or p.sum() <= 0:
    raise ValueError(f"target_distribution must be {num_classes} non-negative "
                     f"finite numbers with a positive sum, got shape {p.shape}")
  return p / p.sum()


def build_fedir_client_work(
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    num_classes: int,
    target_distribution: Optional[Sequence[float]] = None,
    per_example_loss_fn: PerExampleLossFn = models_lib.per_example_loss,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
    loop_implementation: tff.learning.LoopImplementation = fedavg.DEFAULT_LOOP,
    client_label_counts: bool = False,
) -> tff.learning.templates.ClientWorkProcess:
  """Importance-reweighted model-delta client work (FedIR).

  q_k, the client's class distribution, comes from one of two places:
  * `client_label_counts=True`: every batch carries the client's class counts
    over its whole local data (`client_data.LABEL_COUNTS_KEY`, added by
    `client_data.build_training_dataset_fn(label_counts=...)`, which
    `training_loop.build_training_process` does for such a process), read
    from the first batch: the paper's q_k, computed once per client, and no
    second pass over the round's decoded, augmented batches;
  * otherwise the label histogram of the round's dataset, counted in a first
    pass over it (for plain {'x', 'y'} datasets, e.g. Python-side ones).

  Args:
    model_fn: no-arg function returning a `tff.learning.models.VariableModel`
      whose predictions are what `per_example_loss_fn` expects (logits for the
      default).
    client_optimizer: local optimizer.
    num_classes: C; labels are in [0, C).
    target_distribution: p(y), length C; uniform when None. Replace it in a
      learning process state with `with_target_distribution`, or estimate it
      from a validation set the server holds
      (`federated_vision.algorithms.fedir.estimate_target_distribution`).
    per_example_loss_fn: `(y_true, predictions) -> [batch]` losses matching the
      model's loss. The model's loss minus the mean of these is kept as the
      regularisation term, so weight decay still applies.
    client_weighting: aggregation weight of each client's delta.
    loop_implementation: the local training loop (see
      `federated_vision.algorithms.fedavg.DEFAULT_LOOP`).
    client_label_counts: the client data elements are the model's input plus
      `client_data.LABEL_COUNTS_KEY`, float32 [num_classes] (see above).

  Returns:
    A `tff.learning.templates.ClientWorkProcess` whose server state is a
    `FedIRState`.
  """
  fedavg.check_loop_implementation(loop_implementation)
  if num_classes <= 0:
    raise ValueError(f"num_classes must be > 0, got {num_classes}")
  if target_distribution is None:
    target_distribution = np.full([num_classes], 1.0 / num_classes, np.float32)
  target = _check_distribution(target_distribution, num_classes)

  with tf.Graph().as_default():
    model = model_fn()
    metrics_aggregation_fn = tff.learning.metrics.sum_then_finalize(
        model.metric_finalizers())
  element_spec = model.input_spec
  if client_label_counts:
    element_spec = collections.OrderedDict(
        element_spec, **{client_data_lib.LABEL_COUNTS_KEY: tf.TensorSpec(
            [num_classes], tf.float32)})
  data_type = tff.SequenceType(tff.types.tensorflow_to_type(element_spec))
  weights_type = tff.learning.models.weights_type_from_model(model)
  whimsy_state = client_optimizer.initialize(tf.TensorSpec([], tf.float32))
  initial_hparams = client_optimizer.get_hparams(whimsy_state)

  @tff.federated_computation
  def init_fn():
    return tff.federated_value(
        FedIRState(initial_hparams, target), tff.SERVER)

  state_type = init_fn.type_signature.result.member

  @tff.tensorflow.computation(state_type, weights_type, data_type)
  def client_update(state, initial_weights, dataset):
    model = model_fn()  # Variables are created outside the tf.function.
    # tf.function adds the automatic control dependencies that order the
    # variable reads and assignments (TFF traces in TF1-style graph mode).
    update = tf.function(functools.partial(
        _client_update, model, client_optimizer, num_classes=num_classes,
        per_example_loss_fn=per_example_loss_fn,
        client_weighting=client_weighting,
        training_loop=learning_internals.build_training_loop(loop_implementation),
        client_label_counts=client_label_counts))
    return update(state, initial_weights, dataset)

  @tff.federated_computation(
      init_fn.type_signature.result,
      tff.FederatedType(weights_type, tff.CLIENTS),
      tff.FederatedType(data_type, tff.CLIENTS))
  def next_fn(state, weights, client_data):
    state_at_clients = tff.federated_broadcast(state)
    client_result, model_outputs = tff.federated_map(
        client_update, (state_at_clients, weights, client_data))
    train_metrics = metrics_aggregation_fn(model_outputs)
    measurements = tff.federated_zip(
        collections.OrderedDict(train=train_metrics))
    return tff.templates.MeasuredProcessOutput(state, client_result,
                                               measurements)

  return tff.learning.templates.ClientWorkProcess(init_fn, next_fn)


def _client_update(model, optimizer, state, initial_weights, dataset, *,
                   num_classes, per_example_loss_fn, client_weighting,
                   training_loop, client_label_counts):
  """One client's local training with importance-weighted losses."""
  hparams, target = state
  model_weights = tff.learning.models.ModelWeights.from_model(model)
  tf.nest.map_structure(lambda v, t: v.assign(t), model_weights,
                        initial_weights)
  # q_k(y), computed locally; it never leaves the client.
  if client_label_counts:
    counts = dataset.take(1).reduce(
        tf.zeros([num_classes], tf.float32),
        lambda _, batch: batch[client_data_lib.LABEL_COUNTS_KEY])
    q_k = tf.math.divide_no_nan(counts, tf.reduce_sum(counts))
    dataset = dataset.map(lambda batch: {
        k: v for k, v in batch.items() if k != client_data_lib.LABEL_COUNTS_KEY})
  else:
    q_k = label_distribution(dataset, num_classes)
  trainable = tuple(tf.nest.flatten(model_weights.trainable))
  specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)

  def reduce_fn(carry, batch):
    num_examples, opt_state = carry
    with tf.GradientTape() as tape:
      output = model.forward_pass(batch, training=True)
      losses = per_example_loss_fn(batch["y"], output.predictions)
      weights = importance_weights(batch["y"], target, q_k)
      # output.loss = mean(losses) + regularisation; swap the mean for eq. 4.
      loss = (output.loss - tf.reduce_mean(losses)
              + self_normalized_loss(losses, weights))
    grads = tape.gradient(loss, trainable)
    opt_state, updated = optimizer.next(opt_state, trainable, grads)
    for var, value in zip(trainable, updated):
      var.assign(value)
    return (num_examples + tf.cast(output.num_examples, tf.int64), opt_state)

  opt_state = optimizer.set_hparams(optimizer.initialize(specs), hparams)
  num_examples, _ = training_loop(
      reduce_fn, dataset, lambda: (tf.constant(0, tf.int64), opt_state))
  delta = tf.nest.map_structure(tf.subtract, initial_weights.trainable,
                                model_weights.trainable)
  delta, non_finite = fedavg.zero_if_non_finite(delta)
  if client_weighting == tff.learning.ClientWeighting.NUM_EXAMPLES:
    weight = tf.cast(num_examples, tf.float32)
  else:
    weight = tf.constant(1.0, tf.float32)
  weight = tf.where(non_finite, 0.0, weight)
  return (tff.learning.templates.ClientResult(update=delta,
                                              update_weight=weight),
          model.report_local_unfinalized_metrics())


def grouped_update(num_classes: int,
                   target_distribution: Optional[Sequence[float]] = None):
  """FedIR's per-client hooks for client groups
  (`client_groups.ClientUpdate`): the same server state (`FedIRState`),
  q_k from the client's whole-data class counts at its first batch, and
  eq. 4's loss (the model's loss with its mean swapped for the
  self-normalised one), as `_client_update` computes them."""
  from federated_vision.algorithms import client_groups  # pylint: disable=g-import-not-at-top
  if target_distribution is None:
    target_distribution = np.full([num_classes], 1.0 / num_classes)
  target = _check_distribution(target_distribution, num_classes)

  def loss(output, batch, state, q_k):
    losses = models_lib.per_example_loss(batch["y"], output.predictions)
    weights = importance_weights(batch["y"], state.target_distribution, q_k)
    return (output.loss - tf.reduce_mean(losses)
            + self_normalized_loss(losses, weights))

  return client_groups.ClientUpdate(
      state=lambda hparams: FedIRState(hparams, target),
      hparams=lambda state: state.optimizer_hparams, label_counts=True,
      start=lambda state, counts: tf.math.divide_no_nan(
          counts, tf.reduce_sum(counts)),
      loss=loss, context_shape=(num_classes,), metrics_of_dropped=True)


def with_target_distribution(state, target_distribution: Sequence[float]):
  """Returns a FedIR learning-process state whose target p is replaced."""
  work = state.client_work
  p = _check_distribution(target_distribution, len(work.target_distribution))
  return state._replace(client_work=FedIRState(work.optimizer_hparams, p))


def estimate_target_distribution(labels: Sequence[int], num_classes: int,
                                 smoothing: float = 0.0) -> np.ndarray:
  """p(y) from labels the server holds (e.g. a validation/test set)."""
  labels = np.asarray(labels, np.int64)
  if labels.size == 0:
    raise ValueError("labels is empty")
  if labels.min() < 0 or labels.max() >= num_classes:
    raise ValueError(f"labels must lie in [0, {num_classes})")
  counts = np.bincount(labels, minlength=num_classes).astype(np.float64)
  counts += smoothing
  return (counts / counts.sum()).astype(np.float32)


def build_fedir(
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    num_classes: int,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    target_distribution: Optional[Sequence[float]] = None,
    per_example_loss_fn: PerExampleLossFn = models_lib.per_example_loss,
    client_label_counts: bool = False,
    **kwargs,
) -> tff.learning.templates.LearningProcess:
  """FedIR (Hsu, Qi & Brown 2020): FedAvg with importance-weighted clients.

  Pass a momentum `server_optimizer`
  (`fedavg.build_server_momentum_optimizer`) for FedIR + FedAvgM.

  Args:
    model_fn: see `build_fedavg`.
    client_optimizer: local optimizer.
    num_classes: number of classes C.
    server_optimizer: defaults to SGD(1.0).
    target_distribution: p(y); uniform when None.
    per_example_loss_fn: see `build_fedir_client_work`.
    client_label_counts: q_k from the client's whole local data (see
      `build_fedir_client_work`); what the binaries should use.
    **kwargs: passed to `build_fedavg` (model_aggregator, client_weighting).

  Returns:
    A `tff.learning.templates.LearningProcess`.
  """
  client_weighting = kwargs.get(
      "client_weighting", tff.learning.ClientWeighting.NUM_EXAMPLES)
  client_work = build_fedir_client_work(
      model_fn, client_optimizer, num_classes, target_distribution,
      per_example_loss_fn, client_weighting,
      kwargs.get("loop_implementation", fedavg.DEFAULT_LOOP),
      client_label_counts)
  return fedavg.build_fedavg(model_fn, client_optimizer, server_optimizer,
                             client_work=client_work, **kwargs)
