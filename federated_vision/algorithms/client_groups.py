"""Client groups: several real clients trained one after another in one slot.

Why (docs/performance.md, "Small clients"): with clients of a few examples the
TFF worker spends most of a client's time on per-client overhead, not on its
SGD steps: every client is its own computation call, its dataset is built by
one computation, serialised into a graph and rebuilt by the next (tf.data
function instantiation, oneDNN's layout pass over it, tf.data's graph
rewrites), the client model's variables are randomly initialised before the
global weights overwrite them, and the dropped-client count and the weighted
mean make further per-client calls. A *group slot* takes G round keys, and in
one graph call, for each key in turn: builds the client's dataset in-graph,
loads the global weights, resets the optimizer state and the metrics, runs
the client's SGD steps, and adds its weighted delta, weight, unfinalized
metrics and dropped flag to the slot's sums.

Semantics are today's (McMahan et al. 2017, Algorithm 1 per client; FedIR,
Hsu, Qi & Brown 2020, Sec. 5.2, eq. 4 per client; FedVC is data-side only,
`client_data.TrainingSpec.virtual_client_size`): a slot returns the weighted
mean of its clients' deltas with the sum of their weights as its weight, so
TFF's weighted mean over slots is sum_k w_k delta_k / sum_k w_k, the
ungrouped aggregate up to float summation order; unfinalized metrics are
sums (as `tff.learning.metrics.sum_then_finalize` adds clients'); a client
with a non-finite delta is zeroed with weight 0 and counted as
`clients_dropped_non_finite` exactly as `fedavg.count_dropped_clients` does.
The learning-process state is the ungrouped process's, so checkpoints of
either path resume the other.

Covered: the FedAvg family (fedavg, fedavgm, fedsgd) with the plain or the
FedIR client work, with or without FedVC, weighted mean aggregation.
Not covered (group size 1 only): FedProx, the mixing strategies, unweighted
(DP) aggregators (a slot's mean would enter an unweighted mean as one
client).
"""

import collections
import functools
import math
import os
from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.algorithms import fedavg
from federated_vision.algorithms import fedir as fedir_lib
from federated_vision.data import client_data as client_data_lib
from federated_vision.runtime import learning_internals

AUTO = "auto"
# Largest group (the slot's keys are read as one batch of this size).
MAX_GROUP_SIZE = 4096
# ours: slots per round for `group_size='auto'`: two per core, so the worker's
# inter-op threads still run slots side by side and the last slot is short.
SLOTS_PER_CORE = 2


def parse_group_size(value) -> object:
  """'auto' or an int >= 1 (from a flag); raises ValueError otherwise."""
  if isinstance(value, str) and value.strip().lower() == AUTO:
    return AUTO
  try:
    size = int(value)
  except (TypeError, ValueError):
    raise ValueError(f"must be 'auto' or an integer >= 1, got {value!r}"
                     ) from None
  if size < 1 or size > MAX_GROUP_SIZE or str(size) != str(value).strip():
    raise ValueError(f"must be 'auto' or an integer in [1, {MAX_GROUP_SIZE}]"
                     f", got {value!r}")
  return size


def resolve_group_size(group_size, clients_per_round: int,
                       cores: Optional[int] = None) -> int:
  """The clients per slot: `group_size`, or for 'auto' ceil(C / slots) with
  `SLOTS_PER_CORE` slots per core (ours: see `SLOTS_PER_CORE`)."""
  if group_size == AUTO:
    slots = SLOTS_PER_CORE * (cores or os.cpu_count() or 1)
    return min(MAX_GROUP_SIZE, max(1, math.ceil(clients_per_round / slots)))
  if (not isinstance(group_size, int) or not 1 <= group_size <= MAX_GROUP_SIZE):
    raise ValueError(f"group_size must be 'auto' or an int >= 1, got "
                     f"{group_size!r}")
  return group_size


def group_keys(keys: Sequence[str], group_size: int) -> list:
  """Round keys cut into consecutive slots of `group_size` (the last may be
  shorter), each a numpy array of bytes."""
  if group_size < 1:
    raise ValueError(f"group_size must be >= 1, got {group_size}")
  keys = list(keys)
  return [np.array([k.encode() for k in keys[i:i + group_size]], object)
          for i in range(0, len(keys), group_size)]


