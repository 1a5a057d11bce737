"""An algorithm's own round: client and server state, client outputs, metrics.

The research API for an algorithm that FedAvg's composition cannot express
(design rule 1: `compose_learning_process` has no slot for a value a client
keeps from one round to the next): say, in a `Round`, what the paper's
round does, and `Method` runs it. Each round, for the sampled clients S:

  1. the server broadcasts the global weights x and its own values
     (`server_state`, model-shaped, zeros at first; `Client.message`);
  2. client k trains from x with `local.step` over its batches, with the
     algorithm's local objective, which sees its own values kept across
     rounds (`client_state`, model-shaped, zeros before its first round;
     `Client.state`);
  3. `finish(ClientEnd)` returns the values the client sends beside (or
     instead of) its delta, and its new values;
  4. the server sums each value over the clients kept and calls
     `server_update(ServerRound)`, which returns the pseudo-gradient the
     method's server optimizer applies (SGD(1.0): x <- x - it), the
     server's new values and the algorithm's own metrics (scalars), which
     the loop writes to metrics.csv and TensorBoard.

Keys, store, checkpoints. A client's values live on disk in the run's
`training.client_states.ClientStateStore` (written per round, checksummed,
kept in step with the checkpoints and read back on resume by the training
loop); `TrainingProcess` reads them for the round's clients
('<client id>@<round>' keys) and writes the new ones. The server's values
are part of the process state, so they are checkpointed with it.

Clients outside the paper's assumptions (ours, as the package's FedAvg): a
client whose outputs or new values are non-finite is dropped as TFF drops
one (no member of the sums, no metrics, counted in
`clients_dropped_non_finite`) and keeps its values; a client without data
takes no step and is no member either (not counted). A round whose
pseudo-gradient or new server values are non-finite is not applied
(`finalizer.update_non_finite` = 1), and no client's values change.
SCAFFOLD, FedDyn and FedNova are written on it (`algorithms.scaffold`,
`feddyn`, `fednova`); docs/extending.md walks through one.
"""

import collections
import dataclasses
from typing import Any, Callable, Dict, List, NamedTuple, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.learning import local
from federated_vision.data import client_data as client_data_lib
from federated_vision.data import round_keys
from federated_vision.training import client_states as client_states_lib


class ClientEnd(NamedTuple):
  """What `Round.finish` sees of a client after its local steps.

  Attributes:
    start: x, the round's global trainable weights (a tuple of tensors).
    weights: y, the client's trained weights (same structure).
    steps: K, the local steps it took (int32).
    examples: the examples it trained on (float32).
    learning_rate: the client optimizer's learning rate this round.
    state: its own values ({name: tuple}), as the round started.
    message: the server's values ({name: tuple}).
  """
  start: tuple
  weights: tuple
  steps: Any
  examples: Any
  learning_rate: Any
  state: Dict[str, tuple]
  message: Dict[str, tuple]


class ServerRound(NamedTuple):
  """What `Round.server_update` sees.

  Attributes:
    weights: x, the global trainable weights (a list of tensors).
    state: the server's values ({name: list}).
    sums: each value of `finish`'s outputs summed over the clients kept.
    clients: how many clients were kept (float32).
    population: N, the clients the round's are sampled from.
  """
  weights: List[Any]
  state: Dict[str, list]
  sums: Dict[str, Any]
  clients: Any
  population: float


@dataclasses.dataclass(frozen=True)
class Round:
  """An algorithm's round (module docstring).

  Attributes:
    objective: the local objective (`local`), reading `client.state` and
      `client.message` by name.
    finish: `ClientEnd -> (outputs, new client values)`, both dicts of
      tensors or lists of tensors.
    server_update: `ServerRound -> (pseudo-gradient (a list like x),
      new server values, metrics)`; metrics: {name: scalar}.
    client_state: names of the model-shaped values each client keeps.
    server_state: names of the model-shaped values the server keeps.
  """
  objective: Callable
  finish: Callable
  server_update: Callable
  client_state: Tuple[str, ...] = ()
  server_state: Tuple[str, ...] = ()


