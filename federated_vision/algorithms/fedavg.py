"""FedAvg, FedAvgM and FedSGD as composed TFF learning processes.

Every algorithm is `compose_learning_process(initial weights, distributor,
client work, aggregator, finalizer)`; variants swap one component:

* FedAvg (McMahan et al. 2017): model-delta client work, weighted mean
  aggregator, SGD server optimizer (learning rate 1 by default).
* FedAvgM (Hsu, Qi & Brown 2019): FedAvg with a momentum server optimizer.
* FedSGD (McMahan et al. 2017): FedAvg whose clients take one full-batch step
  (the data side sets B = inf, E = 1; see `federated_vision.data.client_data`).
* FedIR (Hsu, Qi & Brown 2020): FedAvg with the importance-weighted client work
  of `federated_vision.algorithms.fedir`.
* FedVC (Hsu, Qi & Brown 2020): FedAvg's process on resampled virtual clients
  (`federated_vision.algorithms.fedvc.build_fedvc`); the process itself is
  unchanged.
* FedProx (Li et al. 2020): FedAvg with the proximal client work of
  `federated_vision.algorithms.fedprox`.
"""

import collections
from typing import Callable, Optional, Union

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

ModelFn = Callable[[], tff.learning.models.VariableModel]
AggregationFactory = Union[tff.aggregators.WeightedAggregationFactory,
                           tff.aggregators.UnweightedAggregationFactory]
# Measurement added to every client work (see `count_dropped_clients`).
DROPPED_NON_FINITE = "clients_dropped_non_finite"

# The clients' SGD loop: `for batch in dataset` (a While loop over iterator
# ops), not TFF's default `dataset.reduce`. A reduce function is a tf.data
# function, which neither TFF's static Grappler pass (it skips tf.data
# functions) nor the worker optimises; there the Identity nodes of inlined
# function boundaries sit between MaxPool and MaxPoolGrad, so oneDNN's layout
# pass cannot pair them and max-pool backward runs in Eigen's slow
# `SpatialMaxPoolWithArgMaxHelper` (13-18% of the worker's CPU on the CIFAR
# CNN). See README, "Performance and multiple workers".
DEFAULT_LOOP = tff.learning.LoopImplementation.DATASET_ITERATOR


def _check_positive(name: str, value: float) -> None:
  if not value > 0:
    raise ValueError(f"{name} must be > 0, got {value}")


def check_loop_implementation(loop_implementation) -> None:
  if not isinstance(loop_implementation, tff.learning.LoopImplementation):
    raise TypeError("loop_implementation must be a tff.learning."
                    f"LoopImplementation, got {loop_implementation!r}")


def zero_if_non_finite(structure):
  """(`structure` zeroed if any value is NaN/inf, whether one was): TFF's
  rule for a client's model delta (`model_delta_client_work`), which every
  client work here follows."""
  flat = tf.nest.flatten(structure)
  finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in flat])
  zeroed = tf.nest.map_structure(
      lambda t: tf.where(finite, t, tf.zeros_like(t)), structure)
  return zeroed, tf.logical_not(finite)


def client_types(model_fn: ModelFn):
  """(client data type, model weights type, metrics aggregation) of a
  client work over `model_fn`'s model (built in a graph of its own, so no
  variable leaks into the caller's)."""
  with tf.Graph().as_default():
    model = model_fn()
    metrics_aggregation_fn = tff.learning.metrics.sum_then_finalize(
        model.metric_finalizers())
  data_type = tff.SequenceType(tff.types.tensorflow_to_type(model.input_spec))
  return (data_type, tff.learning.models.weights_type_from_model(model),
          metrics_aggregation_fn)


def build_initial_weights_fn(model_fn: ModelFn) -> tff.Computation:
  """A TFF computation returning the model's freshly initialised weights."""
  @tff.tensorflow.computation
  def initial_model_weights_fn():
    return tff.learning.models.ModelWeights.from_model(model_fn())
  return initial_model_weights_fn