def lean_options() -> tf.data.Options:
  """tf.data options for a dataset made and consumed inside one slot.

  No static optimizations and no autotuning: finalizing a dataset with any
  rewrite serialises its graph and runs tf.data's Grappler passes on it, per
  client (the largest per-client cost in the slot's profile). Neither changes
  the elements or their order (the pipeline's maps are `deterministic=True`).
  """
  options = tf.data.Options()
  options.experimental_optimization.apply_default_optimizations = False
  options.autotune.enabled = False
  return options


def _has_element(dataset: tf.data.Dataset) -> tf.Tensor:
  return tf.cast(iter(dataset).get_next_as_optional().has_value(), tf.int32)


def _model_delta_update(model, optimizer, hparams, initial_weights, dataset, *,
                        client_weighting, training_loop):
  """One client of TFF 0.87's model-delta client work
  (`build_model_delta_update_with_tff_optimizer`), op for op."""
  model_weights = tff.learning.models.ModelWeights.from_model(model)
  tf.nest.map_structure(lambda v, t: v.assign(t), model_weights,
                        initial_weights)
  trainable = tuple(tf.nest.flatten(model_weights.trainable))
  specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)

  def reduce_fn(carry, batch):
    num_examples, opt_state = carry
    with tf.GradientTape() as tape:
      output = model.forward_pass(batch, training=True)
    grads = tape.gradient(output.loss, trainable)
    opt_state, updated = optimizer.next(opt_state, trainable, tuple(grads))
    for var, value in zip(trainable, updated):
      var.assign(value)
    return (num_examples + tf.cast(output.num_examples, tf.int64), opt_state)

  opt_state = optimizer.set_hparams(optimizer.initialize(specs), hparams)
  num_examples, _ = training_loop(
      reduce_fn, dataset, lambda: (tf.zeros([], tf.int64), opt_state))
  delta = tf.nest.map_structure(tf.subtract, initial_weights.trainable,
                                model_weights.trainable)
  delta, non_finite = fedir_lib._zero_if_non_finite(delta)  # pylint: disable=protected-access
  if client_weighting == tff.learning.ClientWeighting.NUM_EXAMPLES:
    weight = tf.cast(num_examples, tf.float32)
  else:
    weight = tf.constant(1.0, tf.float32)
  weight = tf.where(non_finite, 0.0, weight)
  if non_finite:  # As TFF: a dropped client's metrics are not reported.
    model.reset_metrics()
  return (tff.learning.templates.ClientResult(update=delta,
                                              update_weight=weight),
          model.report_local_unfinalized_metrics())