class State(NamedTuple):
  """The process state (checkpointed by the loop).

  Attributes:
    global_model_weights: x (`tff.learning.models.ModelWeights`).
    server: the server's values, {name: a tensor per trainable weight}.
    optimizer_state: the server optimizer's state.
    client_hparams: the client optimizer's hyper-parameters.
  """
  global_model_weights: Any
  server: Any
  optimizer_state: Any
  client_hparams: Any


def all_finite(tensors) -> tf.Tensor:
  return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t))
                        for t in tf.nest.flatten(tensors)])


def _client_update_fn(model, dataset_fn, round_: Round, client_optimizer):
  """Steps 2-3 for one client, as a tf.function of (message <weights,
  server, hparams>, client <key, state>)."""

  @tf.function
  def update(message, client):
    weights = tff.learning.models.ModelWeights.from_model(model)
    for v, t in zip(tf.nest.flatten(weights),
                    tf.nest.flatten(message["weights"])):
      v.assign(t)
    named = lambda values: {n: tuple(tf.nest.flatten(values[n]))
                            for n in values}
    state, server = named(client["state"]), named(message["server"])
    start = tuple(tf.nest.flatten(message["weights"].trainable))
    trainable = tuple(weights.trainable)
    model.reset_metrics()
    specs = tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)
    optimizer_state = client_optimizer.set_hparams(
        client_optimizer.initialize(specs), message["hparams"])
    examples, _, steps = local.train(
        model, client_optimizer, optimizer_state,
        dataset_fn(client["key"]), local.Client(start, trainable, server,
                                                state), round_.objective)
    end = ClientEnd(start, tuple(tf.identity(v) for v in trainable), steps,
                    tf.cast(examples, tf.float32),
                    message["hparams"]["learning_rate"], state, server)
    outputs, new_state = round_.finish(end)
    trained = steps > 0
    finite = all_finite([outputs, new_state])
    kept = tf.logical_and(trained, finite)
    if not finite:  # TFF's rule: a dropped client reports no metrics.
      model.reset_metrics()
    keep = lambda t: tf.where(kept, t, tf.zeros_like(t))
    return collections.OrderedDict(
        outputs=tf.nest.map_structure(keep, outputs),
        kept=tf.cast(kept, tf.float32),
        dropped=tf.cast(tf.logical_and(trained, tf.logical_not(finite)),
                        tf.int32),
        metrics=model.report_local_unfinalized_metrics(),
        client=collections.OrderedDict(
            state=collections.OrderedDict(
                (n, [tf.where(kept, a, b) for a, b in
                     zip(tf.nest.flatten(new_state[n]), state[n])])
                for n in round_.client_state),
            updated=tf.cast(kept, tf.int32)))
  return update


