"""Mixing federated and centralized data (Augenstein et al.), as LearningProcesses.

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews) modifies
FedAvg (their Algorithm 1) in three ways, all keeping client data on clients:

* parallel training (Algorithm 2, `build_parallel_training`): from w_t, one
  FedAvg round on the selected clients gives w_fed and K SGD steps on
  centralized batches give w_central; w_{t+1} = a w_fed + (1 - a) w_central.
* example transfer (Algorithm 3): each selected client trains FedAvg's client
  update on its own examples shuffled with M centralized ones. Only the data
  changes, so the process is FedAvg's (`fedavg.build_fedavg`) and the strategy
  is `mixing_data.example_transfer_data`.
* gradient transfer (Algorithm 4, `build_gradient_transfer`): the server
  computes g_c on one centralized batch at w_t and broadcasts it with the
  model; every local step uses g_k + lambda g_c.

Baselines: no mixing (FedAvg on the federated data) and the oracle (FedAvg on
`mixing_data.recombined_data`, every centralized example handed back to its
client). `build_mixing_method` builds any of the five, with FedAvgM's server
optimizer, FedIR's client work and FedVC's virtual clients where they make
sense (see `check_combination`).

Reproducibility: the centralized data of round r depends only on (seed, r) —
the round number is part of the server state (LearningProcess.next takes
exactly (state, client data), so it cannot be a `next` argument) and the
batches are built in-graph from it inside the executor. A resumed run
therefore sees exactly the batches of an uninterrupted one.
"""

import collections
import functools
from typing import Any, Dict, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import mixing_settings
from federated_vision.algorithms import fedavg
from federated_vision.algorithms import fedir as fedir_lib
from federated_vision.algorithms import mixing_data
from federated_vision.algorithms import sampling
from federated_vision.data import client_data as client_data_lib
from federated_vision.data import mixing_scenarios

NONE = "none"
PARALLEL = "parallel"
EXAMPLE_TRANSFER = "example_transfer"
GRADIENT_TRANSFER = "gradient_transfer"
ORACLE = "oracle"
STRATEGIES = mixing_settings.MIXING_STRATEGIES
assert STRATEGIES == (NONE, PARALLEL, EXAMPLE_TRANSFER, GRADIENT_TRANSFER, ORACLE)


def _check_optimizer(name: str, optimizer) -> None:
  if not isinstance(optimizer, tff.learning.optimizers.Optimizer):
    raise TypeError(f"{name} must be a tff.learning.optimizers.Optimizer, got "
                    f"{type(optimizer).__name__}")


def _check_central(central) -> None:
  if not isinstance(central, mixing_data.CentralizedData):
    raise TypeError("central must be a mixing_data.CentralizedData, got "
                    f"{type(central).__name__}")
  central.validate()


def _check_int(name: str, value, minimum: int) -> None:
  if not isinstance(value, (int, np.integer)) or value < minimum:
    raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _local_sgd(model, optimizer, hparams, initial_weights, dataset,
               correction=None, correction_weight: float = 0.0):
  """SGD steps over `dataset` from `initial_weights` (a traced tf.function body).

  Each step applies `optimizer` to grad(loss) + correction_weight * correction
  (gradient transfer's g_k + lambda g_c; plain FedAvg when correction is None).

  Returns:
    (model weights after training, examples seen, sum of batch loss x batch
    examples).
  """
  weights = tff.learning.models.ModelWeights.from_model(model)
  tf.nest.map_structure(lambda v, t: v.assign(t), weights, initial_weights)
  trainable = tuple(tf.nest.flatten(weights.trainable))
  extra = None if correction is None else tuple(
      correction_weight * tf.cast(c, v.dtype)
      for c, v in zip(tf.nest.flatten(correction), trainable))

  def reduce_fn(carry, batch):
    num_examples, loss_sum, opt_state = carry
    with tf.GradientTape() as tape:
      output = model.forward_pass(batch, training=True)
    grads = tape.gradient(output.loss, trainable)
    if extra is not None:
      grads = tuple(g + e for g, e in zip(grads, extra))
    opt_state, updated = optimizer.next(opt_state, trainable, grads)
    for var, value in zip(trainable, updated):
      var.assign(value)
    n = tf.cast(output.num_examples, tf.int64)
    return (num_examples + n, loss_sum + output.loss * tf.cast(n, tf.float32),
            opt_state)

  specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)
  opt_state = optimizer.initialize(specs)
  if hparams is not None:
    opt_state = optimizer.set_hparams(opt_state, hparams)
  num_examples, loss_sum, _ = dataset.reduce(
      (tf.constant(0, tf.int64), tf.constant(0.0), opt_state), reduce_fn)
  return weights, num_examples, loss_sum