def build_grouped_client_work(
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    dataset_fn: Callable[[tf.Tensor], tf.data.Dataset],
    *,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
    loop_implementation: tff.learning.LoopImplementation = fedavg.DEFAULT_LOOP,
    fedir_num_classes: Optional[int] = None,
    fedir_target: Optional[np.ndarray] = None,
    fedir_label_counts: bool = False,
) -> tff.learning.templates.ClientWorkProcess:
  """A client work whose client values are slots of round keys (string [G]).

  Args:
    model_fn: see `fedavg.build_fedavg`.
    client_optimizer: the clients' optimizer (state reset for every client).
    dataset_fn: round key -> the client's batched training dataset
      (`client_data.build_training_dataset_fn`), run inside the slot.
    client_weighting: NUM_EXAMPLES or UNIFORM, per real client.
    loop_implementation: the clients' SGD loop (`fedavg.DEFAULT_LOOP`).
    fedir_num_classes: when set, FedIR's client update
      (`fedir.build_fedir_client_work`) replaces FedAvg's.
    fedir_target: FedIR's initial p(y) (uniform when None).
    fedir_label_counts: FedIR reads q_k from `client_data.LABEL_COUNTS_KEY`.

  Returns:
    A `ClientWorkProcess` with the ungrouped client work's state and
    measurements (`train`, `clients_dropped_non_finite`).
  """
  fedavg.check_loop_implementation(loop_implementation)
  if client_weighting not in (tff.learning.ClientWeighting.NUM_EXAMPLES,
                              tff.learning.ClientWeighting.UNIFORM):
    raise TypeError(f"client_weighting must be a ClientWeighting, got "
                    f"{client_weighting!r}")
  read_empty = client_weighting == tff.learning.ClientWeighting.NUM_EXAMPLES
  with tf.Graph().as_default():
    model = model_fn()
    metrics_aggregation_fn = tff.learning.metrics.sum_then_finalize(
        model.metric_finalizers())
  weights_type = tff.learning.models.weights_type_from_model(model)
  hparams = client_optimizer.get_hparams(
      client_optimizer.initialize(tf.TensorSpec([], tf.float32)))
  if fedir_num_classes is None:
    initial_state = hparams
  else:
    if fedir_target is None:
      fedir_target = np.full([fedir_num_classes], 1.0 / fedir_num_classes)
    initial_state = fedir_lib.FedIRState(
        hparams, fedir_lib._check_distribution(fedir_target, fedir_num_classes))  # pylint: disable=protected-access
  # A ClientWorkProcess takes sequences: a slot is a dataset of round keys
  # (`GroupedTrainingProcess` composes the str[G] -> dataset step).
  keys_type = tff.SequenceType(tff.TensorType(np.str_))

  @tff.federated_computation
  def init_fn():
    return tff.federated_value(initial_state, tff.SERVER)

  state_type = init_fn.type_signature.result.member

  @tff.tensorflow.computation(state_type, weights_type, keys_type)
  def slot_update(state, initial_weights, keys):
    model = model_fn()  # Variables are created outside the tf.functions.
    loop = learning_internals.build_training_loop(loop_implementation)
    if fedir_num_classes is None:
      client = functools.partial(
          _model_delta_update, model, client_optimizer,
          client_weighting=client_weighting, training_loop=loop)
    else:
      client = functools.partial(
          fedir_lib._client_update, model, client_optimizer,  # pylint: disable=protected-access
          num_classes=fedir_num_classes,
          per_example_loss_fn=fedir_lib.models_lib.per_example_loss,
          client_weighting=client_weighting, training_loop=loop,
          client_label_counts=fedir_label_counts)
    client = tf.function(client)

    @tf.function
    def run(state, initial_weights, keys):
      # Loop variables are flat tuples: autograph would stack a list.
      flat = lambda s: tuple(tf.nest.flatten(s))
      model.reset_metrics()
      metric_structure = model.report_local_unfinalized_metrics()
      metrics = tuple(tf.zeros_like(t) for t in flat(metric_structure))
      total = tuple(tf.zeros_like(t) for t in flat(initial_weights.trainable))
      weight_sum = tf.constant(0.0, tf.float32)
      dropped = tf.constant(0, tf.int32)
      # A while loop over a tensor of keys: `for key in keys_dataset` would be
      # a ReduceDataset whose body (the whole client training) tf.data
      # rewrites with Grappler at every call.
      keys = keys.batch(MAX_GROUP_SIZE).get_single_element()
      for i in tf.range(tf.size(keys)):
        dataset = dataset_fn(keys[i]).with_options(lean_options())
        model.reset_metrics()
        result, client_metrics = client(state, initial_weights, dataset)
        w = result.update_weight
        total = tuple(t + w * d for t, d in zip(total, flat(result.update)))
        weight_sum += w
        metrics = tuple(m + c for m, c in zip(metrics, flat(client_metrics)))
        # `fedavg.count_dropped_clients`: weight 0 with data (NUM_EXAMPLES)
        # or weight 0 (UNIFORM) is a client dropped as non-finite.
        is_zero = tf.equal(w, 0.0)
        if read_empty:
          dropped += tf.cond(is_zero, lambda: _has_element(dataset),
                             lambda: tf.constant(0, tf.int32))
        else:
          dropped += tf.cast(is_zero, tf.int32)
      mean = tf.nest.pack_sequence_as(
          initial_weights.trainable,
          [tf.math.divide_no_nan(t, weight_sum) for t in total])
      return (tff.learning.templates.ClientResult(update=mean,
                                                  update_weight=weight_sum),
              tf.nest.pack_sequence_as(metric_structure, list(metrics)),
              dropped)
    return run(state, initial_weights, keys)

  @tff.federated_computation(
      init_fn.type_signature.result,
      tff.FederatedType(weights_type, tff.CLIENTS),
      tff.FederatedType(keys_type, tff.CLIENTS))
  def next_fn(state, weights, slots):
    state_at_clients = tff.federated_broadcast(state)
    result, metrics, dropped = tff.federated_map(
        slot_update, (state_at_clients, weights, slots))
    measurements = tff.federated_zip(collections.OrderedDict(
        [("train", metrics_aggregation_fn(metrics)),
         (fedavg.DROPPED_NON_FINITE, tff.federated_sum(dropped))]))
    return tff.templates.MeasuredProcessOutput(state, result, measurements)

  return tff.learning.templates.ClientWorkProcess(init_fn, next_fn)


