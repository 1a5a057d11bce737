"""SCAFFOLD (Karimireddy et al. 2020): a TFF process with per-client state.

Karimireddy et al. 2020, "SCAFFOLD: Stochastic Controlled Averaging for
Federated Learning", Algorithm 1 with option II control variates (Section
3: "all our experiments use option II"). Server state: global weights x,
server control variate c and the server optimizer's state. Each round, for
the sampled clients S (line 4):

  client k gets (x, c) and its own c_k (lines 5-7), and from y = x takes K
  steps y <- y - eta_l (g_k(y) - c_k + c) over its batches (lines 8-10);
  K is the steps it actually took: E x its batches (`client_data.
  num_local_batches`). Option II (line 12):
      c_k+ = c_k - c + (x - y) / (K eta_l)
  It returns (dy_k, dc_k) = (y - x, c_k+ - c_k) and keeps c_k+ (13-14).
  Server (lines 16-17): (dx, dc) = the *uniform* means over S of (dy_k,
  dc_k), as the paper averages (not weighted by examples, unlike the
  package's FedAvg); x <- x + eta_g dx, here a `tff.learning.optimizers.
  Optimizer` applied to the pseudo-gradient -dx (TFF's FedAvg convention:
  SGD(eta_g) is line 17 exactly; any server optimizer composes);
  c <- c + (|S| / N) dc with N the population (so c stays the mean of all
  c_k, Section 3: "c = 1/N sum c_i").

Initial values (ours; Algorithm 1 leaves them as inputs): c = c_k = 0, which
keeps c = mean of the c_k from the start; a client never seen has c_k = 0.

Clients outside Algorithm 1's assumptions (ours, consistent with the
package's FedAvg): a client whose dy_k or c_k+ is non-finite is dropped as
TFF drops one (no member of S in lines 16-17, no metrics, counted in
`clients_dropped_non_finite`) and keeps its c_k: a stored NaN would poison
all its later rounds. A client without data takes K = 0 steps: option II's
c_k+ divides by K, so it is no member of S either and keeps its c_k (not
counted as dropped). A round whose dx or new c is non-finite is not applied
(`finalizer.update_non_finite` = 1, TFF's `build_apply_optimizer_finalizer`
rule), and then no client's c_k changes either.

Why a hand-written `tff.templates.IterativeProcess` and not
`compose_learning_process`: a composed `LearningProcess` has no slot for a
CLIENTS-placed state that goes in and comes out of every round (its client
work's state is SERVER-placed and its result is the model update only). As
TFF research's stateful-clients example does, `next` takes the clients'
values and returns their new ones:

  next(<state@SERVER, {<key=string, control=c_k>}@CLIENTS>)
    -> <state@SERVER, metrics@SERVER, {<control=c_k+, updated=int32>}@CLIENTS>

A client's value is its round key plus c_k only: its batches are built
inside the executor from the key (`client_data.build_training_dataset_fn`),
never serialised from Python. The c_k live in a `training.client_states.
ClientStateStore` on disk, which `ScaffoldTrainingProcess` reads and writes
each round and `training_loop` keeps in step with its checkpoints. Metrics
are FedAvg's: `client_work.train` (the model's loss and accuracy summed over
the kept clients), `client_work.clients_dropped_non_finite`,
`finalizer.update_non_finite`.
"""

import collections
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.algorithms import fedavg
from federated_vision.data import client_data as client_data_lib
from federated_vision.training import client_states as client_states_lib


class ScaffoldState(NamedTuple):
  """The server state (checkpointed by the loop).

  Attributes:
    global_model_weights: x (a `tff.learning.models.ModelWeights`).
    control: c, one tensor per trainable weight.
    optimizer_state: the server optimizer's state.
  """
  global_model_weights: object
  control: object
  optimizer_state: object


def _all_finite(tensors) -> tf.Tensor:
  return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors])


