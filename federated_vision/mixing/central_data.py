"""Data side of mixing federated and centralized data (Augenstein et al.).

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews): the
server holds a centralized set covering what the clients under-represent.
This module holds the data-side constructions of the strategies over a
`mixing.scenarios.CentralizedData` (the server's
examples, gathered in-graph by index, so every per-round sample below is
built inside the TFF executor, never serialised from Python per round); the
learning processes are in `mixing.strategies`.

* `central_dataset`: the centralized examples of round r (parallel training's
  K batches, gradient transfer's one batch), drawn from (seed, r) only.
* `example_transfer_data` (Algorithm 3): client k's dataset in round r is its
  own examples plus M centralized ones drawn from (seed, r, k).
* `recombined_data` (the oracle): every centralized example handed back to
  the client it came from.
"""

import collections

import numpy as np
import tensorflow as tf

from federated_vision.data import client_data as client_data_lib
from federated_vision.data import round_keys
from federated_vision.mixing import scenarios

CentralizedData = scenarios.CentralizedData


def check_central(central) -> None:
  if not isinstance(central, CentralizedData):
    raise TypeError("central must be a mixing.scenarios.CentralizedData, got "
                    f"{type(central).__name__}")
  central.validate()


def check_int(name: str, value, minimum: int) -> None:
  if not isinstance(value, (int, np.integer)) or value < minimum:
    raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def central_metrics(num_examples, loss_sum):
  """The centralized steps' (mean loss, examples)."""
  return collections.OrderedDict(
      loss=tf.math.divide_no_nan(loss_sum, tf.cast(num_examples, tf.float32)),
      num_examples=num_examples)


