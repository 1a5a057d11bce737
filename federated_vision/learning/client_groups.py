"""Client groups: several real clients trained one after another in one slot.

Why (docs/performance.md, "Small clients"): with clients of a few examples the
TFF worker spends most of a client's time on per-client overhead, not on its
SGD steps: every client is its own computation call, its dataset is built by
one computation, serialised into a graph and rebuilt by the next (tf.data
function instantiation, oneDNN's layout pass over it, tf.data's graph
rewrites), the client model's variables are randomly initialised before the
global weights overwrite them, and the dropped-client count and the weighted
mean make further per-client calls. A *group slot* takes G round keys and,
in one graph call, builds one dataset of (client index, batch) elements
(each key's pipeline, flat-mapped: its functions are instantiated once per
slot) and trains the clients one after another: at a client's first batch
it loads the global weights and resets the optimizer state and the
metrics; at its end it adds the client's weighted delta, weight,
unfinalized metrics and dropped flag to the slot's sums.

Semantics are the ungrouped path's (McMahan et al. 2017, Algorithm 1 per
client; every step is `local.step` with the method's local objective, e.g.
importance-weighted losses or a proximal gradient term; data-side variants
change only the spec): a slot returns the weighted
mean of its clients' deltas with the sum of their weights as its weight, so
TFF's weighted mean over slots is sum_k w_k delta_k / sum_k w_k, the
ungrouped aggregate up to float summation order; unfinalized metrics are
sums (as `tff.learning.metrics.sum_then_finalize` adds clients'); a client
with a non-finite delta is zeroed with weight 0 and counted as
`clients_dropped_non_finite` exactly as `local.build_client_work` does.
The learning-process state is the ungrouped process's, so checkpoints of
either path resume the other.

Which methods are covered follows from their components
(`methods.groups.uncovered`): FedAvg's round, client works given as a
local objective, data-side variants, server optimizers. Not covered:
unweighted (DP) aggregators (a slot's mean would enter an unweighted mean
as one client).
"""

from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.learning import compose
from federated_vision.learning import local
from federated_vision.data import client_data as client_data_lib


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


