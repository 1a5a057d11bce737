"""Federated data built inside the executor from client ids.

TFF's C++ worker receives client datasets either as serialised Python-side
datasets (slow, 100 MB cap per client) or as a `tff.Computation` mapping a
client id to a `tf.data.Dataset` that it runs itself. Everything here is the
latter: each `ClientData` has a `serializable_dataset_fn` whose graph holds
(or reads from disk) the examples and the partition.

Round keys. The ids sent to the learning process each round are *round keys*
`"<client_id>@<round>"`, from which every random op of a client's round is
seeded (`round_keys`), so runs are reproducible and resumable.

Local epochs follow McMahan et al. 2017, Algorithm 1 (ClientUpdate): each of
the E epochs is a fresh shuffle of the client's round data cut into batches
of B, the last one smaller, so a client takes E * ceil(n / B) steps
(`num_local_batches`); FedVC's virtual client takes E * ceil(N_VC / B).

This module holds the data set (`FederatedDataset`) and the client training
pipeline (`TrainingSpec`, `build_training_dataset_fn`); the ClientData classes
are in `in_graph_client_data`, round keys and seeds in `round_keys`.
"""

from typing import Callable, Dict, Mapping, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.data import round_keys
from federated_vision.runtime.tf_internals import op_seed_only

# Optional per-batch feature: the client's class counts over its whole local
# data, float32 [num_classes] (FedIR's q_k; see `label_counts_fn`).
LABEL_COUNTS_KEY = "label_counts"

Element = Dict[str, tf.Tensor]


class FederatedDataset(NamedTuple):
  """A federated data set: raw client data plus how to make model input.

  Every loader in the package (digits, CIFAR, MNIST, iNaturalist, Landmarks)
  returns one of these, and every loader has a small synthetic twin with the
  same element structure.

  Attributes:
    name: data set name, e.g. 'digits' or 'inaturalist_user_120k'.
    client_data: `tff.simulation.datasets.ClientData` of *raw* elements (cheap:
      arrays, or file paths to decode later); its `serializable_dataset_fn`
      accepts plain client ids and round keys. Each element has an int 'y'.
    test_data: centralized test set, raw elements of the same structure.
    train_map_fn: `(element, seed) -> {'x', 'y'}`, decode + augmentation; `seed`
      is a [2] int64 tensor for `tf.random.stateless_*` / `tf.image.stateless_*`
      ops, so augmentation is reproducible per (run seed, round, client).
    eval_map_fn: `element -> {'x', 'y'}`, decode without augmentation.
    num_classes: number of classes.
    client_sizes: client id -> number of examples.
    class_counts: [num_clients, num_classes] int64 in `client_data.client_ids`
      order (EMD, FedIR's target estimates, reports).
    input_shape: shape of one 'x'.
    info: free-form metadata written next to results (source files, split).
  """
  name: str
  client_data: tff.simulation.datasets.ClientData
  test_data: tf.data.Dataset
  train_map_fn: Callable[[Element, tf.Tensor], Element]
  eval_map_fn: Callable[[Element], Element]
  num_classes: int
  client_sizes: Mapping[str, int]
  class_counts: np.ndarray
  input_shape: tuple
  info: Mapping[str, object] = {}

  def test_batches(self, batch_size: int = 256) -> tf.data.Dataset:
    """The test set as batched {'x', 'y'} model input (`eval_map_fn`)."""
    return build_eval_dataset(self.test_data, self.eval_map_fn, batch_size)

  def pooled_train_batches(self, batch_size: int = 256) -> tf.data.Dataset:
    """Every client's training examples (each client's whole local data,
    clients in `client_data.client_ids` order), decoded without
    augmentation (`eval_map_fn`), as batched {'x', 'y'}: the training set
    a run's full-training-set loss is computed on."""
    ids = tf.data.Dataset.from_tensor_slices(list(self.client_data.client_ids))
    pooled = ids.flat_map(self.client_data.serializable_dataset_fn)
    return build_eval_dataset(pooled, self.eval_map_fn, batch_size)