def sample_indices(num_examples: int, count: int, seed: tf.Tensor) -> tf.Tensor:
  """`count` int64 indices into [0, num_examples), seeded and stateless.

  Concatenated independent permutations, truncated: no example repeats among
  the first `num_examples` draws, and each appears at most once more per
  further `num_examples` draws.
  """
  if num_examples <= 0 or count < 0:
    raise ValueError(f"need num_examples > 0 and count >= 0, got "
                     f"{num_examples}, {count}")
  passes = -(-count // num_examples)
  keys = tf.random.stateless_uniform([passes, num_examples], seed=seed)
  order = tf.cast(tf.reshape(tf.argsort(keys, axis=1), [-1]), tf.int64)
  return tf.ensure_shape(order[:count], [count])


def round_seed(round_num: tf.Tensor, seed: int, salt: str) -> tf.Tensor:
  """A stateless seed [2] for server-side sampling in round `round_num`."""
  key = tf.strings.join([salt, round_keys.ROUND_KEY_SEPARATOR,
                         tf.strings.as_string(round_num)])
  return round_keys.key_seed(key, seed)


def central_dataset(central: CentralizedData, indices: tf.Tensor,
                    seed: tf.Tensor) -> tf.data.Dataset:
  """Model-input examples at `indices`, in order (augmentation by seed)."""
  ds = tf.data.Dataset.from_tensor_slices(central.gather_fn(indices))
  return ds.enumerate().map(
      lambda i, e: central.train_map_fn(e, tf.stack([seed[0] + i, seed[1]])))


def central_batches(central: CentralizedData, round_num: tf.Tensor, seed: int,
                    num_batches: int, batch_size: int,
                    salt: str = "__central__") -> tf.data.Dataset:
  """`num_batches` batches of `batch_size` centralized examples for a round.

  Depends only on (seed, round_num, salt); within a round no example repeats
  until all N have been drawn (see `sample_indices`).
  """
  s = round_seed(round_num, seed, salt)
  idx = sample_indices(central.num_examples, num_batches * batch_size, s)
  return central_dataset(central, idx, s).batch(batch_size)


def _check_same_elements(fed: client_data_lib.FederatedDataset,
                         central: CentralizedData) -> None:
  fed_spec = dict(fed.client_data.element_type_structure)
  central_spec = dict(central.element_spec)
  if fed_spec != central_spec:
    raise ValueError(
        f"federated data {fed.name!r} and centralized data {central.name!r} "
        f"have different raw elements: {fed_spec} vs {central_spec}")


def example_transfer_data(fed: client_data_lib.FederatedDataset,
                          central: CentralizedData, examples_per_client: int,
                          seed: int) -> client_data_lib.FederatedDataset:
  """Example transfer (Algorithm 3): client data + M centralized examples.

  For round key 'k@r' the client's raw dataset is its own examples followed by
  M centralized examples drawn with `sample_indices` from (seed, r, k); the
  training pipeline's per-round shuffle then mixes them. `client_sizes` become
  n_k + M (what each client trains on per round, so batch budgets and
  NUM_EXAMPLES weighting count the transferred examples); `class_counts` stay
  the clients' own.

  Args:
    fed: the federated data set.
    central: the server's examples, with the same raw elements as `fed`.
    examples_per_client: M >= 0.
    seed: the run's seed.

  Returns:
    A `FederatedDataset` with the same clients.
  """
  if (not isinstance(examples_per_client, (int, np.integer))
      or examples_per_client < 0):
    raise ValueError(f"examples_per_client must be an integer >= 0, got "
                     f"{examples_per_client!r}")
  central.validate()
  _check_same_elements(fed, central)
  m = int(examples_per_client)
  own_fn = fed.client_data.serializable_dataset_fn
  n = central.num_examples

  def dataset_fn(key):
    s = round_keys.key_seed(tf.strings.join([key, "#transfer"]), seed)
    transferred = tf.data.Dataset.from_tensor_slices(
        central.gather_fn(sample_indices(n, m, s)))
    return own_fn(key).concatenate(transferred)

  ids = fed.client_data.client_ids
  sizes = {c: int(fed.client_sizes[c]) + m for c in ids}
  cd = scenarios.FunctionClientData(ids, sizes, dataset_fn,
                                           central.element_spec)
  info = dict(fed.info, example_transfer={"examples_per_client": m,
                                          "centralized": central.name})
  return fed._replace(name=f"{fed.name}+example_transfer", client_data=cd,
                      client_sizes=sizes, info=info)


def recombined_data(
    fed: client_data_lib.FederatedDataset,
    central: CentralizedData) -> client_data_lib.FederatedDataset:
  """The oracle's data: centralized examples handed back to their clients.

  Client k's raw dataset is its own examples followed by the centralized
  examples whose source is k (in centralized order). Clients that only appear
  as sources (all their examples were centralized) become clients too,
  appended in sorted order.

  Args:
    fed: the federated data set.
    central: the server's examples; `source_clients` must be set.

  Returns:
    A `FederatedDataset` holding all the data, federated.
  """
  central.validate()
  _check_same_elements(fed, central)
  if central.source_clients is None:
    raise ValueError(f"centralized data {central.name!r} has no "
                     "source_clients: cannot hand examples back to clients")
  fed_ids = list(fed.client_data.client_ids)
  sources = np.asarray(central.source_clients, dtype=object)
  ids = fed_ids + sorted(set(sources.tolist()) - set(fed_ids))
  row_of = {c: i for i, c in enumerate(ids)}
  rows = np.array([row_of[c] for c in sources], np.int64)
  order = np.argsort(rows, kind="stable")  # Centralized order within a client.
  per_client = np.bincount(rows, minlength=len(ids))
  splits = np.concatenate([[0], np.cumsum(per_client)]).astype(np.int64)
  own_fn = fed.client_data.serializable_dataset_fn

  def dataset_fn(key):
    row = round_keys.row_lookup(ids)(key)
    member = row < len(fed_ids)
    # Clients without own examples read a valid id and keep none of it.
    own = own_fn(tf.where(member, key, fed_ids[0])).take(
        tf.where(member, tf.constant(-1, tf.int64), 0))
    idx = tf.constant(order)[tf.constant(splits)[row]:tf.constant(splits)[row + 1]]
    return own.concatenate(
        tf.data.Dataset.from_tensor_slices(central.gather_fn(idx)))

  sizes = {c: int(fed.client_sizes.get(c, 0)) + int(per_client[row_of[c]])
           for c in ids}
  counts = np.zeros([len(ids), fed.num_classes], np.int64)
  counts[:len(fed_ids)] = fed.class_counts
  np.add.at(counts, (rows, np.asarray(central.labels, np.int64)), 1)
  cd = scenarios.FunctionClientData(ids, sizes, dataset_fn,
                                           central.element_spec)
  info = dict(fed.info, oracle={"centralized": central.name,
                                "clients_only_in_centralized":
                                    len(ids) - len(fed_ids)})
  return fed._replace(name=f"{fed.name}+oracle", client_data=cd,
                      client_sizes=sizes, class_counts=counts, info=info)
