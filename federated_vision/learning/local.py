"""The clients' local training, written once.

McMahan et al. 2017, Algorithm 1 (ClientUpdate): from the round's global
weights w^t, each batch b of the client's E epochs takes one step
w <- w - eta * grad l(w; b). A method changes that step with its *local
objective*, one function

    objective(output, batch, client) -> (loss, gradient term or None)

whose loss the tape differentiates and whose gradient term (a tensor per
trainable weight, or None) is added to that gradient: FedProx's proximal
term mu (w - w^t) (Li et al. 2020, eq. 2), SCAFFOLD's correction c - c_k,
gradient transfer's lambda g_c, FedIR's reweighted loss. `step` is the one
place a local step is taken: the per-client client work built here
(`build_client_work`), the client-group slot (`client_groups`), the mixing
strategies and the stateful algorithms (`stateful`) all call it, so every
path trains the same way and none can drift.

`client.start` is w^t and `client.weights` the trainable variables (tuples
in the model's order), `client.message` what the server broadcasts to the
client beside w^t and `client.state` the client's own values kept across
rounds (`stateful`). A batch may carry the client's class counts over its
whole local data (`client_data.LABEL_COUNTS_KEY`, FedIR's q_k); the model
never sees them.
"""

import collections
from typing import Any, Callable, NamedTuple, Optional

import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import client_data as client_data_lib
from federated_vision.runtime import learning_internals
from federated_vision.training import run_files

ModelFn = Callable[[], tff.learning.models.VariableModel]
# The measurement every client work adds: clients whose update was
# non-finite, dropped as TFF drops them (update zeroed, weight 0, no metrics).
DROPPED_NON_FINITE = run_files.DROPPED_NON_FINITE
# The clients' loop: `for batch in dataset` (a While loop over iterator ops),
# not TFF's default `dataset.reduce`. A reduce function is a tf.data
# function, which neither TFF's static Grappler pass (it skips tf.data
# functions) nor the worker optimises; there the Identity nodes of inlined
# function boundaries sit between MaxPool and MaxPoolGrad, so oneDNN's layout
# pass cannot pair them and max-pool backward runs in Eigen's slow
# `SpatialMaxPoolWithArgMaxHelper` (13-18% of the worker's CPU on the CIFAR
# CNN). See docs/performance.md.
DEFAULT_LOOP = tff.learning.LoopImplementation.DATASET_ITERATOR
# `build_client_work(label_counts=...)`: the data carry the client's class
# counts, or the client counts the labels of its round's batches first.
COUNTS_IN_BATCHES = "batches"
COUNT_LABELS = "count"


class Client(NamedTuple):
  """What a local objective sees of its client (tensors).

  Attributes:
    start: w^t, the round's global trainable weights (a tuple).
    weights: the model's trainable variables w (a tuple), as of this step.
    message: what the server broadcasts beside w^t ({} for nothing).
    state: the client's own values kept across rounds ({} for none).
  """
  start: tuple
  weights: tuple
  message: Any = ()
  state: Any = ()


def model_loss(output, batch, client):
  """McMahan et al. 2017's local objective: the model's loss, no term."""
  del batch, client
  return output.loss, None


def loss_gradients(model, batch, client: Client,
                   objective: Callable = model_loss):
  """The model's forward pass on `batch` and the gradient at w
  (`client.weights`) of the objective's loss, its gradient term added.

  A traced body (inside a `tf.function`): the gradient is symbolic
  (`tf.gradients`), over the model's ops traced inline
  (`learning_internals.forward_pass`).

  Returns:
    (the model's forward-pass output, the gradients: a tuple, one a weight).
  """
  inputs = {k: v for k, v in batch.items()
            if k != client_data_lib.LABEL_COUNTS_KEY}
  output = learning_internals.forward_pass(model, inputs, training=True)
  loss, term = objective(output, batch, client)
  # Symbolic, not a tape: it differentiates only the ops between w and the
  # loss (a frozen backbone's variables are `trainable` tf.Variables, which
  # a tape would watch, recording the whole backbone), and it adds a
  # tensor's gradients in the order TF's gradient of a function call does,
  # so every step computes, bit for bit, what it computed when the forward
  # pass was TFF's `tf.function` under a tape (a tape adds them in another
  # order: the last bits of the weights differ). docs/performance.md,
  # "Building a last-layers method".
  gradients = tuple(tf.gradients(loss, client.weights))
  if term is not None:
    gradients = tuple(g + t for g, t in zip(gradients, term))
  return output, gradients


