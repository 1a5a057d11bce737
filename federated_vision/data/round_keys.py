"""Round keys: the client ids sent each round, and the seeds drawn from them.

The ids sent to the learning process each round are *round keys*
`"<client_id>@<round>"` (or `"<client_id>@<round>.<slot>"` for FedVC's virtual
clients). A ClientData's `serializable_dataset_fn` strips the suffix
(`base_client_id`, `row_lookup`), so a round key loads the client's data,
while the training pipeline hashes the whole key, together with the run's
seed, into the seed of every random op: FedVC resampling, the per-epoch
shuffles and augmentation (`key_seed`, `derive_seed`). Hence the batches of
round r depend only on (run seed, r, client): runs are reproducible and
resumable, every round reshuffles, and two run seeds see different orders.
"""

from typing import Callable, Optional, Sequence

import tensorflow as tf

ROUND_KEY_SEPARATOR = "@"


def round_key(client_id: str, round_num: int, slot: Optional[int] = None) -> str:
  """The id sent to the learning process for `client_id` in `round_num`."""
  key = f"{client_id}{ROUND_KEY_SEPARATOR}{int(round_num)}"
  return key if slot is None else f"{key}.{int(slot)}"


def base_client_id(key):
  """The client id of a round key ('a@3.1' -> 'a'; 'a' -> 'a'): a `str`
  for a `str` (or bytes) key, e.g. to key a dict by client; in-graph for a
  tensor (a ClientData's `serializable_dataset_fn` loads the client's data
  from its round key)."""
  if isinstance(key, bytes):
    key = key.decode()
  if isinstance(key, str):
    return key.split(ROUND_KEY_SEPARATOR, 1)[0]
  return tf.strings.regex_replace(key, ROUND_KEY_SEPARATOR + ".*$", "")


def key_seed(key: tf.Tensor, seed: int) -> tf.Tensor:
  """A stateless-RNG seed [2] (int64) from a round key and the run's seed."""
  h = tf.strings.to_hash_bucket_fast(key, 2**62)
  return tf.stack([h, tf.constant(int(seed), tf.int64)])


# Streams of `derive_seed`: one per random op of the training pipeline.
RESAMPLE_STREAM, SUBSET_STREAM, SHUFFLE_STREAM, AUGMENT_STREAM = range(4)


def derive_seed(seed: tf.Tensor, *data) -> tf.Tensor:
  """A [2] int64 stateless seed folding integers into `seed` (both halves).

  `derive_seed(s, stream, epoch, ...)` gives every random op its own
  reproducible seed that depends on the whole of `s` (round key hash and run
  seed).
  """
  seed = tf.cast(seed, tf.int64)
  for d in data:
    seed = tf.random.experimental.stateless_fold_in(seed, tf.cast(d, tf.int64))
  return seed


def scalar_seed(seed: tf.Tensor) -> tf.Tensor:
  """An int64 scalar op seed (e.g. for `tf.data.Dataset.shuffle`) from [2]."""
  return tf.random.stateless_uniform([], seed=seed, minval=None, maxval=None,
                                     dtype=tf.int64)


def check_client_ids(client_ids: Sequence[str]) -> None:
  """Raises ValueError unless the ids are non-empty, unique, without '@'."""
  if not client_ids:
    raise ValueError("a ClientData needs at least one client")
  if len(set(client_ids)) != len(client_ids):
    raise ValueError("client ids must be unique")
  bad = [c for c in client_ids if ROUND_KEY_SEPARATOR in c or not c]
  if bad:
    raise ValueError(f"client ids must be non-empty and not contain "
                     f"'{ROUND_KEY_SEPARATOR}': {bad[:3]}")


def row_lookup(client_ids: Sequence[str]) -> Callable[[tf.Tensor], tf.Tensor]:
  """In-graph client id -> row number; raises InvalidArgumentError if absent."""
  ids = tf.constant(list(client_ids), tf.string)

  def lookup(key):
    base = base_client_id(key)
    hits = tf.reshape(tf.where(tf.equal(ids, base)), [-1])
    check = tf.debugging.assert_equal(tf.size(hits), 1,
                                      message="unknown client id")
    with tf.control_dependencies([check]):  # Enforced in graph mode too.
      return tf.identity(hits[0])
  return lookup
