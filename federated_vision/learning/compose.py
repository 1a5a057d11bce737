"""FedAvg's round as a composed TFF learning process, for every method.

McMahan et al. 2017, Algorithm 1: `compose_learning_process(initial
weights, broadcast, client work, weighted mean, server optimizer)`; a
method swaps one part (design rule 1): its client work (`local.
build_client_work` of its local objective, or a client work of its own),
its server optimizer, its aggregator. `build_fedavg_process` is that
composition; `count_dropped_clients` adds TFF's missing count of dropped
clients to a client work of one's own.
"""

import collections
from typing import Optional, Union

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.learning import local

AggregationFactory = Union[tff.aggregators.WeightedAggregationFactory,
                           tff.aggregators.UnweightedAggregationFactory]


def build_initial_weights_fn(model_fn: local.ModelFn) -> tff.Computation:
  """A TFF computation returning the model's freshly initialised weights."""
  return initial_weights_and_finalizers(model_fn)[0]


def initial_weights_and_finalizers(model_fn: local.ModelFn):
  """(`build_initial_weights_fn(model_fn)`, the model's
  `metric_finalizers()`), from one build of the model: a process whose
  client work needs the finalizers and the weights type builds its model
  once less (a MobileNetV2: ~1.3 CPU-s)."""
  finalizers = []

  @tff.tensorflow.computation
  def initial_model_weights_fn():
    model = model_fn()
    finalizers.append(model.metric_finalizers())
    return tff.learning.models.ModelWeights.from_model(model)
  return initial_model_weights_fn, finalizers[0]


def check_optimizer(name: str, optimizer) -> None:
  if not isinstance(optimizer, tff.learning.optimizers.Optimizer):
    raise TypeError(f"{name} must be a tff.learning.optimizers.Optimizer, got "
                    f"{type(optimizer).__name__}")


def build_fedavg_process(
    model_fn: local.ModelFn,
    client_work: tff.learning.templates.ClientWorkProcess,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    model_aggregator: Optional[AggregationFactory] = None,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
    distributor: Optional[tff.learning.templates.DistributionProcess] = None,
    initial_weights_fn: Optional[tff.Computation] = None,
) -> tff.learning.templates.LearningProcess:
  """FedAvg's composition (McMahan et al. 2017, Algorithm 1) of a client work.

  Args:
    model_fn: no-arg `tff.learning.models.VariableModel` builder.
    client_work: a `ClientWorkProcess` following TFF's rule for a client
      with a non-finite update (zeroed, weight 0); one not built by
      `local.build_client_work` gets `clients_dropped_non_finite` added
      (`count_dropped_clients`).
    server_optimizer: applied to the mean delta; SGD(1.0) (plain averaging)
      when None.
    model_aggregator: a weighted aggregation factory (default
      `tff.aggregators.MeanFactory()`), or an unweighted one (e.g.
      `tff.learning.dp_aggregator`), which needs UNIFORM weighting.
    client_weighting: how client deltas are weighted.
    distributor: replaces the broadcast of the model weights (gradient
      transfer's (w_t, g_c)).
    initial_weights_fn: `build_initial_weights_fn(model_fn)` when the caller
      has built it (`initial_weights_and_finalizers`).

  Returns:
    A `tff.learning.templates.LearningProcess`.
  """
  if server_optimizer is None:
    server_optimizer = tff.learning.optimizers.build_sgdm(learning_rate=1.0)
  check_optimizer("server_optimizer", server_optimizer)
  if not isinstance(client_work, tff.learning.templates.ClientWorkProcess):
    raise TypeError("client_work must be a tff.learning.templates."
                    f"ClientWorkProcess, got {type(client_work).__name__}")
  measured = client_work.next.type_signature.result.measurements.member
  if local.DROPPED_NON_FINITE not in tff.structure.name_list(measured):
    client_work = count_dropped_clients(client_work, client_weighting)
  initial_weights_fn = initial_weights_fn or build_initial_weights_fn(model_fn)
  weights_type = initial_weights_fn.type_signature.result
  if distributor is None:
    distributor = tff.learning.templates.build_broadcast_process(weights_type)
  aggregator = as_weighted_factory(model_aggregator, client_weighting).create(
      weights_type.trainable, tff.TensorType(np.float32))
  finalizer = tff.learning.templates.build_apply_optimizer_finalizer(
      server_optimizer, weights_type)
  return tff.learning.templates.compose_learning_process(
      initial_weights_fn, distributor, client_work, aggregator, finalizer)