def step(model, optimizer, optimizer_state, batch, client: Client,
         objective: Callable = model_loss):
  """One local step: the objective's loss differentiated at w, its gradient
  term added (`loss_gradients`), `optimizer` applied to the model's
  trainable variables.

  Returns:
    (the optimizer's new state, the model's forward-pass output).
  """
  output, gradients = loss_gradients(model, batch, client, objective)
  optimizer_state, updated = optimizer.next(optimizer_state, client.weights,
                                            gradients)
  for variable, value in zip(client.weights, updated):
    variable.assign(value)
  return optimizer_state, output


def zero_if_non_finite(structure):
  """(`structure` zeroed if any value is NaN/inf, whether one was): TFF's
  rule for a client's model delta (`model_delta_client_work`)."""
  flat = tf.nest.flatten(structure)
  finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in flat])
  zeroed = tf.nest.map_structure(
      lambda t: tf.where(finite, t, tf.zeros_like(t)), structure)
  return zeroed, tf.logical_not(finite)


def check_loop_implementation(loop_implementation) -> None:
  if not isinstance(loop_implementation, tff.learning.LoopImplementation):
    raise TypeError("loop_implementation must be a tff.learning."
                    f"LoopImplementation, got {loop_implementation!r}")


def by_examples(client_weighting) -> bool:
  """True for NUM_EXAMPLES, False for UNIFORM (TypeError otherwise)."""
  if client_weighting not in (tff.learning.ClientWeighting.NUM_EXAMPLES,
                              tff.learning.ClientWeighting.UNIFORM):
    raise TypeError(f"client_weighting must be a ClientWeighting, got "
                    f"{client_weighting!r}")
  return client_weighting == tff.learning.ClientWeighting.NUM_EXAMPLES


class WorkState(NamedTuple):
  """The server state of a client work built here: the client optimizer's
  hyper-parameters (its learning rate) and the values broadcast to every
  client as `Client.message` (FedIR's target p; () for none)."""
  optimizer_hparams: Any
  message: Any = ()


def initial_state(client_optimizer, message=()) -> WorkState:
  hparams = client_optimizer.get_hparams(
      client_optimizer.initialize(tf.TensorSpec([], tf.float32)))
  return WorkState(hparams, message)


def label_spec(model, num_classes: Optional[int]):
  """The model's input spec plus the class counts key (FedIR's data)."""
  return collections.OrderedDict(
      model.input_spec, **{client_data_lib.LABEL_COUNTS_KEY: tf.TensorSpec(
          [num_classes], tf.float32)})


def label_counts(dataset, num_classes: int, label_key: str = "y"):
  """The label histogram (float32 [C]) of a batched dataset (one pass)."""
  def count(acc, batch):
    labels = tf.reshape(tf.cast(batch[label_key], tf.int32), [-1])
    return acc + tf.math.bincount(labels, minlength=num_classes,
                                  maxlength=num_classes, dtype=tf.float32)
  return dataset.reduce(tf.zeros([num_classes], tf.float32), count)


def _with_counted_labels(dataset, num_classes: int):
  """Every batch with the label counts of the whole dataset."""
  counts = label_counts(dataset, num_classes)
  return dataset.map(
      lambda b: {**b, client_data_lib.LABEL_COUNTS_KEY: counts})


