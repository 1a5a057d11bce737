"""FedAvg rounds in plain TensorFlow: the benchmark's reference, two ways.

`bench_round_time` compares TFF rounds against the fastest plain loop one
can write for the same work (issue 18): which loop form is fastest depends
on the model, so both are built and the faster one (by CPU seconds,
measured interleaved) is the reference.

* `PlainFedAvg` ("plain_graph"): one `tf.function` per client, the SGD loop
  inside the graph (`for batch in dataset`, a While loop over iterator ops).
* `PlainFedAvgSteps` ("plain_step"): one `tf.function` train step per batch,
  called from Python over the same batches (what most hand-written TF
  training loops do).

Both do McMahan et al. 2017's FedAvg (Algorithm 1): per client, start from
the global weights, take one SGD step per batch, return the delta; the
server adds the example-weighted mean delta (server learning rate 1). Same
batches, same steps: their rounds give the same weights up to float
rounding (`tests/project/test_plain_loops.py`).
"""

from typing import Callable, Dict, Sequence

import tensorflow as tf

from federated_vision import models as models_lib

PLAIN_GRAPH = "plain_graph"
PLAIN_STEP = "plain_step"


def _loss(model, batch):
  """(mean loss + regularisation, per-example losses, logits) of `batch`."""
  logits = model(batch["x"], training=True)
  losses = models_lib.per_example_loss(batch["y"], logits)
  loss = tf.reduce_mean(losses)
  if model.losses:
    loss += tf.add_n(model.losses)
  return loss, losses, logits


class PlainFedAvg:
  """FedAvg with the client loop inside one `tf.function` per client."""

  def __init__(self, keras_model_fn: Callable[[], tf.keras.Model],
               learning_rate: float):
    self._model = keras_model_fn()
    self._global = [tf.Variable(v) for v in self._model.trainable_variables]
    self._lr = learning_rate

  @property
  def global_weights(self):
    return [g.numpy() for g in self._global]

  @tf.function
  def _client_update(self, dataset):
    model = self._model
    for v, g in zip(model.trainable_variables, self._global):
      v.assign(g)
    num = tf.constant(0.0)
    loss_sum = tf.constant(0.0)
    for batch in dataset:
      with tf.GradientTape() as tape:
        loss, losses, _ = _loss(model, batch)
      grads = tape.gradient(loss, model.trainable_variables)
      for v, g in zip(model.trainable_variables, grads):
        v.assign_sub(self._lr * g)
      num += tf.cast(tf.shape(batch["y"])[0], tf.float32)
      loss_sum += tf.reduce_sum(losses)
    deltas = [g - v for g, v in zip(self._global, model.trainable_variables)]
    return deltas, num, loss_sum

  def _apply(self, updates) -> float:
    """Adds the example-weighted mean delta; returns the mean client loss."""
    total = [tf.zeros_like(g) for g in self._global]
    weight = 0.0
    loss = 0.0
    for deltas, n, loss_sum in updates:
      total = [t + n * d for t, d in zip(total, deltas)]
      weight += float(n)
      loss += float(loss_sum)
    for g, t in zip(self._global, total):
      g.assign_sub(t / weight)
    return loss / weight

  def round(self, datasets) -> float:
    """One round over `datasets` (one per client); the mean training loss."""
    return self._apply(self._client_update(ds) for ds in datasets)


class PlainFedAvgSteps(PlainFedAvg):
  """FedAvg with a `tf.function` train step called from Python per batch."""

  def __init__(self, keras_model_fn, learning_rate: float):
    super().__init__(keras_model_fn, learning_rate)
    self._step = None

  @tf.function
  def _load_global(self):
    for v, g in zip(self._model.trainable_variables, self._global):
      v.assign(g)

  @tf.function
  def _deltas(self):
    return [g - v for g, v in zip(self._global,
                                  self._model.trainable_variables)]

  def _build_step(self, element_spec):
    # One trace for every batch size (the last batch may be smaller).
    spec = {k: tf.TensorSpec([None] + list(s.shape[1:]), s.dtype)
            for k, s in element_spec.items()}
    model = self._model

    @tf.function(input_signature=[spec])
    def step(batch):
      with tf.GradientTape() as tape:
        loss, losses, _ = _loss(model, batch)
      grads = tape.gradient(loss, model.trainable_variables)
      for v, g in zip(model.trainable_variables, grads):
        v.assign_sub(self._lr * g)
      return tf.reduce_sum(losses), tf.cast(tf.shape(batch["y"])[0],
                                            tf.float32)
    return step

  def _client_update_steps(self, dataset):
    if self._step is None:
      self._step = self._build_step(dataset.element_spec)
    self._load_global()
    num = 0.0
    loss_sum = 0.0
    for batch in dataset:
      batch_loss, n = self._step(batch)
      loss_sum += batch_loss
      num += n
    return self._deltas(), num, loss_sum

  def round(self, datasets) -> float:
    return self._apply(self._client_update_steps(ds) for ds in datasets)


PLAIN_LOOPS = {PLAIN_GRAPH: PlainFedAvg, PLAIN_STEP: PlainFedAvgSteps}


def faster_loop(cpu_ratios_step_over_graph: Sequence[float]) -> str:
  """The reference: `plain_step` if its median CPU ratio to `plain_graph` < 1.

  Args:
    cpu_ratios_step_over_graph: per-repetition CPU seconds of `plain_step`
      divided by those of the `plain_graph` run interleaved with it.

  Returns:
    PLAIN_STEP or PLAIN_GRAPH (ties keep the in-graph loop).
  """
  values = sorted(cpu_ratios_step_over_graph)
  if not values:
    raise ValueError("faster_loop needs at least one ratio")
  n = len(values)
  median = (values[(n - 1) // 2] + values[n // 2]) / 2
  return PLAIN_STEP if median < 1.0 else PLAIN_GRAPH


def build_plain_loops(keras_model_fn, learning_rate: float
                      ) -> Dict[str, PlainFedAvg]:
  """Both plain loops, each with its own model (same initial weights)."""
  return {name: cls(keras_model_fn, learning_rate)
          for name, cls in PLAIN_LOOPS.items()}