def _central_metrics(num_examples, loss_sum):
  return collections.OrderedDict(
      loss=tf.math.divide_no_nan(loss_sum, tf.cast(num_examples, tf.float32)),
      num_examples=num_examples)


def _weights_type(model_fn) -> tff.Type:
  return fedavg.build_initial_weights_fn(model_fn).type_signature.result


# --- parallel training (Algorithm 2) ----------------------------------------

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
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    central: mixing_data.CentralizedData,
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
  `mixing_data.central_batches`; the central optimizer state is fresh each
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
  _check_central(central)
  if not 0.0 <= merge_weight <= 1.0:
    raise ValueError(f"merge_weight must be in [0, 1], got {merge_weight}")
  _check_int("central_steps", central_steps, 1)
  _check_int("central_batch_size", central_batch_size, 1)
  central_optimizer = central_optimizer or client_optimizer
  _check_optimizer("central_optimizer", central_optimizer)
  inner = fedavg.build_fedavg(model_fn, client_optimizer, server_optimizer,
                              **fedavg_kwargs)
  weights_type = _weights_type(model_fn)

  @tff.tensorflow.computation(weights_type, tf.int64)
  def central_training(initial_weights, round_num):
    model = model_fn()
    data = mixing_data.central_batches(central, round_num, seed, central_steps,
                                       central_batch_size)
    train = tf.function(functools.partial(
        _local_sgd, model, central_optimizer, None))
    weights, num_examples, loss_sum = train(initial_weights, data)
    return weights, _central_metrics(num_examples, loss_sum)

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


# --- gradient transfer (Algorithm 4) ----------------------------------------

class GradientTransferBroadcast(NamedTuple):
  """What the server broadcasts in gradient transfer: w_t and g_c."""
  weights: Any
  central_gradient: Any


def build_central_gradient_distributor(
    model_fn: fedavg.ModelFn, central: mixing_data.CentralizedData,
    central_batch_size: int, seed: int = 0,
) -> tff.learning.templates.DistributionProcess:
  """Broadcasts (w_t, g_c): g_c = grad of the loss at w_t on one central batch.

  The state is the round number (round r's batch is drawn from (seed, r));
  measurements are the central batch's loss and size.
  """
  _check_central(central)
  _check_int("central_batch_size", central_batch_size, 1)
  weights_type = _weights_type(model_fn)

  @tff.tensorflow.computation(weights_type, tf.int64)
  def central_gradient(weights, round_num):
    model = model_fn()
    batch = mixing_data.central_batches(
        central, round_num, seed, 1, central_batch_size).get_single_element()

    @tf.function
    def gradient():
      model_weights = tff.learning.models.ModelWeights.from_model(model)
      tf.nest.map_structure(lambda v, t: v.assign(t), model_weights, weights)
      with tf.GradientTape() as tape:
        output = model.forward_pass(batch, training=True)
      grads = tape.gradient(output.loss, model_weights.trainable)
      n = tf.cast(output.num_examples, tf.int64)
      return grads, _central_metrics(n, output.loss * tf.cast(n, tf.float32))
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