class TrainingSpec(NamedTuple):
  """How a client's raw elements become training batches in one round.

  Attributes:
    batch_size: B; `None` means the whole local data set as one batch
      (McMahan's B = inf).
    epochs: E local epochs.
    shuffle_buffer: buffer of the seeded shuffle of every epoch; 0 disables
      it (each epoch then visits the data in stored order).
    virtual_client_size: FedVC's N_VC, or None. When set, each round a client
      trains on exactly N_VC examples drawn from its data, without replacement
      when it has at least N_VC, with replacement otherwise.
    max_elements: optional cap on examples per client per round: a seeded
      subset of this size, the same in every epoch of the round.
    seed: the run's seed, folded with each round key into every random op.
  """
  batch_size: Optional[int] = 32
  epochs: int = 1
  shuffle_buffer: int = 10_000
  virtual_client_size: Optional[int] = None
  max_elements: Optional[int] = None
  seed: int = 0


def virtual_client_indices(num_examples: tf.Tensor, virtual_size: int,
                           seed: tf.Tensor) -> tf.Tensor:
  """FedVC resampling: N_VC indices into [0, n), seeded and stateless.

  Without replacement (a random permutation's first N_VC) when n >= N_VC,
  uniformly with replacement otherwise.
  """
  n = tf.cast(num_examples, tf.int64)
  check = tf.debugging.assert_positive(n, message="a virtual client (N_VC) resamples a client with no examples")

  def without_replacement():
    keys = tf.random.stateless_uniform(tf.reshape(n, [1]), seed=seed)
    return tf.cast(tf.argsort(keys)[:virtual_size], tf.int64)

  def with_replacement():
    return tf.random.stateless_uniform([virtual_size], seed=seed, minval=0,
                                       maxval=n, dtype=tf.int64)
  with tf.control_dependencies([check]):
    idx = tf.cond(n >= virtual_size, without_replacement, with_replacement)
  return tf.ensure_shape(idx, [virtual_size])


def label_counts_fn(client_ids: Sequence[str], class_counts: np.ndarray
                    ) -> Callable[[tf.Tensor], tf.Tensor]:
  """In-graph round key -> that client's class counts, float32 [C].

  Args:
    client_ids: the ClientData's ids, in `class_counts` row order.
    class_counts: [num_clients, C] counts over each client's whole local data
      (`FederatedDataset.class_counts`).
  """
  counts = np.asarray(class_counts)
  if counts.ndim != 2 or len(counts) != len(client_ids):
    raise ValueError(f"class_counts must be [{len(client_ids)}, num_classes], "
                     f"got shape {counts.shape}")
  ids = list(client_ids)
  num_classes = counts.shape[1]
  # Sparse rows (CSR): the graph, re-sent every round, holds the non-zero
  # counts only (iNaturalist-User-120k's dense 9,275 x 1,203 would be 45 MB).
  rows, classes = np.nonzero(counts)
  values = counts[rows, classes].astype(np.float32)
  splits = np.searchsorted(rows, np.arange(len(ids) + 1)).astype(np.int64)
  classes = classes.astype(np.int64)

  def lookup(key):
    # Constants are made inside the (traced) function, not captured eagerly.
    row = round_keys.row_lookup(ids)(key)
    begin, end = tf.constant(splits)[row], tf.constant(splits)[row + 1]
    return tf.scatter_nd(tf.constant(classes)[begin:end, None],
                         tf.constant(values)[begin:end], [num_classes])
  return lookup