def build_fedavg(
    model_fn: ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    *,
    client_work: Optional[tff.learning.templates.ClientWorkProcess] = None,
    model_aggregator: Optional[AggregationFactory] = None,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
    loop_implementation: tff.learning.LoopImplementation = DEFAULT_LOOP,
) -> tff.learning.templates.LearningProcess:
  """Builds Federated Averaging (McMahan et al. 2017) by composition.

  Args:
    model_fn: no-arg function returning a fresh
      `tff.learning.models.VariableModel` (see
      `federated_vision.models.build_tff_model_fn`).
    client_optimizer: local optimizer, e.g.
      `tff.learning.optimizers.build_sgdm(learning_rate=0.1)`.
    server_optimizer: applied to the averaged model delta; defaults to SGD with
      learning rate 1 (plain averaging).
    client_work: replaces the model-delta client work (FedIR does this). It
      must follow TFF's convention for a client whose update is non-finite:
      zeroed update, weight 0 (`count_dropped_clients` counts them).
    model_aggregator: a weighted aggregation factory (default
      `tff.aggregators.MeanFactory()`), or an unweighted one such as
      `tff.learning.dp_aggregator(noise_multiplier, clients_per_round)` for
      user-level DP, which requires `client_weighting=UNIFORM` (as TFF's
      `build_unweighted_fed_avg`). An unweighted factory ignores the weights,
      so a client dropped as non-finite enters its mean as a zero update.
    client_weighting: how client deltas are weighted (number of examples by
      default).
    loop_implementation: the clients' training loop (see `DEFAULT_LOOP`); the
      results do not depend on it.

  Returns:
    A `tff.learning.templates.LearningProcess` whose `client_work`
    measurements include `clients_dropped_non_finite`.

  Raises:
    ValueError: an unweighted `model_aggregator` with `NUM_EXAMPLES`
      weighting (the weights would be silently ignored).
  """
  if not callable(model_fn):
    raise TypeError(f"model_fn must be a no-arg callable, got {model_fn!r}")
  if not isinstance(client_optimizer, tff.learning.optimizers.Optimizer):
    raise TypeError("client_optimizer must be a tff.learning.optimizers."
                    f"Optimizer, got {type(client_optimizer).__name__}")
  check_loop_implementation(loop_implementation)
  if server_optimizer is None:
    server_optimizer = tff.learning.optimizers.build_sgdm(learning_rate=1.0)
  if not isinstance(server_optimizer, tff.learning.optimizers.Optimizer):
    raise TypeError("server_optimizer must be a tff.learning.optimizers."
                    f"Optimizer, got {type(server_optimizer).__name__}")

  weighted_aggregator = as_weighted_factory(model_aggregator, client_weighting)

  initial_model_weights_fn = build_initial_weights_fn(model_fn)
  weights_type = initial_model_weights_fn.type_signature.result
  distributor = tff.learning.templates.build_broadcast_process(weights_type)
  if client_work is None:
    client_work = tff.learning.templates.build_model_delta_client_work(
        model_fn=model_fn, optimizer=client_optimizer,
        client_weighting=client_weighting,
        loop_implementation=loop_implementation)
  client_work = count_dropped_clients(client_work, client_weighting)
  return compose_with_fedavg_server(
      initial_model_weights_fn, distributor, client_work, server_optimizer,
      weighted_aggregator)


