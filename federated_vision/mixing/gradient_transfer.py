"""Gradient transfer (Augenstein et al., Algorithm 4) as a composed process.

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews),
Algorithm 4: the server computes g_c on one centralized batch at w_t and
broadcasts it with the model; every local step uses g_k + lambda g_c.

Round r's centralized batch depends only on (seed, r): the round number is
the distributor's state, so a resumed run sees the batches of an
uninterrupted one.
"""

from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.learning import compose
from federated_vision.learning import local
from federated_vision.mixing import central_data


class GradientTransferBroadcast(NamedTuple):
  """What the server broadcasts in gradient transfer: w_t and g_c."""
  weights: Any
  central_gradient: Any


def build_central_gradient_distributor(
    model_fn: local.ModelFn, central: central_data.CentralizedData,
    central_batch_size: int, seed: int = 0,
) -> tff.learning.templates.DistributionProcess:
  """Broadcasts (w_t, g_c): g_c = grad of the loss at w_t on one central batch.

  The state is the round number (round r's batch is drawn from (seed, r));
  measurements are the central batch's loss and size.
  """
  central_data.check_central(central)
  central_data.check_int("central_batch_size", central_batch_size, 1)
  weights_type = local.weights_type_of(model_fn)

  @tff.tensorflow.computation(weights_type, tf.int64)
  def central_gradient(weights, round_num):
    model = model_fn()
    batch = central_data.central_batches(
        central, round_num, seed, 1, central_batch_size).get_single_element()

    @tf.function
    def gradient():
      model_weights = tff.learning.models.ModelWeights.from_model(model)
      tf.nest.map_structure(lambda v, t: v.assign(t), model_weights, weights)
      output, grads = local.loss_gradients(
          model, batch, local.Client((), tuple(model_weights.trainable)))
      n = tf.cast(output.num_examples, tf.int64)
      return list(grads), central_data.central_metrics(
          n, output.loss * tf.cast(n, tf.float32))
    return gradient()

  @tff.tensorflow.computation(tf.int64)
  def increment(round_num):
    return round_num + 1

  @tff.federated_computation
  def init_fn():
    return tff.federated_value(np.int64(0), tff.SERVER)

  @tff.federated_computation(init_fn.type_signature.result,
                             tff.FederatedType(weights_type, tff.SERVER))
  def next_fn(round_num, weights):
    round_num = tff.federated_map(increment, round_num)
    out = tff.federated_map(central_gradient, (weights, round_num))
    payload = tff.federated_zip(GradientTransferBroadcast(weights, out[0]))
    return tff.templates.MeasuredProcessOutput(
        round_num, tff.federated_broadcast(payload), out[1])

  return tff.learning.templates.DistributionProcess(init_fn, next_fn)


def transferred_gradient(gradient_weight: float):
  """Algorithm 4's local objective: the model's loss, with the gradient
  term lambda g_c (`client.message['central_gradient']`)."""
  def objective(output, batch, client):
    del batch
    return output.loss, [gradient_weight * tf.cast(g, w.dtype) for g, w in zip(
        tf.nest.flatten(client.message["central_gradient"]), client.weights)]
  return objective


def build_gradient_transfer_client_work(
    model_fn: local.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    gradient_type: tff.Type,
    gradient_weight: float = 1.0,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
) -> tff.learning.templates.ClientWorkProcess:
  """FedAvg's model-delta client work stepping along g_k + lambda g_c
  (`local.build_client_work` of `transferred_gradient`).

  Its weights input is a `GradientTransferBroadcast` (w_t, g_c) at clients.
  With lambda = 0 it is FedAvg's client work.
  """
  compose.check_optimizer("client_optimizer", client_optimizer)
  weights_type = local.weights_type_of(model_fn)
  broadcast_type = tff.types.to_type(
      GradientTransferBroadcast(weights_type, gradient_type))
  return local.build_client_work(
      model_fn, client_optimizer, transferred_gradient(gradient_weight),
      broadcast_type=broadcast_type, client_weighting=client_weighting)


def build_gradient_transfer(
    model_fn: local.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    central: central_data.CentralizedData,
    *,
    gradient_weight: float = 1.0,
    central_batch_size: int = 32,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    seed: int = 0,
    model_aggregator: Optional[tff.aggregators.WeightedAggregationFactory] = None,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
) -> tff.learning.templates.LearningProcess:
  """Gradient transfer (Augenstein et al., Algorithm 4), composed.

  FedAvg's composition with two components swapped: the distributor computes
  g_c once per round at the server (on one centralized batch drawn from
  (seed, r), at the round's starting weights w_t) and broadcasts (w_t, g_c);
  the client work steps along g_k + lambda g_c at every local step. The
  aggregator and finalizer are FedAvg's, so any server optimizer (FedAvgM)
  works. Clients send nothing beyond FedAvg's update.

  Args:
    model_fn: see `fedavg.build_fedavg`.
    client_optimizer: local optimizer.
    central: the server's examples.
    gradient_weight: lambda >= 0 (0 is FedAvg).
    central_batch_size: size of the batch g_c is computed on.
    server_optimizer: SGD(1) by default.
    seed: the run's seed (centralized batch sampling).
    model_aggregator: weighted aggregation factory (mean by default).
    client_weighting: client delta weighting.

  Returns:
    A `tff.learning.templates.LearningProcess`; its distributor state is the
    round number and its distributor metrics the central batch's loss.
  """
  if not gradient_weight >= 0:
    raise ValueError(f"gradient_weight must be >= 0, got {gradient_weight}")
  compose.check_optimizer("client_optimizer", client_optimizer)
  if server_optimizer is None:
    server_optimizer = tff.learning.optimizers.build_sgdm(learning_rate=1.0)
  compose.check_optimizer("server_optimizer", server_optimizer)
  weights_type = local.weights_type_of(model_fn)
  distributor = build_central_gradient_distributor(
      model_fn, central, central_batch_size, seed)
  client_work = build_gradient_transfer_client_work(
      model_fn, client_optimizer, weights_type.trainable,
      float(gradient_weight), client_weighting)
  return compose.build_fedavg_process(
      model_fn, client_work, server_optimizer,
      model_aggregator=model_aggregator, client_weighting=client_weighting,
      distributor=distributor)