def _client_update_fn(model, dataset_fn, learning_rate: float):
  """Algorithm 1, lines 7-14 for one client, as a tf.function of (message
  <weights=x, control=c>, client <key, control=c_k>)."""

  @tf.function
  def update(message, client):
    weights = tff.learning.models.ModelWeights.from_model(model)
    for v, t in zip(tf.nest.flatten(weights),
                    tf.nest.flatten(message["weights"])):
      v.assign(t)  # y <- x (line 7)
    trainable = list(weights.trainable)
    x = tf.nest.flatten(message["weights"].trainable)
    c = tf.nest.flatten(message["control"])
    c_k = tf.nest.flatten(client["control"])
    correction = [ci - ck for ci, ck in zip(c, c_k)]  # -c_k + c
    model.reset_metrics()
    steps = tf.constant(0, tf.int32)
    # `for batch in iterator`: a While loop (see `fedavg.DEFAULT_LOOP`).
    for batch in iter(dataset_fn(client["key"])):
      tf.autograph.experimental.set_loop_options(parallel_iterations=1)
      with tf.GradientTape() as tape:
        output = model.forward_pass(batch, training=True)
      grads = tape.gradient(output.loss, trainable)
      for v, g, d in zip(trainable, grads, correction):  # Line 10.
        v.assign_sub(learning_rate * (g + d))
      steps += 1
    y = [tf.identity(v) for v in trainable]
    trained = steps > 0
    k_eta = tf.cast(steps, tf.float32) * learning_rate
    c_plus = [tf.where(trained, ck - ci + (xi - yi) / k_eta, ck)  # Line 12.
              for ck, ci, xi, yi in zip(c_k, c, x, y)]
    delta = [yi - xi for yi, xi in zip(y, x)]
    finite = _all_finite(delta + c_plus)
    kept = tf.logical_and(trained, finite)
    if not finite:  # TFF's FedAvg reports no metrics of a dropped client.
      model.reset_metrics()
    keep = lambda ts: [tf.where(kept, t, tf.zeros_like(t)) for t in ts]
    pack = lambda ts: tf.nest.pack_sequence_as(client["control"], ts)
    return collections.OrderedDict(
        delta=pack(keep(delta)),
        control_delta=pack(keep([cp - ck for cp, ck in zip(c_plus, c_k)])),
        weight=tf.cast(kept, tf.float32),
        dropped=tf.cast(tf.logical_and(trained, tf.logical_not(finite)),
                        tf.int32),
        metrics=model.report_local_unfinalized_metrics(),
        client=collections.OrderedDict(
            control=pack([tf.where(kept, cp, ck)
                          for cp, ck in zip(c_plus, c_k)]),
            updated=tf.cast(kept, tf.int32)))
  return update


def build_scaffold(
    model_fn: fedavg.ModelFn,
    client_learning_rate: float,
    dataset_fn: Callable[[tf.Tensor], tf.data.Dataset],
    num_clients: int,
    server_optimizer: Optional[tff.learning.optimizers.Optimizer] = None,
) -> tff.templates.IterativeProcess:
  """SCAFFOLD's iterative process (signature in the module docstring).

  Args:
    model_fn: no-arg `tff.learning.models.VariableModel` builder.
    client_learning_rate: eta_l > 0 (plain local SGD: option II's formula
      divides by K eta_l).
    dataset_fn: round key -> the client's batched training dataset, run
      inside the client's computation.
    num_clients: N, the population clients are sampled from.
    server_optimizer: applied to -dx; SGD(1.0) when None (eta_g = 1).

  Returns:
    A `tff.templates.IterativeProcess`.
  """
  if not client_learning_rate > 0:
    raise ValueError(f"client_learning_rate must be > 0, got "
                     f"{client_learning_rate}")
  if num_clients < 1:
    raise ValueError(f"num_clients must be >= 1, got {num_clients}")
  if server_optimizer is None:
    server_optimizer = tff.learning.optimizers.build_sgdm(learning_rate=1.0)
  lr, n = float(client_learning_rate), float(num_clients)
  with tf.Graph().as_default():
    metrics_fn = tff.learning.metrics.sum_then_finalize(
        model_fn().metric_finalizers())

  @tff.tensorflow.computation
  def init_tf():
    weights = tff.learning.models.ModelWeights.from_model(model_fn())
    specs = [tf.TensorSpec(v.shape, v.dtype) for v in weights.trainable]
    return ScaffoldState(weights, [tf.zeros_like(v) for v in weights.trainable],
                         server_optimizer.initialize(specs))

  state_type = init_tf.type_signature.result
  trainable_type = state_type.control
  if any(t.dtype != np.float32 for t in tff.structure.flatten(trainable_type)):
    raise TypeError(f"SCAFFOLD needs float32 trainable weights, got "
                    f"{trainable_type}")
  client_type = tff.StructWithPythonType(
      [("key", tff.TensorType(np.str_)), ("control", trainable_type)],
      collections.OrderedDict)

  @tff.tensorflow.computation(state_type)
  def message_fn(state):
    return collections.OrderedDict(weights=state.global_model_weights,
                                   control=state.control)

  @tff.tensorflow.computation(message_fn.type_signature.result, client_type)
  def client_update(message, client):
    model = model_fn()  # Variables are created outside the tf.function.
    return _client_update_fn(model, dataset_fn, lr)(message, client)

  @tff.tensorflow.computation(state_type, trainable_type, trainable_type,
                              np.float32)
  @tf.function
  def server_update(state, delta_sum, control_delta_sum, participants):
    x = state.global_model_weights
    # -dx: the pseudo-gradient x - mean(y_k); zero when no client is kept.
    update = [-tf.math.divide_no_nan(d, participants) for d in delta_sum]
    control = [c + d / n for c, d in zip(state.control, control_delta_sum)]
    optimizer_state, trainable = server_optimizer.next(
        state.optimizer_state, list(x.trainable), update)
    new = ScaffoldState(
        tff.learning.models.ModelWeights(list(trainable), x.non_trainable),
        control, optimizer_state)
    finite = _all_finite(update + control)
    kept = tf.nest.map_structure(lambda a, b: tf.where(finite, a, b),
                                 new, state)
    return kept, collections.OrderedDict(
        update_non_finite=tf.cast(tf.logical_not(finite), tf.int32))

  @tff.federated_computation
  def init_fn():
    return tff.federated_eval(init_tf, tff.SERVER)

  @tff.federated_computation(tff.FederatedType(state_type, tff.SERVER),
                             tff.FederatedType(client_type, tff.CLIENTS))
  def next_fn(state, clients):
    message = tff.federated_broadcast(tff.federated_map(message_fn, state))
    out = tff.federated_map(client_update, (message, clients))
    new_state, finalizer = tff.federated_map(server_update, (
        state, tff.federated_sum(out.delta),
        tff.federated_sum(out.control_delta), tff.federated_sum(out.weight)))
    work = tff.federated_zip(collections.OrderedDict([
        ("train", metrics_fn(out.metrics)),
        (fedavg.DROPPED_NON_FINITE, tff.federated_sum(out.dropped))]))
    metrics = tff.federated_zip(collections.OrderedDict(
        client_work=work, finalizer=finalizer))
    return new_state, metrics, out.client

  return tff.templates.IterativeProcess(init_fn, next_fn)


