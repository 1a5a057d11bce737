"""Data side of mixing federated and centralized data (Augenstein et al.).

*Jointly Learning from Decentralized (Federated) and Centralized Data to
Mitigate Distribution Shift* (Augenstein, Hard, Partridge & Mathews): the
server holds a centralized set covering what the clients under-represent.
This module holds that set and the data-side constructions of the strategies;
the learning processes are in `federated_vision.algorithms.mixing`.

* `CentralizedData`: the server's examples, gathered *in-graph* by index, so
  every per-round sample below is built inside the TFF executor (never
  serialised from Python per round).
* `central_dataset`: the centralized examples of round r (parallel training's
  K batches, gradient transfer's one batch), drawn from (seed, r) only.
* `example_transfer_data` (Algorithm 3): client k's dataset in round r is its
  own examples plus M centralized ones drawn from (seed, r, k).
* `recombined_data` (the oracle): every centralized example handed back to
  the client it came from.
"""

import hashlib
import os
from typing import Callable, Dict, Mapping, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf

from federated_vision.data import client_data as client_data_lib

Element = Dict[str, tf.Tensor]
GatherFn = Callable[[tf.Tensor], Element]


class CentralizedData(NamedTuple):
  """Examples the server holds.

  Attributes:
    name: e.g. 'digits_missing_8_9' or 'celeba_unsmiling'.
    num_examples: N > 0.
    element_spec: raw element spec, identical to the federated data's raw
      elements (so example transfer can mix them), e.g. {'x', 'y'}.
    gather_fn: int64 indices [k] -> raw rows {key: [k, ...]} in that order;
      a serializable TF function (graph constants, files or SQL reads).
    train_map_fn: `(element, seed[2]) -> {'x', 'y'}` as
      `FederatedDataset.train_map_fn` (the same function for both sets).
    labels: [N] int64 class of every example (counts, reports).
    source_clients: [N] id of the client each example came from (the
      oracle's recombination), or None when unknown.
  """
  name: str
  num_examples: int
  element_spec: Mapping[str, tf.TensorSpec]
  gather_fn: GatherFn
  train_map_fn: Callable[[Element, tf.Tensor], Element]
  labels: np.ndarray
  source_clients: Optional[Sequence[str]] = None

  def validate(self) -> "CentralizedData":
    if self.num_examples <= 0:
      raise ValueError(f"centralized data {self.name!r} is empty")
    if np.shape(self.labels) != (self.num_examples,):
      raise ValueError(f"centralized data {self.name!r}: labels must have "
                       f"shape ({self.num_examples},), got {np.shape(self.labels)}")
    if (self.source_clients is not None
        and len(self.source_clients) != self.num_examples):
      raise ValueError(f"centralized data {self.name!r}: source_clients must "
                       f"have {self.num_examples} entries, got "
                       f"{len(self.source_clients)}")
    return self


def array_centralized_data(
    name: str, arrays: Mapping[str, np.ndarray],
    train_map_fn: Callable[[Element, tf.Tensor], Element],
    source_clients: Optional[Sequence[str]] = None,
    storage_dir: Optional[str] = None,
    max_inline_bytes: int = client_data_lib.MAX_INLINE_BYTES,
) -> CentralizedData:
  """`CentralizedData` over in-memory arrays (must include an int 'y').

  Arrays up to `max_inline_bytes` are graph constants; larger ones are written
  once under `storage_dir` and read by the graph.
  """
  arrays = {k: np.asarray(v) for k, v in arrays.items()}
  if "y" not in arrays:
    raise ValueError(f"centralized data {name!r} needs a 'y' array")
  lengths = {len(v) for v in arrays.values()}
  if len(lengths) != 1:
    raise ValueError(f"centralized data {name!r}: arrays must have equal "
                     f"lengths, got { {k: len(v) for k, v in arrays.items()} }")
  spec = {k: tf.TensorSpec(v.shape[1:], tf.as_dtype(v.dtype))
          for k, v in arrays.items()}
  nbytes = sum(v.nbytes for v in arrays.values())
  if nbytes <= max_inline_bytes:
    def gather_fn(indices):
      return {k: tf.gather(tf.constant(v), indices) for k, v in arrays.items()}
  else:
    if storage_dir is None:
      raise ValueError(f"centralized data {name!r} takes {nbytes} bytes "
                       f"(> {max_inline_bytes}); give storage_dir")
    paths = _write_arrays(arrays, storage_dir)

    def gather_fn(indices):
      return {k: tf.gather(tf.ensure_shape(
          tf.io.parse_tensor(tf.io.read_file(paths[k]), spec[k].dtype),
          [None] + spec[k].shape.as_list()), indices) for k in arrays}
  return CentralizedData(
      name=name, num_examples=int(lengths.pop()), element_spec=spec,
      gather_fn=gather_fn, train_map_fn=train_map_fn,
      labels=arrays["y"].astype(np.int64),
      source_clients=None if source_clients is None else list(source_clients),
  ).validate()