def build_grouped_process(
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer],
    dataset_fn: Callable[[tf.Tensor], tf.data.Dataset],
    **client_work_kwargs,
) -> tff.learning.templates.LearningProcess:
  """`fedavg.build_fedavg`'s composition over `build_grouped_client_work`.

  The same initial weights, broadcast, weighted mean (`tff.aggregators.
  MeanFactory`) and server optimizer as `fedavg.build_fedavg` (SGD(1.0) when
  `server_optimizer` is None), so the state is the ungrouped process's.
  """
  if server_optimizer is None:
    server_optimizer = tff.learning.optimizers.build_sgdm(learning_rate=1.0)
  initial_model_weights_fn = fedavg.build_initial_weights_fn(model_fn)
  weights_type = initial_model_weights_fn.type_signature.result
  distributor = tff.learning.templates.build_broadcast_process(weights_type)
  client_work = build_grouped_client_work(
      model_fn, client_optimizer, dataset_fn, **client_work_kwargs)
  aggregator = tff.aggregators.MeanFactory().create(
      weights_type.trainable, tff.TensorType(np.float32))
  finalizer = tff.learning.templates.build_apply_optimizer_finalizer(
      server_optimizer, weights_type)
  return tff.learning.templates.compose_learning_process(
      initial_model_weights_fn, distributor, client_work, aggregator, finalizer)


class GroupedTrainingProcess:
  """A grouped learning process that takes a round's keys like the ungrouped
  one (`training_loop.build_training_process`): `next(state, keys)` cuts them
  into slots of `group_size` (`group_keys`)."""

  def __init__(self, process: tff.learning.templates.LearningProcess,
               group_size: int):
    self.process = process
    self.group_size = int(group_size)
    self.initialize = process.initialize
    self.get_model_weights = process.get_model_weights
    self.set_model_weights = process.set_model_weights

  def next(self, state, keys: Sequence[str]):
    return self.process.next(state, group_keys(keys, self.group_size))


class GroupedMethod:
  """A method trained through client groups: what `training_loop` is handed
  instead of a learning process (it calls `build_training_process`).

  Args:
    model_fn, client_optimizer, server_optimizer: as `fedavg.build_fedavg`.
    group_size: 'auto' or clients per slot (`resolve_group_size`).
    clients_per_round: C, for 'auto'.
    **client_work_kwargs: `build_grouped_client_work`'s keyword arguments
      (client_weighting, fedir_num_classes, fedir_target, fedir_label_counts).
  """

  def __init__(self, model_fn, client_optimizer, server_optimizer, *,
               group_size, clients_per_round: int, **client_work_kwargs):
    self.group_size = resolve_group_size(group_size, clients_per_round)
    self._args = (model_fn, client_optimizer, server_optimizer)
    self._kwargs = client_work_kwargs

  def build_training_process(self, fed_data, spec) -> GroupedTrainingProcess:
    """The grouped process over `fed_data`'s clients built as `spec` says."""
    label_counts = None
    if self._kwargs.get("fedir_label_counts"):
      label_counts = client_data_lib.label_counts_fn(
          fed_data.client_data.client_ids, fed_data.class_counts)
    dataset_fn = client_data_lib.build_training_dataset_fn(
        fed_data.client_data.serializable_dataset_fn, spec,
        fed_data.train_map_fn, label_counts=label_counts)
    process = build_grouped_process(*self._args, dataset_fn, **self._kwargs)
    keys_to_dataset = tff.tensorflow.computation(
        lambda keys: tf.data.Dataset.from_tensor_slices(keys),  # pylint: disable=unnecessary-lambda
        tff.TensorType(np.str_, [None]))
    return GroupedTrainingProcess(
        tff.simulation.compose_dataset_computation_with_learning_process(
            keys_to_dataset, process), self.group_size)