def as_weighted_factory(
    model_aggregator: Optional[AggregationFactory],
    client_weighting: tff.learning.ClientWeighting,
) -> tff.aggregators.WeightedAggregationFactory:
  """The weighted factory composition needs, validating the combination.

  As TFF's `build_weighted_fed_avg` / `build_unweighted_fed_avg`: a weighted
  factory is used as is (with UNIFORM weighting every weight is 1); an
  unweighted one is wrapped with `tff.aggregators.as_weighted_aggregator`
  and is only valid with UNIFORM weighting (else the weights would be
  silently ignored: ValueError).
  """
  if not isinstance(client_weighting, tff.learning.ClientWeighting):
    raise TypeError("client_weighting must be a tff.learning.ClientWeighting, "
                    f"got {client_weighting!r}")
  if model_aggregator is None:
    return tff.aggregators.MeanFactory()
  if isinstance(model_aggregator, tff.aggregators.WeightedAggregationFactory):
    return model_aggregator
  if isinstance(model_aggregator, tff.aggregators.UnweightedAggregationFactory):
    if client_weighting != tff.learning.ClientWeighting.UNIFORM:
      raise ValueError(
          f"model_aggregator {type(model_aggregator).__name__} is unweighted "
          f"and would ignore client_weighting={client_weighting.name}; pass "
          "client_weighting=tff.learning.ClientWeighting.UNIFORM or a "
          "weighted aggregation factory")
    return tff.aggregators.as_weighted_aggregator(model_aggregator)
  raise TypeError("model_aggregator must be a tff.aggregators.Weighted- or "
                  "UnweightedAggregationFactory, got "
                  f"{type(model_aggregator).__name__}")


def count_dropped_clients(
    client_work: tff.learning.templates.ClientWorkProcess,
    client_weighting: tff.learning.ClientWeighting,
) -> tff.learning.templates.ClientWorkProcess:
  """Adds `clients_dropped_non_finite` to a client work's measurements.

  TFF 0.87 drops a client whose model delta has a NaN/inf (update zeroed,
  weight 0; `model_delta_client_work.py`) without counting it. With UNIFORM
  weighting a kept client has weight 1, so weight 0 means dropped. With
  NUM_EXAMPLES weighting a client without examples also has weight 0, so a
  zero-weight client counts only if its dataset is non-empty (read only for
  zero-weight clients, i.e. almost never).

  Returns:
    The same client work (state, result, hparams), with the count (an int32
    sum over the round's clients) as one more measurement.
  """
  read_empty = local.by_examples(client_weighting)
  param_types = client_work.next.type_signature.parameter
  data_type = param_types[2].member
  weight_type = client_work.next.type_signature.result.result.member.update_weight

  @tff.tensorflow.computation(weight_type, data_type)
  def dropped(weight, dataset):
    is_zero = tf.equal(weight, tf.zeros_like(weight))
    if not read_empty:
      return tf.cast(is_zero, tf.int32)
    # An iterator's optional next element, not a reduce: the client graph
    # stays free of ReduceDataset (see `local.DEFAULT_LOOP`).
    @tf.function
    def has_element(ds):
      return tf.cast(iter(ds).get_next_as_optional().has_value(), tf.int32)
    nonempty = lambda: has_element(dataset)
    return tf.cond(is_zero, nonempty, lambda: tf.constant(0, tf.int32))

  @tff.federated_computation(*list(param_types))
  def next_fn(state, weights, data):
    output = client_work.next(state, weights, data)
    count = tff.federated_sum(
        tff.federated_map(dropped, (output.result.update_weight, data)))
    measurements = output.measurements
    names = tff.structure.name_list_with_nones(
        measurements.type_signature.member)
    if None in names:
      raise TypeError("client_work measurements must be a struct with "
                      f"names, got {measurements.type_signature}")
    merged = collections.OrderedDict((n, getattr(measurements, n)) for n in names)
    merged[local.DROPPED_NON_FINITE] = count
    return tff.templates.MeasuredProcessOutput(
        output.state, output.result, tff.federated_zip(merged))

  return tff.learning.templates.ClientWorkProcess(
      client_work.initialize, next_fn,
      get_hparams_fn=client_work.get_hparams,
      set_hparams_fn=client_work.set_hparams)