def build_gradient_transfer_client_work(
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    gradient_type: tff.Type,
    gradient_weight: float = 1.0,
    client_weighting: tff.learning.ClientWeighting = tff.learning.ClientWeighting.NUM_EXAMPLES,
) -> tff.learning.templates.ClientWorkProcess:
  """FedAvg's model-delta client work stepping along g_k + lambda g_c.

  Its weights input is a `GradientTransferBroadcast` (w_t, g_c) at clients.
  With lambda = 0 it is TFF's model-delta client work; the update and weight
  (examples trained on, or 1 for UNIFORM) are zeroed if any delta is
  non-finite. The state is the client optimizer's hyper-parameters.
  """
  _check_optimizer("client_optimizer", client_optimizer)
  with tf.Graph().as_default():
    model = model_fn()
    metrics_aggregation_fn = tff.learning.metrics.sum_then_finalize(
        model.metric_finalizers())
  data_type = tff.SequenceType(tff.types.tensorflow_to_type(model.input_spec))
  weights_type = tff.learning.models.weights_type_from_model(model)
  broadcast_type = tff.types.to_type(
      GradientTransferBroadcast(weights_type, gradient_type))
  hparams = client_optimizer.get_hparams(
      client_optimizer.initialize(tf.TensorSpec([], tf.float32)))

  @tff.federated_computation
  def init_fn():
    return tff.federated_value(hparams, tff.SERVER)

  state_type = init_fn.type_signature.result.member

  @tff.tensorflow.computation(state_type, broadcast_type, data_type)
  def client_update(optimizer_hparams, broadcast, dataset):
    model = model_fn()

    @tf.function
    def update():
      weights, num_examples, _ = _local_sgd(
          model, client_optimizer, optimizer_hparams, broadcast.weights,
          dataset, broadcast.central_gradient, gradient_weight)
      delta = tf.nest.map_structure(tf.subtract, broadcast.weights.trainable,
                                    weights.trainable)
      delta, non_finite = fedir_lib._zero_if_non_finite(delta)  # pylint: disable=protected-access
      if client_weighting == tff.learning.ClientWeighting.NUM_EXAMPLES:
        weight = tf.cast(num_examples, tf.float32)
      else:
        weight = tf.constant(1.0, tf.float32)
      return (tff.learning.templates.ClientResult(
          update=delta, update_weight=tf.where(non_finite, 0.0, weight)),
              model.report_local_unfinalized_metrics())
    return update()

  @tff.federated_computation(init_fn.type_signature.result,
                             tff.FederatedType(broadcast_type, tff.CLIENTS),
                             tff.FederatedType(data_type, tff.CLIENTS))
  def next_fn(state, broadcast, client_data):
    result, model_outputs = tff.federated_map(
        client_update, (tff.federated_broadcast(state), broadcast, client_data))
    measurements = tff.federated_zip(collections.OrderedDict(
        train=metrics_aggregation_fn(model_outputs)))
    return tff.templates.MeasuredProcessOutput(state, result, measurements)

  return tff.learning.templates.ClientWorkProcess(init_fn, next_fn)


