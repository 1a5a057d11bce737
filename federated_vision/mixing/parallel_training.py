"""Parallel training (Augenstein et al., Algorithm 2) as a LearningProcess.

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews),
Algorithm 2: from w_t, one FedAvg round on the selected clients gives w_fed
and K SGD steps on centralized batches give w_central;
w_{t+1} = a w_fed + (1 - a) w_central.

Reproducibility: the centralized data of round r depends only on (seed, r) —
the round number is part of the server state (LearningProcess.next takes
exactly (state, client data), so it cannot be a `next` argument) and the
batches are built in-graph from it inside the executor. A resumed run
therefore sees exactly the batches of an uninterrupted one.
"""

import collections
from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.learning import compose
from federated_vision.algorithms import fedavg
from federated_vision.learning import local
from federated_vision.mixing import central_data


class ParallelTrainingState(NamedTuple):
  """Server state of parallel training (immutable).

  Attributes:
    fedavg: the state of the FedAvg process it wraps (a
      `tff.learning.templates.LearningAlgorithmState`).
    round_num: rounds done; round r's centralized batches come from
      (seed, r).
  """
  fedavg: Any
  round_num: Any


def _merge_computation(weights_type, merge_weight: float):
  @tff.tensorflow.computation(weights_type, weights_type)
  def merge(fed, central):
    def mix(f, c):
      if not f.dtype.is_floating:
        return f
      return merge_weight * f + (1.0 - merge_weight) * c
    return tf.nest.map_structure(mix, fed, central)
  return merge


def build_parallel_training(
    model_fn: local.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    central: central_data.CentralizedData,
    *,
    merge_weight: float = 0.5,
    central_steps: int = 1,
    central_batch_size: int = 32,
    central_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    seed: int = 0,
    **fedavg_kwargs,
) -> tff.learning.templates.LearningProcess:
  """Synchronous parallel training (Augenstein et al., Algorithm 2).

  Each round, from the same w_t: FedAvg's round on the selected clients gives
  w_fed (including the server optimizer, so FedAvgM's momentum works), and K
  steps of `central_optimizer` on centralized batches give w_central; then
  w_{t+1} = a * w_fed + (1 - a) * w_central (floating weights; a = 1 is
  FedAvg, a = 0 is K centralized steps per round). The K x B centralized
  examples of round r are drawn from (seed, r) with
  `central_data.central_batches`; the central optimizer state is fresh each
  round, like a client's.

  Written as a LearningProcess wrapping FedAvg's rather than by
  `compose_learning_process`: the composition has no slot for a server-side
  training step that starts from w_t and is merged after the finalizer.

  Args:
    model_fn: see `fedavg.build_fedavg`.
    client_optimizer: local optimizer.
    central: the server's examples.
    merge_weight: a in [0, 1], the weight of the federated model.
    central_steps: K >= 1.
    central_batch_size: centralized batch size >= 1.
    central_optimizer: the server's SGD for the K steps; defaults to
      `client_optimizer`.
    server_optimizer: FedAvg's server optimizer (SGD(1) by default; pass
      `fedavg.build_server_momentum_optimizer(...)` for FedAvgM).
    seed: the run's seed (centralized batch sampling).
    **fedavg_kwargs: passed to `fedavg.build_fedavg` (client_work for FedIR,
      model_aggregator, client_weighting).

  Returns:
    A `tff.learning.templates.LearningProcess` whose state is a
    `ParallelTrainingState` and whose metrics add 'central' (loss, examples).
  """
  central_data.check_central(central)
  if not 0.0 <= merge_weight <= 1.0:
    raise ValueError(f"merge_weight must be in [0, 1], got {merge_weight}")
  central_data.check_int("central_steps", central_steps, 1)
  central_data.check_int("central_batch_size", central_batch_size, 1)
  central_optimizer = central_optimizer or client_optimizer
  compose.check_optimizer("central_optimizer", central_optimizer)
  weights_type = local.weights_type_of(model_fn)

  @tff.tensorflow.computation(weights_type, tf.int64)
  def central_training(initial_weights, round_num):
    model = model_fn()
    data = central_data.central_batches(central, round_num, seed,
                                        central_steps, central_batch_size)

    @tf.function
    def train(initial_weights, data):
      """K steps of `local.step` (the model's loss) from w_t."""
      weights = tff.learning.models.ModelWeights.from_model(model)
      tf.nest.map_structure(lambda v, t: v.assign(t), weights,
                            initial_weights)
      trainable = tuple(tf.nest.flatten(weights.trainable))
      specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)
      num_examples, loss_sum, _ = local.train(
          model, central_optimizer, central_optimizer.initialize(specs), data,
          local.Client(tuple(tf.nest.flatten(initial_weights.trainable)),
                       trainable))
      return weights, central_data.central_metrics(num_examples, loss_sum)
    return train(initial_weights, data)

  inner = fedavg.build_fedavg(model_fn, client_optimizer, server_optimizer,
                              **fedavg_kwargs)
  merge = _merge_computation(weights_type, float(merge_weight))

  @tff.tensorflow.computation(tf.int64)
  def increment(round_num):
    return round_num + 1

  @tff.federated_computation
  def init_fn():
    return tff.federated_zip(ParallelTrainingState(
        inner.initialize(),
        tff.federated_value(np.int64(0), tff.SERVER)))

  state_type = init_fn.type_signature.result

  @tff.federated_computation(state_type, inner.next.type_signature.parameter[1])
  def next_fn(state, client_data):
    round_num = tff.federated_map(increment, state.round_num)
    start = state.fedavg.global_model_weights
    fed = inner.next(state.fedavg, client_data)
    central_out = tff.federated_map(central_training, (start, round_num))
    merged = tff.federated_map(
        merge, (fed.state.global_model_weights, central_out[0]))
    new_fedavg = tff.federated_map(inner.set_model_weights, (fed.state, merged))
    metrics = collections.OrderedDict(
        (name, getattr(fed.metrics, name)) for name in
        ("distributor", "client_work", "aggregator", "finalizer"))
    metrics["central"] = central_out[1]
    return tff.learning.templates.LearningProcessOutput(
        tff.federated_zip(ParallelTrainingState(new_fedavg, round_num)),
        tff.federated_zip(metrics))

  member_type = state_type.member

  @tff.tensorflow.computation(member_type)
  def get_model_weights(state):
    return state.fedavg.global_model_weights

  @tff.tensorflow.computation(member_type, weights_type)
  def set_model_weights(state, weights):
    return ParallelTrainingState(
        state.fedavg._replace(global_model_weights=weights), state.round_num)

  return tff.learning.templates.LearningProcess(
      init_fn, next_fn, get_model_weights, set_model_weights)