def build_process(
    model_fn: local.ModelFn,
    round_: Round,
    client_optimizer: tff.learning.optimizers.Optimizer,
    dataset_fn: Callable[[tf.Tensor], tf.data.Dataset],
    num_clients: int,
    server_optimizer=None,
) -> tff.templates.IterativeProcess:
  """The round as a TFF iterative process:

    next(<State@SERVER, {<key, state>}@CLIENTS>)
      -> <State@SERVER, metrics@SERVER, {<state, updated>}@CLIENTS>

  A client's value is its round key and its own values only: its batches
  are built inside the executor from the key (`dataset_fn`).

  Args:
    model_fn: no-arg `tff.learning.models.VariableModel` builder.
    round_: the algorithm's `Round`.
    client_optimizer: the clients' optimizer.
    dataset_fn: round key -> the client's batched training dataset.
    num_clients: N, the population.
    server_optimizer: applied to the pseudo-gradient; SGD(1.0) when None.
  """
  if num_clients < 1:
    raise ValueError(f"num_clients must be >= 1, got {num_clients}")
  if server_optimizer is None:
    server_optimizer = tff.learning.optimizers.build_sgdm(learning_rate=1.0)
  population = float(num_clients)
  with tf.Graph().as_default():
    metrics_fn = tff.learning.metrics.sum_then_finalize(
        model_fn().metric_finalizers())
  hparams = local.initial_state(client_optimizer).optimizer_hparams

  @tff.tensorflow.computation
  def init_tf():
    weights = tff.learning.models.ModelWeights.from_model(model_fn())
    specs = [tf.TensorSpec(v.shape, v.dtype) for v in weights.trainable]
    zeros = lambda: [tf.zeros_like(v) for v in weights.trainable]
    return State(weights, collections.OrderedDict(
        (n, zeros()) for n in round_.server_state),
                 server_optimizer.initialize(specs), hparams)

  state_type = init_tf.type_signature.result
  trainable_type = state_type.global_model_weights.trainable
  if any(t.dtype != np.float32 for t in tff.structure.flatten(trainable_type)):
    raise TypeError(f"the model's trainable weights must be float32, got "
                    f"{trainable_type}")
  values_type = tff.StructWithPythonType(
      [(n, trainable_type) for n in round_.client_state],
      collections.OrderedDict)
  client_type = tff.StructWithPythonType(
      [("key", tff.TensorType(np.str_)), ("state", values_type)],
      collections.OrderedDict)

  @tff.tensorflow.computation(state_type)
  def message_fn(state):
    return collections.OrderedDict(weights=state.global_model_weights,
                                   server=state.server,
                                   hparams=state.client_hparams)

  @tff.tensorflow.computation(message_fn.type_signature.result, client_type)
  def client_update(message, client):
    model = model_fn()  # Variables are created outside the tf.function.
    return _client_update_fn(model, dataset_fn, round_, client_optimizer)(
        message, client)

  outputs_type = client_update.type_signature.result.outputs

  @tff.tensorflow.computation(state_type, outputs_type, np.float32)
  @tf.function
  def server_update(state, sums, clients):
    x = state.global_model_weights
    server = {n: list(state.server[n]) for n in round_.server_state}
    update, new_server, metrics = round_.server_update(ServerRound(
        list(x.trainable), server, sums, clients, population))
    update = list(update)
    optimizer_state, trainable = server_optimizer.next(
        state.optimizer_state, list(x.trainable), update)
    new_server = collections.OrderedDict(
        (n, list(new_server[n])) for n in round_.server_state)
    new = State(tff.learning.models.ModelWeights(list(trainable),
                                                 x.non_trainable),
                new_server, optimizer_state, state.client_hparams)
    finite = all_finite([update, new_server])
    kept = tf.nest.map_structure(lambda a, b: tf.where(finite, a, b),
                                 new, state)
    return kept, collections.OrderedDict(
        update_non_finite=tf.cast(tf.logical_not(finite), tf.int32)), \
        collections.OrderedDict(sorted(metrics.items()))

  @tff.federated_computation
  def init_fn():
    return tff.federated_eval(init_tf, tff.SERVER)

  @tff.federated_computation(tff.FederatedType(state_type, tff.SERVER),
                             tff.FederatedType(client_type, tff.CLIENTS))
  def next_fn(state, clients):
    message = tff.federated_broadcast(tff.federated_map(message_fn, state))
    out = tff.federated_map(client_update, (message, clients))
    new_state, finalizer, own = tff.federated_map(server_update, (
        state, tff.federated_sum(out.outputs), tff.federated_sum(out.kept)))
    work = tff.federated_zip(collections.OrderedDict([
        ("train", metrics_fn(out.metrics)),
        (local.DROPPED_NON_FINITE, tff.federated_sum(out.dropped))]))
    metrics = tff.federated_zip(collections.OrderedDict(
        client_work=work, finalizer=finalizer, algorithm=own))
    return new_state, metrics, out.client

  return tff.templates.IterativeProcess(init_fn, next_fn)


class RoundOutput(NamedTuple):
  """What `TrainingProcess.next` returns (as a LearningProcess's)."""
  state: State
  metrics: Any