def build_gradient_transfer(
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    central: mixing_data.CentralizedData,
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
  _check_optimizer("client_optimizer", client_optimizer)
  if server_optimizer is None:
    server_optimizer = tff.learning.optimizers.build_sgdm(learning_rate=1.0)
  _check_optimizer("server_optimizer", server_optimizer)
  initial_weights_fn = fedavg.build_initial_weights_fn(model_fn)
  weights_type = initial_weights_fn.type_signature.result
  distributor = build_central_gradient_distributor(
      model_fn, central, central_batch_size, seed)
  client_work = build_gradient_transfer_client_work(
      model_fn, client_optimizer, weights_type.trainable,
      float(gradient_weight), client_weighting)
  aggregator = (model_aggregator or tff.aggregators.MeanFactory()).create(
      weights_type.trainable, tff.TensorType(np.float32))
  finalizer = tff.learning.templates.build_apply_optimizer_finalizer(
      server_optimizer, weights_type)
  return tff.learning.templates.compose_learning_process(
      initial_weights_fn, distributor, client_work, aggregator, finalizer)


# --- payload ----------------------------------------------------------------

def tensor_bytes(type_spec: tff.Type) -> int:
  """Bytes of all tensors in a TFF type (fully defined shapes)."""
  total = 0
  for tensor_type in _tensor_types(type_spec):
    shape = tensor_type.shape
    if shape is None or any(d is None for d in shape):
      raise ValueError(f"tensor {tensor_type} has no fixed byte size")
    size = int(np.prod(shape, dtype=np.int64))
    total += size * np.dtype(tensor_type.dtype).itemsize
  return total


def _tensor_types(type_spec):
  if isinstance(type_spec, tff.TensorType):
    yield type_spec
  elif isinstance(type_spec, tff.StructType):
    for _, member in tff.structure.iter_elements(type_spec):
      yield from _tensor_types(member)
  else:
    raise TypeError(f"not a tensor structure: {type_spec}")


def model_trainable_bytes(model_fn: fedavg.ModelFn) -> int:
  """Bytes of one model's trainable weights (gradient transfer's g_c)."""
  return tensor_bytes(_weights_type(model_fn).trainable)


def extra_broadcast_bytes(strategy: str, *, clients_per_round: int,
                          examples_per_client: int = 0,
                          bytes_per_example: int = 0,
                          model_bytes: int = 0) -> int:
  """Bytes the server broadcasts per round beyond the model.

  example transfer: M x clients x bytes per example (each client gets its own
  M examples); gradient transfer: one model's trainable size (g_c, broadcast
  to all clients, counted once like the model); parallel training, no mixing
  and the oracle: 0. Clients never send anything extra.
  """
  check_strategy(strategy)
  if strategy == EXAMPLE_TRANSFER:
    return int(examples_per_client) * int(clients_per_round) * int(bytes_per_example)
  if strategy == GRADIENT_TRANSFER:
    return int(model_bytes)
  return 0


# --- one entry point --------------------------------------------------------

def check_strategy(strategy: str) -> None:
  if strategy not in STRATEGIES:
    raise ValueError(f"mixing strategy must be one of {', '.join(STRATEGIES)}; "
                     f"got {strategy!r}")


def check_combination(strategy: str, fedir: bool, fedvc: bool) -> None:
  """Refuses strategy x (FedIR, FedVC) combinations that have no single
  meaning (gradient transfer + FedIR, example transfer + FedVC; see
  `mixing_settings.check_mixing_combination`, which states the rules once)."""
  check_strategy(strategy)
  mixing_settings.check_mixing_combination(
      strategy, "fedavg", ("fedir",) * fedir + ("fedvc",) * fedvc)


_DEFAULTS = mixing_settings.MixingSettings()  # The flags' defaults, stated once.


class MixingConfig(NamedTuple):
  """Hyper-parameters of the strategies (plain data, e.g. from flags).

  Attributes:
    merge_weight: parallel training's a in [0, 1].
    central_steps: parallel training's K.
    central_batch_size: centralized batch size (parallel, gradient transfer).
    central_learning_rate: SGD learning rate of parallel training's K steps;
      None uses the client optimizer.
    examples_per_client: example transfer's M.
    gradient_weight: gradient transfer's lambda.
  """
  merge_weight: float = _DEFAULTS.merge_weight
  central_steps: int = _DEFAULTS.central_steps
  central_batch_size: int = _DEFAULTS.central_batch_size
  central_learning_rate: Optional[float] = _DEFAULTS.central_learning_rate
  examples_per_client: int = _DEFAULTS.central_examples_per_client
  gradient_weight: float = _DEFAULTS.gradient_weight


class MixingMethod(NamedTuple):
  """Everything the training loop needs to run one strategy.

  Attributes:
    name: e.g. 'parallel' or 'gradient_transfer+fedvc'.
    process: the learning process.
    fed_data: the data the loop trains on (the oracle's recombined data,
      example transfer's mixed data, or the federated data unchanged).
    spec: client training spec (FedVC's N_VC set when used).
    sampler: has `round_keys(round_num)`.
    extra_broadcast_bytes: per round, beyond the model (`extra_broadcast_bytes`).
    settings: resolved settings for hparams/summary files.
  """
  name: str
  process: tff.learning.templates.LearningProcess
  fed_data: client_data_lib.FederatedDataset
  spec: client_data_lib.TrainingSpec
  sampler: Any
  extra_broadcast_bytes: int
  settings: Dict[str, object]


def build_mixing_method(
    strategy: str,
    *,
    fed_data: client_data_lib.FederatedDataset,
    central: mixing_data.CentralizedData,
    model_fn: fedavg.ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    spec: client_data_lib.TrainingSpec,
    clients_per_round: int,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
    config: MixingConfig = MixingConfig(),
    fedir: bool = False,
    fedir_target_distribution: Optional[Sequence[float]] = None,
    virtual_client_size: Optional[int] = None,
) -> MixingMethod:
  """Builds one of the five strategies as (process, data, spec, sampler, bytes).

  Args:
    strategy: one of `STRATEGIES`.
    fed_data: the federated data (clients lacking what `central` covers).
    central: the server's examples.
    model_fn: TFF model builder over the batched {'x', 'y'} datasets of `spec`.
    client_optimizer: local optimizer.
    spec: client training spec; its seed is the run's seed (sampling of
      clients and of centralized examples).
    clients_per_round: clients (FedVC: virtual clients) per round.
    server_optimizer: SGD(1) when None; a momentum optimizer gives FedAvgM.
    config: the strategies' hyper-parameters.
    fedir: use FedIR's client work (Hsu, Qi & Brown 2020).
    fedir_target_distribution: FedIR's p(y); uniform when None.
    virtual_client_size: FedVC's N_VC (size-proportional sampling of
      virtual clients), or None.

  Returns:
    A `MixingMethod`.

  Raises:
    ValueError: unknown strategy, refused combination (`check_combination`)
      or invalid hyper-parameter (named).
  """
  check_combination(strategy, fedir, virtual_client_size is not None)
  _check_int("clients_per_round", clients_per_round, 1)
  seed = spec.seed
  data = fed_data
  if strategy == ORACLE:
    data = mixing_data.recombined_data(fed_data, central)
  elif strategy == EXAMPLE_TRANSFER:
    data = mixing_data.example_transfer_data(
        fed_data, central, config.examples_per_client, seed)

  fedavg_kwargs = {}
  if fedir:
    fedavg_kwargs["client_work"] = fedir_lib.build_fedir_client_work(
        model_fn, client_optimizer, data.num_classes, fedir_target_distribution)
  if strategy == PARALLEL:
    central_optimizer = None
    if config.central_learning_rate is not None:
      if not config.central_learning_rate > 0:
        raise ValueError("central_learning_rate must be > 0, got "
                         f"{config.central_learning_rate}")
      central_optimizer = tff.learning.optimizers.build_sgdm(
          config.central_learning_rate)
    process = build_parallel_training(
        model_fn, client_optimizer, central, merge_weight=config.merge_weight,
        central_steps=config.central_steps,
        central_batch_size=config.central_batch_size,
        central_optimizer=central_optimizer, server_optimizer=server_optimizer,
        seed=seed, **fedavg_kwargs)
  elif strategy == GRADIENT_TRANSFER:
    process = build_gradient_transfer(
        model_fn, client_optimizer, central,
        gradient_weight=config.gradient_weight,
        central_batch_size=config.central_batch_size,
        server_optimizer=server_optimizer, seed=seed)
  else:
    process = fedavg.build_fedavg(model_fn, client_optimizer, server_optimizer,
                                  **fedavg_kwargs)

  ids = data.client_data.client_ids
  if virtual_client_size is not None:
    spec = spec._replace(virtual_client_size=virtual_client_size)
    sampler = sampling.SizeProportionalSampler(
        ids, [data.client_sizes[c] for c in ids], clients_per_round, seed)
  else:
    sampler = sampling.UniformSampler(ids, clients_per_round, seed)
  extra = extra_broadcast_bytes(
      strategy, clients_per_round=clients_per_round,
      examples_per_client=config.examples_per_client,
      bytes_per_example=mixing_scenarios.bytes_per_example(central.element_spec),
      model_bytes=model_trainable_bytes(model_fn))
  name = "+".join([strategy] + (["fedir"] if fedir else [])
                  + (["fedvc"] if virtual_client_size is not None else []))
  settings = {"strategy": strategy, "fedir": fedir,
              "virtual_client_size": virtual_client_size,
              "centralized": central.name,
              "centralized_examples": central.num_examples,
              "extra_broadcast_bytes_per_round": extra}
  used = {PARALLEL: ("merge_weight", "central_steps", "central_batch_size",
                     "central_learning_rate"),
          EXAMPLE_TRANSFER: ("examples_per_client",),
          GRADIENT_TRANSFER: ("gradient_weight", "central_batch_size")}
  settings.update({k: getattr(config, k) for k in used.get(strategy, ())})
  return MixingMethod(name, process, data, spec, sampler, extra, settings)