def build_grouped_client_work(
    model_fn: local.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    dataset_fn: Callable[[tf.Tensor], tf.data.Dataset],
    objective: Callable = local.model_loss,
    *,
    message=(),
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
    weights_type: Optional[tff.Type] = None,
    metric_finalizers=None,
) -> tff.learning.templates.ClientWorkProcess:
  """A client work whose client values are slots of round keys (string [G]).

  The slot's clients are one dataset of (client index, batch) elements
  (`dataset_fn` per key, flat-mapped); a client starts at its first batch
  (global weights loaded, optimizer state and metrics reset) and ends at
  the next client's (delta, weight and metrics added to the slot's sums).
  Each step is `local.step` with `objective`.

  Args:
    model_fn: see `local.build_client_work`.
    client_optimizer: the clients' optimizer (state reset for every client).
    dataset_fn: round key -> the client's batched training dataset
      (`client_data.build_training_dataset_fn`), run inside the slot.
    objective: the method's local objective (`local`).
    message: values broadcast to every client (`local.WorkState.message`).
    client_weighting: NUM_EXAMPLES or UNIFORM, per real client.
    weights_type, metric_finalizers: the model's `ModelWeights` type and
      `metric_finalizers()` when the caller has them (`compose.
      initial_weights_and_finalizers`); None: from a model built here.

  Returns:
    A `ClientWorkProcess` with the per-client work's state (`local.
    WorkState`) and measurements (`train`, `clients_dropped_non_finite`).
  """
  weighted = local.by_examples(client_weighting)
  if (weights_type is None) != (metric_finalizers is None):
    raise ValueError("weights_type and metric_finalizers go together")
  if weights_type is None:
    with tf.Graph().as_default():
      model = model_fn()
      metric_finalizers = model.metric_finalizers()
    weights_type = tff.learning.models.weights_type_from_model(model)
  metrics_aggregation_fn = tff.learning.metrics.sum_then_finalize(
      metric_finalizers)
  # A ClientWorkProcess takes sequences: a slot is a dataset of round keys
  # (`GroupedTrainingProcess` composes the str[G] -> dataset step).
  keys_type = tff.SequenceType(tff.TensorType(np.str_))

  def slot_update(state, initial_weights, keys):
    model = model_fn()  # Variables are created outside the tf.function.

    def stream(keys):
      # One dataset for the whole slot, (client index, batch) elements: its
      # functions are instantiated once per slot, not once per client.
      def client(i, key):
        return dataset_fn(key).map(lambda batch: (i, batch))
      return keys.enumerate().flat_map(client).with_options(lean_options())

    @tf.function
    def run(state, initial_weights, keys):
      weights = tff.learning.models.ModelWeights.from_model(model)
      client = local.Client(
          tuple(tf.nest.flatten(initial_weights.trainable)),
          tuple(tf.nest.flatten(weights.trainable)), state.message)
      trainable, initial = client.weights, client.start
      specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)
      opt_init = client_optimizer.set_hparams(
          client_optimizer.initialize(specs), state.optimizer_hparams)
      model.reset_metrics()
      metric_structure = model.report_local_unfinalized_metrics()
      # Loop variables are flat tuples (autograph would stack a list).
      zeros = lambda s: tuple(tf.zeros_like(t) for t in tf.nest.flatten(s))
      metrics, total = zeros(metric_structure), zeros(initial)
      weight_sum = tf.constant(0.0, tf.float32)
      dropped = tf.constant(0, tf.int32)
      seen = tf.constant(0, tf.int64)
      current = tf.constant(-1, tf.int64)
      num_examples = tf.constant(0, tf.int64)
      opt_state = opt_init

      def finish(num_examples, total, weight_sum, metrics, dropped):
        """Adds the current client (McMahan et al. 2017, Algorithm 1's
        ClientUpdate result, TFF's non-finite rule) to the slot's sums."""
        delta, non_finite = local.zero_if_non_finite(
            tuple(a - b for a, b in zip(initial, trainable)))
        if weighted:
          w = tf.cast(num_examples, tf.float32)
        else:
          w = tf.constant(1.0, tf.float32)
        w = tf.where(non_finite, 0.0, w)
        if non_finite:  # TFF's rule: a dropped client reports no metrics.
          model.reset_metrics()
        client_metrics = tf.nest.flatten(
            model.report_local_unfinalized_metrics())
        return (tuple(t + w * d for t, d in zip(total, delta)), weight_sum + w,
                tuple(m + c for m, c in zip(metrics, client_metrics)),
                dropped + tf.cast(non_finite, tf.int32))

      for index, batch in iter(stream(keys)):
        # Iterations in order: each reads the variables the previous wrote.
        tf.autograph.experimental.set_loop_options(parallel_iterations=1)
        # (tf.not_equal: `!=` on tensors is Python identity where TF1 tensor
        # equality is in force.)
        if tf.not_equal(index, current):  # A new client: global weights,
          # fresh optimizer state and metrics.
          if current >= 0:
            total, weight_sum, metrics, dropped = finish(
                num_examples, total, weight_sum, metrics, dropped)
          for v, t in zip(tf.nest.flatten(weights), tf.nest.flatten(
              initial_weights)):
            v.assign(t)
          model.reset_metrics()
          opt_state = opt_init
          num_examples = tf.constant(0, tf.int64)
          seen += 1
        opt_state, output = local.step(model, client_optimizer, opt_state,
                                       batch, client, objective)
        num_examples += tf.cast(output.num_examples, tf.int64)
        current = index
      if current >= 0:
        total, weight_sum, metrics, dropped = finish(
            num_examples, total, weight_sum, metrics, dropped)
      if not weighted:  # UNIFORM: a client without data has weight 1.
        clients = keys.reduce(tf.constant(0, tf.int64), lambda c, _: c + 1)
        weight_sum += tf.cast(clients - seen, tf.float32)
      mean = tf.nest.pack_sequence_as(
          initial_weights.trainable,
          [tf.math.divide_no_nan(t, weight_sum) for t in total])
      return (tff.learning.templates.ClientResult(update=mean,
                                                  update_weight=weight_sum),
              tf.nest.pack_sequence_as(metric_structure, list(metrics)),
              dropped)
    return run(state, initial_weights, keys)

  return local.work_process(local.initial_state(client_optimizer, message),
                            slot_update, weights_type, keys_type,
                            metrics_aggregation_fn)


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

  FedAvg's composition (`compose.build_fedavg_process`: the same initial
  weights, broadcast, weighted mean and server optimizer, SGD(1.0) when
  None) over `build_grouped_client_work`, so the state is the ungrouped
  process's.

  Args:
    model_fn, client_optimizer, server_optimizer: as
      `compose.build_fedavg_process`.
    group_size: clients per slot (`methods.groups.resolve_group_size`
      resolves --client_group_size's 'auto').
    objective: the method's local objective (`local`).
    label_counts: its batches carry the client's class counts (FedIR).
    message: values broadcast to every client (`local.WorkState.message`).
  """

  def __init__(self, model_fn, client_optimizer, server_optimizer, *,
               group_size: int, objective: Callable = local.model_loss,
               label_counts: bool = False, message=()):
    if isinstance(group_size, bool) or not isinstance(group_size, int) or \
        group_size < 1:
      raise ValueError(f"group_size must be an integer >= 1, got "
                       f"{group_size!r}")
    self.group_size = group_size
    self._model_fn = model_fn
    self._optimizers = (client_optimizer, server_optimizer)
    self._objective, self._message = objective, message
    self._label_counts = label_counts

  def build_training_process(self, fed_data, spec) -> GroupedTrainingProcess:
    """The grouped process over `fed_data`'s clients built as `spec` says."""
    label_counts = None
    if self._label_counts:
      label_counts = client_data_lib.label_counts_fn(
          fed_data.client_data.client_ids, fed_data.class_counts)
    dataset_fn = client_data_lib.build_training_dataset_fn(
        fed_data.client_data.serializable_dataset_fn, spec,
        fed_data.train_map_fn, label_counts=label_counts)
    client_optimizer, server_optimizer = self._optimizers
    initial_weights_fn, finalizers = compose.initial_weights_and_finalizers(
        self._model_fn)
    work = build_grouped_client_work(
        self._model_fn, client_optimizer, dataset_fn, self._objective,
        message=self._message,
        weights_type=initial_weights_fn.type_signature.result,
        metric_finalizers=finalizers)
    process = compose.build_fedavg_process(
        self._model_fn, work, server_optimizer,
        initial_weights_fn=initial_weights_fn)
    keys_to_dataset = tff.tensorflow.computation(
        lambda keys: tf.data.Dataset.from_tensor_slices(keys),  # pylint: disable=unnecessary-lambda
        tff.TensorType(np.str_, [None]))
    return GroupedTrainingProcess(
        tff.simulation.compose_dataset_computation_with_learning_process(
            keys_to_dataset, process), self.group_size)