def round_and_clients(keys: Sequence[str]) -> Tuple[int, List[str]]:
  """(round, client ids) of one round's keys '<client id>@<round>'.

  Raises:
    ValueError: keys of several rounds, a FedVC slot key, or a client twice
      (it keeps one set of values).
  """
  sep = round_keys.ROUND_KEY_SEPARATOR
  parts = [str(k).rpartition(sep) for k in keys]
  rounds = {r for _, _, r in parts}
  if not keys or len(rounds) != 1 or not next(iter(rounds)).isdigit():
    raise ValueError(f"a method with client state needs one round's keys "
                     f"'<client id>{sep}<round>', got {list(keys)[:3]}")
  ids = [c for c, _, _ in parts]
  if len(set(ids)) != len(ids):
    raise ValueError(f"a client appears twice in round {rounds.pop()}: it "
                     "keeps one set of values")
  return int(next(iter(rounds))), ids


class TrainingProcess:
  """A `Round`'s process over a round's keys, as `training_loop` drives one
  (`initialize`, `next(state, keys)`, `get_model_weights`), with the
  clients' values in `client_states` (None without any), which the loop
  opens at the resumed round and keeps in step with its checkpoints.

  Attributes:
    metric_names: the algorithm's own metrics (metrics.csv columns).
    client_state_copies: the model-sized values kept per client.
  """

  def __init__(self, process: tff.templates.IterativeProcess, round_: Round):
    self.process = process
    self.names = tuple(round_.client_state)
    self.client_state_copies = len(self.names)
    state_type = process.initialize.type_signature.result.member
    shapes = [tuple(t.shape) for t in tff.structure.flatten(
        state_type.global_model_weights.trainable)]
    self._sizes = len(shapes)
    self.client_states = (client_states_lib.ClientStateStore(
        shapes * len(self.names)) if self.names else None)
    own = process.next.type_signature.result[1].member.algorithm
    self.metric_names = tuple(tff.structure.name_list(own))

  def initialize(self) -> State:
    return self.process.initialize()

  def get_model_weights(self, state: State):
    return state.global_model_weights

  def read(self, client_id: str) -> Dict[str, List[np.ndarray]]:
    """A client's values as of the last round written ({} without any)."""
    flat = self.client_states.read(client_id) if self.names else []
    k = self._sizes
    return {n: flat[i * k:(i + 1) * k] for i, n in enumerate(self.names)}

  def next(self, state: State, keys: Sequence[str]) -> RoundOutput:
    """One round on the clients of `keys`; their new values are written as
    round r's (none if the round was not applied)."""
    if self.names:
      round_num, ids = round_and_clients(keys)
    else:
      round_num, ids = None, list(keys)
    clients = [collections.OrderedDict(key=k, state=collections.OrderedDict(
        self.read(c))) for k, c in zip(keys, ids)]
    state, metrics, outputs = self.process.next(state, clients)
    if self.names:
      applied = not int(metrics["finalizer"]["update_non_finite"])
      self.client_states.write(round_num, {
          c: [a for n in self.names for a in o["state"][n]]
          for c, o in zip(ids, outputs) if applied and int(o["updated"])})
    return RoundOutput(state, metrics)


class Method:
  """What `training_loop` is handed for a `Round` (as `client_groups.
  GroupedMethod`): the process is built over the run's data.

  Args:
    model_fn: no-arg `tff.learning.models.VariableModel` builder.
    round_: the algorithm's `Round`.
    client_optimizer: the clients' optimizer.
    server_optimizer: applied to the pseudo-gradient (SGD(1.0) if None).
  """

  def __init__(self, model_fn, round_: Round, client_optimizer,
               server_optimizer=None):
    self._args = (model_fn, round_, client_optimizer)
    self._server_optimizer = server_optimizer

  def build_training_process(self, fed_data, spec) -> TrainingProcess:
    """The process over `fed_data`'s N clients, batches built as `spec` says."""
    dataset_fn = client_data_lib.build_training_dataset_fn(
        fed_data.client_data.serializable_dataset_fn, spec,
        fed_data.train_map_fn)
    model_fn, round_, client_optimizer = self._args
    return TrainingProcess(build_process(
        model_fn, round_, client_optimizer, dataset_fn,
        len(fed_data.client_data.client_ids), self._server_optimizer), round_)
