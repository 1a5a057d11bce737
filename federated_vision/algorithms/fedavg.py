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
  (`federated_vision.algorithms.fedvc`); the process itself is unchanged.
"""

from typing import Callable, Optional

import numpy as np
import tensorflow_federated as tff

from federated_vision import execution

execution.install_managed_default_context()  # Never TFF's unmanaged worker.

ModelFn = Callable[[], tff.learning.models.VariableModel]

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
    model_aggregator: Optional[tff.aggregators.WeightedAggregationFactory] = None,
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
    client_work: replaces the model-delta client work (FedIR does this).
    model_aggregator: weighted aggregation factory; defaults to
      `tff.aggregators.MeanFactory()`.
    client_weighting: how client deltas are weighted (number of examples by
      default).
    loop_implementation: the clients' training loop (see `DEFAULT_LOOP`); the
      results do not depend on it.

  Returns:
    A `tff.learning.templates.LearningProcess`.
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

  initial_model_weights_fn = build_initial_weights_fn(model_fn)
  weights_type = initial_model_weights_fn.type_signature.result
  distributor = tff.learning.templates.build_broadcast_process(weights_type)
  if client_work is None:
    client_work = tff.learning.templates.build_model_delta_client_work(
        model_fn=model_fn, optimizer=client_optimizer,
        client_weighting=client_weighting,
        loop_implementation=loop_implementation)
  aggregator = (model_aggregator or tff.aggregators.MeanFactory()).create(
      weights_type.trainable, tff.TensorType(np.float32))
  finalizer = tff.learning.templates.build_apply_optimizer_finalizer(
      server_optimizer, weights_type)
  return tff.learning.templates.compose_learning_process(
      initial_model_weights_fn, distributor, client_work, aggregator, finalizer)


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