def build_training_dataset_fn(
    raw_dataset_fn: Callable[[tf.Tensor], tf.data.Dataset],
    spec: TrainingSpec,
    map_fn: Optional[Callable[[Element, tf.Tensor], Element]] = None,
    label_counts: Optional[Callable[[tf.Tensor], tf.Tensor]] = None,
) -> Callable[[tf.Tensor], tf.data.Dataset]:
  """Round key -> batched training dataset (a serializable TF function).

  The round's data D: raw elements -> [FedVC resample to N_VC] -> [seeded
  subset of `max_elements`]. Then for each of the E epochs (McMahan et al.
  2017, Algorithm 1): a fresh seeded shuffle of D -> map_fn (decode, augment)
  -> batches of B, the last one smaller; B = None is one batch of all of D.
  Every seed is `derive_seed(key_seed(key, spec.seed), stream, ...)`
  (`round_keys`). If
  `label_counts` is given, every batch also carries the client's whole-data
  label counts under `LABEL_COUNTS_KEY` (FedIR's q_k, computed once).

  Args:
    raw_dataset_fn: a ClientData's `serializable_dataset_fn`.
    spec: batch size, epochs, shuffling, FedVC.
    map_fn: `(element, seed[2]) -> model input` (see
      `FederatedDataset.train_map_fn`); identity when None.
    label_counts: `label_counts_fn(...)`: when given, every batch also has
      `LABEL_COUNTS_KEY`, the client's class counts over its whole local data
      (FedIR reads q_k there instead of counting the round's mapped batches).

  Returns:
    A function usable inside a `tff.tensorflow.computation`.
  """
  if spec.batch_size is not None and spec.batch_size <= 0:
    raise ValueError(f"batch_size must be > 0 or None, got {spec.batch_size}")
  if spec.epochs <= 0:
    raise ValueError(f"epochs must be > 0, got {spec.epochs}")
  if spec.virtual_client_size is not None and spec.virtual_client_size <= 0:
    raise ValueError(
        f"virtual_client_size must be > 0, got {spec.virtual_client_size}")
  if spec.max_elements is not None and spec.max_elements <= 0:
    raise ValueError(f"max_elements must be > 0 or None, got "
                     f"{spec.max_elements}")
  if spec.shuffle_buffer < 0:
    raise ValueError(f"shuffle_buffer must be >= 0, got {spec.shuffle_buffer}")

  def shuffled(ds, seed):
    if not spec.shuffle_buffer:
      return ds
    with op_seed_only():
      return ds.shuffle(spec.shuffle_buffer,
                        seed=round_keys.scalar_seed(seed),
                        reshuffle_each_iteration=False)

  def dataset_fn(key):
    seed = round_keys.key_seed(key, spec.seed)
    ds = raw_dataset_fn(key)
    if spec.virtual_client_size is not None:
      everything = ds.batch(2**31 - 1).get_single_element()
      n = tf.shape(tf.nest.flatten(everything)[0], out_type=tf.int64)[0]
      idx = virtual_client_indices(n, spec.virtual_client_size,
                                   round_keys.derive_seed(
                                       seed, round_keys.RESAMPLE_STREAM))
      ds = tf.data.Dataset.from_tensor_slices(
          tf.nest.map_structure(lambda t: tf.gather(t, idx), everything))
    if spec.max_elements is not None:
      ds = shuffled(ds, round_keys.derive_seed(
          seed, round_keys.SUBSET_STREAM)).take(
          spec.max_elements)
    if spec.batch_size is None:
      # Batch by the round data's actual size: TFF's worker binary hangs on a
      # constant batch of 2**31 - 1 (its BatchDataset reserves batch_size).
      batch_size = tf.maximum(ds.reduce(tf.constant(0, tf.int64),
                                        lambda c, _: c + 1), 1)
    else:
      batch_size = spec.batch_size

    def epoch(e):
      d = shuffled(ds, round_keys.derive_seed(seed, round_keys.SHUFFLE_STREAM, e))
      if map_fn is not None:
        d = d.enumerate().map(
            lambda i, x: map_fn(x, round_keys.derive_seed(
                seed, round_keys.AUGMENT_STREAM, e, i)),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
      return d.batch(batch_size)
    out = tf.data.Dataset.range(spec.epochs).flat_map(epoch)
    if label_counts is not None:
      counts = label_counts(key)
      out = out.map(lambda batch: {**batch, LABEL_COUNTS_KEY: counts})
    return out.prefetch(1)
  return dataset_fn


def build_eval_dataset(raw: tf.data.Dataset,
                       map_fn: Optional[Callable[[Element], Element]] = None,
                       batch_size: int = 256) -> tf.data.Dataset:
  """Centralized evaluation pipeline (no shuffling, no augmentation)."""
  if map_fn is not None:
    raw = raw.map(map_fn, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return raw.batch(batch_size).prefetch(2)


def num_local_batches(num_examples: int, spec: TrainingSpec) -> int:
  """Local steps a client with `num_examples` examples takes in one round.

  E * ceil(n / B) (each epoch ends with its own, smaller, last batch), with
  n = N_VC under FedVC and n capped by `max_elements`; E when B = None.
  """
  n = spec.virtual_client_size if spec.virtual_client_size is not None else num_examples
  if spec.max_elements is not None:
    n = min(n, spec.max_elements)
  if n == 0:
    return 0
  if spec.batch_size is None:
    return spec.epochs
  return spec.epochs * -(-n // spec.batch_size)