def build_client_work(
    model_fn: ModelFn,
    client_optimizer: tff.learning.optimizers.Optimizer,
    objective: Callable = model_loss,
    *,
    message=(),
    label_counts: Optional[str] = None,
    num_classes: Optional[int] = None,
    broadcast_type: Optional[tff.Type] = None,
    client_weighting: Optional[tff.learning.ClientWeighting] = None,
    loop_implementation: Optional[tff.learning.LoopImplementation] = None,
) -> tff.learning.templates.ClientWorkProcess:
  """The per-client model-delta client work of a local objective.

  Each client trains from w^t with `step` over its batches and returns its
  model delta w^t - w, weighted by its examples (NUM_EXAMPLES) or 1
  (UNIFORM); a client whose delta is non-finite is dropped as TFF drops one
  (delta zeroed, weight 0, no metrics) and counted in
  `clients_dropped_non_finite`. With the model's loss it is TFF's
  `build_model_delta_client_work`, step for step.

  Args:
    model_fn: no-arg `tff.learning.models.VariableModel` builder.
    client_optimizer: the clients' optimizer (its hyper-parameters are the
      state's, so a process's `set_hparams` changes them).
    objective: the local objective (module docstring).
    message: values broadcast to every client as `Client.message` (kept in
      the state, `WorkState.message`).
    label_counts: None; `COUNTS_IN_BATCHES`: the data's batches carry the
      client's class counts (`client_data.build_training_dataset_fn(
      label_counts=...)`); `COUNT_LABELS`: the client counts its round's
      labels first and adds the counts to every batch.
    num_classes: C, with `label_counts`.
    broadcast_type: the distributor's value when it is not the model
      weights: a struct with `weights` and more fields, which join the
      message (gradient transfer's g_c).
    client_weighting: NUM_EXAMPLES (None) or UNIFORM.
    loop_implementation: the clients' loop (None: `DEFAULT_LOOP`).

  Returns:
    A `ClientWorkProcess` whose state is a `WorkState` and whose
    measurements are `train` (the model's metrics) and
    `clients_dropped_non_finite`.
  """
  loop_implementation = loop_implementation or DEFAULT_LOOP
  check_loop_implementation(loop_implementation)
  weighted = by_examples(client_weighting
                         or tff.learning.ClientWeighting.NUM_EXAMPLES)
  if label_counts not in (None, COUNTS_IN_BATCHES, COUNT_LABELS):
    raise ValueError(f"label_counts must be None, {COUNTS_IN_BATCHES!r} or "
                     f"{COUNT_LABELS!r}, got {label_counts!r}")
  if label_counts is not None and not (num_classes or 0) > 0:
    raise ValueError(f"num_classes must be > 0, got {num_classes}")
  with tf.Graph().as_default():
    model = model_fn()
    metrics_aggregation_fn = tff.learning.metrics.sum_then_finalize(
        model.metric_finalizers())
  element_spec = (label_spec(model, num_classes)
                  if label_counts == COUNTS_IN_BATCHES else model.input_spec)
  data_type = tff.SequenceType(tff.types.tensorflow_to_type(element_spec))
  weights_type = tff.learning.models.weights_type_from_model(model)
  received_type = broadcast_type or weights_type

  def client_update(state, received, dataset):
    model = model_fn()  # Variables are created outside the tf.function.
    loop = learning_internals.build_training_loop(loop_implementation)

    @tf.function
    def update(state, received, dataset):
      initial_weights, message = received, state.message
      if broadcast_type is not None:
        initial_weights = received.weights
        message = {n: getattr(received, n) for n in
                   tff.structure.name_list(broadcast_type) if n != "weights"}
      weights = tff.learning.models.ModelWeights.from_model(model)
      tf.nest.map_structure(lambda v, t: v.assign(t), weights,
                            initial_weights)
      if label_counts == COUNT_LABELS:
        dataset = _with_counted_labels(dataset, num_classes)
      client = Client(tuple(tf.nest.flatten(initial_weights.trainable)),
                      tuple(tf.nest.flatten(weights.trainable)), message)

      def reduce_fn(carry, batch):
        num_examples, optimizer_state = carry
        optimizer_state, output = step(model, client_optimizer,
                                       optimizer_state, batch, client,
                                       objective)
        return (num_examples + tf.cast(output.num_examples, tf.int64),
                optimizer_state)

      def initial_carry():
        specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in client.weights)
        return (tf.constant(0, tf.int64), client_optimizer.set_hparams(
            client_optimizer.initialize(specs), state.optimizer_hparams))

      num_examples, _ = loop(reduce_fn, dataset, initial_carry)
      delta, non_finite = zero_if_non_finite(tf.nest.map_structure(
          tf.subtract, initial_weights.trainable, weights.trainable))
      weight = (tf.cast(num_examples, tf.float32) if weighted
                else tf.constant(1.0, tf.float32))
      if non_finite:  # TFF's rule: a dropped client reports no metrics.
        model.reset_metrics()
      return (tff.learning.templates.ClientResult(
          update=delta, update_weight=tf.where(non_finite, 0.0, weight)),
              model.report_local_unfinalized_metrics(),
              tf.cast(non_finite, tf.int32))
    return update(state, received, dataset)

  return work_process(initial_state(client_optimizer, message), client_update,
                      received_type, data_type, metrics_aggregation_fn)