class RoundOutput(NamedTuple):
  """What `ScaffoldTrainingProcess.next` returns (as a LearningProcess's)."""
  state: ScaffoldState
  metrics: object


def round_and_clients(keys: Sequence[str]) -> Tuple[int, List[str]]:
  """(round, client ids) of one round's keys '<client id>@<round>'.

  Raises:
    ValueError: keys of several rounds, a FedVC slot key, or a client twice
      (it has one c_k).
  """
  sep = client_data_lib.ROUND_KEY_SEPARATOR
  parts = [str(k).rpartition(sep) for k in keys]
  rounds = {r for _, _, r in parts}
  if not keys or len(rounds) != 1 or not next(iter(rounds)).isdigit():
    raise ValueError(f"SCAFFOLD needs one round's keys '<client id>{sep}"
                     f"<round>', got {list(keys)[:3]}")
  ids = [c for c, _, _ in parts]
  if len(set(ids)) != len(ids):
    raise ValueError(f"a client appears twice in round {rounds.pop()}: "
                     "SCAFFOLD keeps one control variate per client")
  return int(next(iter(rounds))), ids


class ScaffoldTrainingProcess:
  """SCAFFOLD over a round's keys, as `training_loop` drives a process
  (`initialize`, `next(state, keys)`, `get_model_weights`), with the c_k in
  `client_states` (opened and kept in step with the checkpoints by the loop).
  """

  def __init__(self, process: tff.templates.IterativeProcess):
    self.process = process
    control_type = process.initialize.type_signature.result.member.control
    self.client_states = client_states_lib.ClientStateStore(
        [tuple(t.shape) for t in tff.structure.flatten(control_type)])

  def initialize(self) -> ScaffoldState:
    return self.process.initialize()

  def get_model_weights(self, state: ScaffoldState):
    return state.global_model_weights

  def next(self, state: ScaffoldState, keys: Sequence[str]) -> RoundOutput:
    """One round of Algorithm 1 on the clients of `keys`; their new c_k are
    written to the store as round r's (none if the round was rejected)."""
    round_num, ids = round_and_clients(keys)
    read = self.client_states.read
    clients = [collections.OrderedDict(key=k, control=read(c))
               for k, c in zip(keys, ids)]
    state, metrics, outputs = self.process.next(state, clients)
    applied = not int(metrics["finalizer"]["update_non_finite"])
    self.client_states.write(round_num, {
        c: list(o["control"]) for c, o in zip(ids, outputs)
        if applied and int(o["updated"])})
    return RoundOutput(state, metrics)


class ScaffoldMethod:
  """What `training_loop` is handed for SCAFFOLD (as `client_groups.
  GroupedMethod`): the process is built over the run's data
  (`build_training_process`).

  Args:
    model_fn: see `build_scaffold`.
    client_learning_rate: eta_l.
    server_optimizer: see `build_scaffold`.
  """

  def __init__(self, model_fn: fedavg.ModelFn, client_learning_rate: float,
               server_optimizer: Optional[tff.learning.optimizers.Optimizer]
               = None):
    self._args = (model_fn, client_learning_rate)
    self._server_optimizer = server_optimizer

  def build_training_process(self, fed_data, spec) -> ScaffoldTrainingProcess:
    """The process over `fed_data`'s N clients, batches built as `spec` says."""
    dataset_fn = client_data_lib.build_training_dataset_fn(
        fed_data.client_data.serializable_dataset_fn, spec,
        fed_data.train_map_fn)
    return ScaffoldTrainingProcess(build_scaffold(
        *self._args, dataset_fn, len(fed_data.client_data.client_ids),
        self._server_optimizer))