def compose_with_fedavg_server(
    initial_weights_fn: tff.Computation,
    distributor: tff.learning.templates.DistributionProcess,
    client_work: tff.learning.templates.ClientWorkProcess,
    server_optimizer: tff.learning.optimizers.Optimizer,
    model_aggregator: Optional[AggregationFactory] = None,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
) -> tff.learning.templates.LearningProcess:
  """FedAvg's server side (McMahan et al. 2017, Algorithm 1) composed with a
  distributor and client work: the weighted mean of the clients' model
  deltas (`as_weighted_factory(model_aggregator)`) and a finalizer applying
  `server_optimizer` to it. `build_fedavg` and gradient transfer
  (`mixing_gradient`) share it.
  """
  weights_type = initial_weights_fn.type_signature.result
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
  unweighted one is wrapped with `tff.aggregators.as_weighted_aggregator` and
  is only valid with UNIFORM weighting.

  Args:
    model_aggregator: None (weighted mean), a weighted or an unweighted
      aggregation factory.
    client_weighting: a `tff.learning.ClientWeighting`.

  Returns:
    A `tff.aggregators.WeightedAggregationFactory`.
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
  weight 0; `model_delta_client_work.py`, also FedIR here) without counting
  it. With UNIFORM weighting a kept client has weight 1, so weight 0 means
  dropped. With NUM_EXAMPLES weighting a client without examples also has
  weight 0, so a zero-weight client counts only if its dataset is non-empty
  (read only for zero-weight clients, i.e. almost never).

  Args:
    client_work: a client work following that convention.
    client_weighting: the weighting it was built with.

  Returns:
    The same client work (state, result, hparams), with the count (an int32
    sum over the round's clients) as one more measurement.
  """
  if client_weighting == tff.learning.ClientWeighting.NUM_EXAMPLES:
    read_empty = True
  elif client_weighting == tff.learning.ClientWeighting.UNIFORM:
    read_empty = False
  else:
    raise TypeError(f"client_weighting must be a ClientWeighting, got "
                    f"{client_weighting!r}")
  param_types = client_work.next.type_signature.parameter
  data_type = param_types[2].member
  weight_type = client_work.next.type_signature.result.result.member.update_weight

  @tff.tensorflow.computation(weight_type, data_type)
  def dropped(weight, dataset):
    is_zero = tf.equal(weight, tf.zeros_like(weight))
    if not read_empty:
      return tf.cast(is_zero, tf.int32)
    # An iterator's optional next element, not a reduce: the client graph
    # stays free of ReduceDataset (see `DEFAULT_LOOP`).
    # (In a tf.function, so the iterator is created and initialised there.)
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
    if None in names or DROPPED_NON_FINITE in names:
      raise TypeError("client_work measurements must be a struct with names "
                      f"other than {DROPPED_NON_FINITE}, got "
                      f"{measurements.type_signature}")
    merged = collections.OrderedDict((n, getattr(measurements, n)) for n in names)
    merged[DROPPED_NON_FINITE] = count
    return tff.templates.MeasuredProcessOutput(
        output.state, output.result, tff.federated_zip(merged))

  return tff.learning.templates.ClientWorkProcess(
      client_work.initialize, next_fn,
      get_hparams_fn=client_work.get_hparams,
      set_hparams_fn=client_work.set_hparams)


def build_server_momentum_optimizer(
    learning_rate: float = 1.0,
    momentum: float = 0.9) -> tff.learning.optimizers.Optimizer:
  """SGD with momentum on the pseudo-gradient (Hsu et al. 2019, eq. 2).

  v <- momentum * v + delta;  w <- w - learning_rate * v. The effective
  learning rate is learning_rate / (1 - momentum).
  """
  _check_positive("server_learning_rate", learning_rate)
  if not 0 <= momentum < 1:
    raise ValueError(f"server_momentum must be in [0, 1), got {momentum}")
  return tff.learning.optimizers.build_sgdm(
      learning_rate=learning_rate, momentum=momentum if momentum > 0 else None)


def build_fedavgm(
    model_fn: ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    server_learning_rate: float = 1.0,
    server_momentum: float = 0.9,
    **kwargs,
) -> tff.learning.templates.LearningProcess:
  """FedAvg with server momentum (Hsu, Qi & Brown 2019).

  Identical to `build_fedavg` except for the finalizer's optimizer; with
  `server_momentum=0` and `server_learning_rate=1` it is FedAvg.

  Args:
    model_fn: see `build_fedavg`.
    client_optimizer: see `build_fedavg`.
    server_learning_rate: eta > 0.
    server_momentum: beta in [0, 1).
    **kwargs: passed to `build_fedavg` (client_work, model_aggregator, ...).

  Returns:
    A `tff.learning.templates.LearningProcess`.
  """
  return build_fedavg(
      model_fn, client_optimizer,
      build_server_momentum_optimizer(server_learning_rate, server_momentum),
      **kwargs)


def build_fedsgd(
    model_fn: ModelFn,
    learning_rate: float,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    **kwargs,
) -> tff.learning.templates.LearningProcess:
  """FedSGD (McMahan et al. 2017): one full-batch gradient step per client.

  The process is FedAvg with a client SGD step of `learning_rate`; the server
  averages the clients' deltas -lr * g_k weighted by n_k, i.e. takes one
  gradient step on the selected clients' data. Feed it datasets with
  `TrainingSpec(batch_size=None, epochs=1)` (B = inf, E = 1).

  Args:
    model_fn: see `build_fedavg`.
    learning_rate: the SGD learning rate > 0.
    server_optimizer: defaults to SGD(1.0).
    **kwargs: passed to `build_fedavg`.

  Returns:
    A `tff.learning.templates.LearningProcess`.
  """
  _check_positive("learning_rate", learning_rate)
  return build_fedavg(
      model_fn, tff.learning.optimizers.build_sgdm(learning_rate=learning_rate),
      server_optimizer, **kwargs)