def work_process(state, client_update, received_type, data_type,
                 metrics_aggregation_fn):
  """The `ClientWorkProcess` of a client computation `client_update(state,
  received, data) -> (ClientResult, unfinalized metrics, dropped int32)`
  (a Python function, made a TFF computation here): `state` (a
  `WorkState`) at the server, broadcast each round; measurements `train`
  (the metrics summed, then finalized) and `clients_dropped_non_finite`;
  the optimizer's hyper-parameters as the process's."""
  @tff.federated_computation
  def init_fn():
    return tff.federated_value(state, tff.SERVER)

  state_type = init_fn.type_signature.result.member
  update = tff.tensorflow.computation(
      client_update, state_type, received_type, data_type)

  @tff.federated_computation(
      init_fn.type_signature.result,
      tff.FederatedType(received_type, tff.CLIENTS),
      tff.FederatedType(data_type, tff.CLIENTS))
  def next_fn(state, received, client_data):
    result, metrics, dropped = tff.federated_map(
        update, (tff.federated_broadcast(state), received, client_data))
    measurements = tff.federated_zip(collections.OrderedDict(
        [("train", metrics_aggregation_fn(metrics)),
         (DROPPED_NON_FINITE, tff.federated_sum(dropped))]))
    return tff.templates.MeasuredProcessOutput(state, result, measurements)

  @tff.tensorflow.computation(state_type)
  def get_hparams_fn(state):
    return state.optimizer_hparams

  @tff.tensorflow.computation(state_type, state_type.optimizer_hparams)
  def set_hparams_fn(state, hparams):
    return WorkState(hparams, state.message)

  return tff.learning.templates.ClientWorkProcess(
      init_fn, next_fn, get_hparams_fn=get_hparams_fn,
      set_hparams_fn=set_hparams_fn)


def train(model, optimizer, optimizer_state, dataset, client: Client,
          objective: Callable = model_loss):
  """`step` over every batch of `dataset` in order (a traced tf.function
  body): (examples seen, sum of batch loss x batch examples, steps)."""
  examples = tf.constant(0, tf.int64)
  loss_sum = tf.constant(0.0, tf.float32)
  steps = tf.constant(0, tf.int32)
  for batch in iter(dataset):
    # Iterations in order: each reads the variables the previous wrote.
    tf.autograph.experimental.set_loop_options(parallel_iterations=1)
    optimizer_state, output = step(model, optimizer, optimizer_state, batch,
                                   client, objective)
    n = tf.cast(output.num_examples, tf.int64)
    examples += n
    loss_sum += output.loss * tf.cast(n, tf.float32)
    steps += 1
  return examples, loss_sum, steps


def weights_type_of(model_fn: ModelFn) -> tff.Type:
  """The `ModelWeights` type of `model_fn`'s model."""
  with tf.Graph().as_default():
    return tff.learning.models.weights_type_from_model(model_fn())

