"""Centralized baseline: the same model and input pipeline, all data pooled.

Relative accuracy (Hsu, Qi & Brown 2020) divides federated accuracy by this
model's accuracy. It is also McMahan et al. 2017's CIFAR baseline, "standard
SGD training on the full training set (no user partitioning), using
minibatches of size 100", counted in minibatch updates ("each minibatch
update requires a communication round in the federated setting", §3):
`minibatch_updates` gives the update count at each per-epoch evaluation.
"""

import math
import time
from typing import Callable, List, NamedTuple

import tensorflow as tf

from federated_vision.data import client_data as client_data_lib
from federated_vision.models import masked


class CentralizedResult(NamedTuple):
  accuracy: float
  loss: float
  epochs: int
  history: List[float]  # Test accuracy after each epoch.
  seconds: float


def minibatch_updates(num_examples: int, batch_size: int,
                      epochs: int) -> List[int]:
  """SGD updates done by the end of each epoch: e * ceil(n / B) for
  e = 1..epochs (`pooled_training_dataset` keeps the last, smaller batch).

  Raises:
    ValueError: n < 1, B < 1 or epochs < 0.
  """
  if num_examples < 1 or batch_size < 1 or epochs < 0:
    raise ValueError(f"minibatch_updates: need n >= 1, B >= 1, epochs >= 0; "
                     f"got {num_examples}, {batch_size}, {epochs}")
  per_epoch = math.ceil(num_examples / batch_size)
  return [e * per_epoch for e in range(1, epochs + 1)]


def pooled_training_dataset(fed_data: client_data_lib.FederatedDataset,
                            batch_size: int, seed: int,
                            epoch: int) -> tf.data.Dataset:
  """All clients' examples, shuffled (seeded by epoch), mapped and batched."""
  raw_fn = fed_data.client_data.serializable_dataset_fn
  ids = tf.data.Dataset.from_tensor_slices(fed_data.client_data.client_ids)
  pooled = ids.flat_map(raw_fn)
  total = sum(fed_data.client_sizes.values())
  pooled = pooled.shuffle(total, seed=seed * 100_003 + epoch,
                          reshuffle_each_iteration=False)
  base = tf.constant([seed, epoch], tf.int64)
  pooled = pooled.enumerate().map(
      lambda i, e: fed_data.train_map_fn(e, base + tf.stack([i, 0])),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return pooled.map(lambda b: (b["x"], b["y"])).batch(batch_size).prefetch(2)


def train_centralized(keras_model_fn: Callable[[], tf.keras.Model],
                      fed_data: client_data_lib.FederatedDataset,
                      eval_dataset: tf.data.Dataset,
                      learning_rate: float, batch_size: int, epochs: int,
                      seed: int = 0, momentum: float = 0.0) -> CentralizedResult:
  """Trains on the union of the clients' data with SGD; evaluates each epoch."""
  if epochs <= 0:
    raise ValueError(f"epochs must be > 0, got {epochs}")
  if batch_size <= 0:
    raise ValueError(f"batch_size must be > 0, got {batch_size}")
  start = time.time()
  tf.keras.utils.set_random_seed(seed)
  model = keras_model_fn()
  # Sequence labels (Shakespeare) skip their padding (`models.masked`).
  loss, metrics = masked.loss_and_metrics(
      eval_dataset.element_spec["y"].shape.rank)
  model.compile(
      optimizer=tf.keras.optimizers.SGD(learning_rate, momentum=momentum),
      loss=loss, metrics=metrics)
  eval_xy = eval_dataset.map(lambda b: (b["x"], b["y"]))
  history = []
  loss = acc = float("nan")
  for epoch in range(epochs):
    model.fit(pooled_training_dataset(fed_data, batch_size, seed, epoch),
              epochs=1, verbose=0)
    loss, acc = model.evaluate(eval_xy, verbose=0)
    history.append(float(acc))
  return CentralizedResult(float(acc), float(loss), epochs, history,
                           time.time() - start)