def _write_arrays(arrays: Mapping[str, np.ndarray], storage_dir: str):
  digest = hashlib.sha1()
  for k in sorted(arrays):
    digest.update(k.encode())
    digest.update(np.ascontiguousarray(arrays[k]).data)
  root = os.path.join(storage_dir, "central_" + digest.hexdigest()[:16])
  paths = {k: os.path.join(root, f"{k}.tensor") for k in arrays}
  if not os.path.exists(os.path.join(root, "COMPLETE")):
    os.makedirs(root, exist_ok=True)
    for k, v in arrays.items():
      tf.io.write_file(paths[k], tf.io.serialize_tensor(v))
    with open(os.path.join(root, "COMPLETE"), "w") as f:
      f.write("ok\n")
  return paths


def bytes_per_example(element_spec: Mapping[str, tf.TensorSpec]) -> int:
  """Bytes of one raw example as stored and sent (sum over its tensors)."""
  total = 0
  for key, spec in element_spec.items():
    if not spec.shape.is_fully_defined() or spec.dtype == tf.string:
      raise ValueError(f"element {key!r} has no fixed byte size ({spec})")
    total += int(np.prod(spec.shape.as_list(), dtype=np.int64)) * spec.dtype.size
  return total


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
  key = tf.strings.join([salt, client_data_lib.ROUND_KEY_SEPARATOR,
                         tf.strings.as_string(round_num)])
  return client_data_lib.key_seed(key, seed)


def central_dataset(central: CentralizedData, indices: tf.Tensor,
                    seed: tf.Tensor) -> tf.data.Dataset:
  """Model-input examples at `indices`, in order (augmentation keyed by seed)."""
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


class _FunctionClientData(client_data_lib.InGraphClientData):
  """A ClientData from an in-graph dataset function and known sizes."""

  def __init__(self, client_ids, sizes, dataset_fn, spec):
    self._client_ids = list(client_ids)
    self._sizes = dict(sizes)
    self._dataset_fn = dataset_fn
    self._spec = dict(spec)


def example_transfer_data(fed: client_data_lib.FederatedDataset,
                          central: CentralizedData, examples_per_client: int,
                          seed: int) -> client_data_lib.FederatedDataset:
  """Example transfer (Algorithm 3): each client's data + M centralized examples.

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
  if not isinstance(examples_per_client, (int, np.integer)) or examples_per_client < 0:
    raise ValueError(f"examples_per_client must be an integer >= 0, got "
                     f"{examples_per_client!r}")
  central.validate()
  _check_same_elements(fed, central)
  m = int(examples_per_client)
  own_fn = fed.client_data.serializable_dataset_fn
  n = central.num_examples

  def dataset_fn(key):
    s = client_data_lib.key_seed(tf.strings.join([key, "#transfer"]), seed)
    transferred = tf.data.Dataset.from_tensor_slices(
        central.gather_fn(sample_indices(n, m, s)))
    return own_fn(key).concatenate(transferred)

  ids = fed.client_data.client_ids
  sizes = {c: int(fed.client_sizes[c]) + m for c in ids}
  cd = _FunctionClientData(ids, sizes, dataset_fn, central.element_spec)
  info = dict(fed.info, example_transfer={"examples_per_client": m,
                                          "centralized": central.name})
  return fed._replace(name=f"{fed.name}+example_transfer", client_data=cd,
                      client_sizes=sizes, info=info)


def recombined_data(fed: client_data_lib.FederatedDataset,
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
    row = client_data_lib._row_lookup(ids)(key)  # pylint: disable=protected-access
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
  cd = _FunctionClientData(ids, sizes, dataset_fn, central.element_spec)
  info = dict(fed.info, oracle={"centralized": central.name,
                                "clients_only_in_centralized":
                                    len(ids) - len(fed_ids)})
  return fed._replace(name=f"{fed.name}+oracle", client_data=cd,
                      client_sizes=sizes, class_counts=counts, info=info)
