"""FedProx's client work (Li, Sahu, Zaheer, Sanjabi, Talwalkar & Smith 2020,
"Federated Optimization in Heterogeneous Networks", eq. 2).

Client k minimises h_k(w; w^t) = F_k(w) + (mu / 2) ||w - w^t||^2 from the
global weights w^t, so each SGD step uses the gradient
grad F_k(w) + mu (w - w^t).

Why not TFF's: TFF 0.87's `proximal_client_work` (what
`tff.learning.algorithms.build_weighted_fed_prox` composes) adds
mu (w^t - w), the opposite sign, which pushes the client away from the
global model (`tensorflow_federated/python/learning/templates/
proximal_client_work.py`, `lambda x, y: delta_l2_regularizer * (y - x)`
over (current, initial) weights; tests/test_methods.py shows both against
a numpy reference of eq. 2). This client work is TFF's otherwise: model
deltas weighted by examples, a client with a non-finite delta zeroed with
weight 0, its unfinalized metrics summed; its server state is () as TFF's,
and its loop is the clients' `for batch in dataset` loop
(`fedavg.DEFAULT_LOOP`, through `runtime.learning_internals`).
"""

import collections

import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.algorithms import fedavg
from federated_vision.runtime import learning_internals


def proximal_gradients(gradients, trainable, initial, mu: float):
  """Li et al. 2020, eq. 2's gradient: g + mu (w - w^t), leaf by leaf."""
  return tuple(g + mu * (w - w0)
               for g, w, w0 in zip(gradients, trainable, initial))


def build_fedprox_client_work(
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    mu: float,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
    loop_implementation: tff.learning.LoopImplementation = fedavg.DEFAULT_LOOP,
) -> tff.learning.templates.ClientWorkProcess:
  """FedProx's model-delta client work (Li et al. 2020, eq. 2).

  Args:
    model_fn: see `fedavg.build_fedavg`.
    client_optimizer: the clients' optimizer, applied to g + mu (w - w^t).
    mu: the proximal strength >= 0 (0 is FedAvg's client work).
    client_weighting: NUM_EXAMPLES or UNIFORM.
    loop_implementation: the clients' training loop.

  Returns:
    A `tff.learning.templates.ClientWorkProcess` with server state ().
  """
  if not mu >= 0:
    raise ValueError(f"mu must be >= 0, got {mu}")
  fedavg.check_loop_implementation(loop_implementation)
  data_type, weights_type, metrics_aggregation_fn = fedavg.client_types(
      model_fn)
  by_examples = client_weighting == tff.learning.ClientWeighting.NUM_EXAMPLES

  @tff.tensorflow.computation(weights_type, data_type)
  def client_update(initial_weights, dataset):
    model = model_fn()  # Variables are created outside the tf.function.
    loop = learning_internals.build_training_loop(loop_implementation)

    @tf.function
    def update(initial_weights, dataset):
      weights = tff.learning.models.ModelWeights.from_model(model)
      tf.nest.map_structure(lambda v, t: v.assign(t), weights,
                            initial_weights)
      trainable = tuple(tf.nest.flatten(weights.trainable))
      initial = tuple(tf.nest.flatten(initial_weights.trainable))

      def reduce_fn(carry, batch):
        num_examples, opt_state = carry
        with tf.GradientTape() as tape:
          output = model.forward_pass(batch, training=True)
        grads = proximal_gradients(tape.gradient(output.loss, trainable),
                                   trainable, initial, mu)
        opt_state, updated = client_optimizer.next(opt_state, trainable,
                                                   grads)
        for var, value in zip(trainable, updated):
          var.assign(value)
        return (num_examples + tf.cast(output.num_examples, tf.int64),
                opt_state)

      specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)
      num_examples, _ = loop(reduce_fn, dataset, lambda: (
          tf.constant(0, tf.int64), client_optimizer.initialize(specs)))
      delta, non_finite = fedavg.zero_if_non_finite(tf.nest.map_structure(
          tf.subtract, initial_weights.trainable, weights.trainable))
      weight = (tf.cast(num_examples, tf.float32) if by_examples
                else tf.constant(1.0, tf.float32))
      weight = tf.where(non_finite, 0.0, weight)
      return (tff.learning.templates.ClientResult(update=delta,
                                                  update_weight=weight),
              model.report_local_unfinalized_metrics())
    return update(initial_weights, dataset)

  @tff.federated_computation
  def init_fn():
    return tff.federated_value((), tff.SERVER)

  @tff.federated_computation(
      init_fn.type_signature.result,
      tff.FederatedType(weights_type, tff.CLIENTS),
      tff.FederatedType(data_type, tff.CLIENTS))
  def next_fn(state, weights, client_data):
    result, model_outputs = tff.federated_map(client_update,
                                              (weights, client_data))
    measurements = tff.federated_zip(collections.OrderedDict(
        train=metrics_aggregation_fn(model_outputs)))
    return tff.templates.MeasuredProcessOutput(state, result, measurements)

  return tff.learning.templates.ClientWorkProcess(init_fn, next_fn)


def grouped_update(mu: float):
  """FedProx's per-client hook for client groups
  (`client_groups.ClientUpdate`): eq. 2's proximal term on each client's
  gradients, the server state () of `build_fedprox_client_work` (the
  optimizer keeps its initial hyper-parameters), every client's metrics
  reported (as TFF's model-delta works do)."""
  from federated_vision.algorithms import client_groups  # pylint: disable=g-import-not-at-top
  if not mu >= 0:
    raise ValueError(f"mu must be >= 0, got {mu}")
  return client_groups.ClientUpdate(
      state=lambda hparams: (), hparams=None,
      gradients=lambda grads, trainable, initial: proximal_gradients(
          grads, trainable, initial, mu),
      metrics_of_dropped=True)
