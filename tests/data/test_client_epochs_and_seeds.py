"""Local epochs as in McMahan et al. 2017 (Algorithm 1) and run seeds.

Each epoch is a fresh seeded shuffle of the client's round data cut into
batches of B (the last one smaller); the batch budget is E * ceil(n / B) and
equals the batches TFF actually trains on; the run seed reaches every random
op (shuffle, FedVC resampling, augmentation).
"""

import math

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import algorithms, training_loop
from federated_vision.runtime import contexts
from federated_vision.learning import sampling
from federated_vision.data import client_data as cdl
from federated_vision.data import in_graph_client_data
from federated_vision.evaluation import metrics
from federated_vision.models import build_tff_model_fn

SIZES = {"a": 4, "b": 7, "c": 11, "d": 20}


def _fed():
  """Clients whose x holds each example's global index."""
  total = sum(SIZES.values())
  x = np.arange(total, dtype=np.float32)[:, None]
  y = (np.arange(total) % 3).astype(np.int64)
  bounds = np.cumsum(list(SIZES.values()))[:-1]
  partition = dict(zip(SIZES, np.split(np.arange(total), bounds)))
  data = in_graph_client_data.ArrayClientData({"x": x, "y": y}, partition)
  return cdl.FederatedDataset(
      "toy", data, tf.data.Dataset.from_tensor_slices({"x": x, "y": y}),
      lambda e, s: e, lambda e: e, 3, dict(SIZES),
      np.zeros([len(SIZES), 3], np.int64), (1,)), partition


def _batches(fed, key, spec, map_fn=None):
  fn = cdl.build_training_dataset_fn(fed.client_data.serializable_dataset_fn,
                                     spec, map_fn)
  return [b["x"].numpy()[:, 0].astype(int).tolist() for b in fn(tf.constant(key))]


def test_n4_b3_e2_gives_3_1_3_1_each_epoch_a_permutation():
  fed, partition = _fed()
  spec = cdl.TrainingSpec(batch_size=3, epochs=2, seed=0)
  batches = _batches(fed, "a@1", spec)
  assert [len(b) for b in batches] == [3, 1, 3, 1]  # Not [3, 3, 2].
  for epoch in (batches[0] + batches[1], batches[2] + batches[3]):
    assert sorted(epoch) == partition["a"].tolist()
  assert batches[:2] != batches[2:]  # A fresh shuffle per epoch.
  assert cdl.num_local_batches(4, spec) == 4 == len(batches)


@pytest.mark.parametrize("batch_size,epochs", [(1, 1), (3, 2), (4, 3),
                                                (5, 2), (20, 2), (None, 3)])
def test_batch_budget_is_epochs_times_ceil_n_over_b(batch_size, epochs):
  fed, partition = _fed()
  spec = cdl.TrainingSpec(batch_size=batch_size, epochs=epochs, seed=3)
  for cid, n in SIZES.items():
    batches = _batches(fed, f"{cid}@2", spec)
    per_epoch = 1 if batch_size is None else math.ceil(n / batch_size)
    assert len(batches) == cdl.num_local_batches(n, spec) == epochs * per_epoch
    for e in range(epochs):
      epoch = sum(batches[e * per_epoch:(e + 1) * per_epoch], [])
      assert sorted(epoch) == partition[cid].tolist()
      sizes = [len(b) for b in batches[e * per_epoch:(e + 1) * per_epoch]]
      b = batch_size or n
      assert sizes == [b] * (n // b) + ([n % b] if n % b else [])
  assert metrics.round_batch_budget(list(SIZES.values()), spec) == max(
      cdl.num_local_batches(n, spec) for n in SIZES.values())


def test_fedvc_takes_ceil_nvc_over_b_steps_per_epoch():
  fed, partition = _fed()
  spec = cdl.TrainingSpec(batch_size=2, epochs=2, virtual_client_size=5,
                          seed=1)
  for cid in SIZES:  # Smaller and larger than N_VC alike.
    batches = _batches(fed, f"{cid}@4.0", spec)
    assert [len(b) for b in batches] == [2, 2, 1, 2, 2, 1]
    first, second = sum(batches[:3], []), sum(batches[3:], [])
    assert sorted(first) == sorted(second)  # One resample, two shuffles.
    assert set(first) <= set(partition[cid].tolist())
    assert cdl.num_local_batches(SIZES[cid], spec) == 6


def test_max_elements_is_one_subset_for_every_epoch():
  fed, partition = _fed()
  spec = cdl.TrainingSpec(batch_size=4, epochs=3, max_elements=6, seed=0)
  batches = _batches(fed, "d@1", spec)
  assert [len(b) for b in batches] == [4, 2] * 3
  epochs = [sorted(batches[2 * e] + batches[2 * e + 1]) for e in range(3)]
  assert epochs[0] == epochs[1] == epochs[2]
  assert set(epochs[0]) <= set(partition["d"].tolist())
  assert cdl.num_local_batches(20, spec) == 6


def test_run_seed_reaches_shuffle_resampling_and_augmentation():
  fed, _ = _fed()
  seen = {}

  def record_seed(element, seed):
    return dict(element, s=seed)

  def orders(seed, **kw):
    spec = cdl.TrainingSpec(batch_size=5, epochs=2, seed=seed, **kw)
    fn = cdl.build_training_dataset_fn(fed.client_data.serializable_dataset_fn,
                                       spec, record_seed)
    out = list(fn(tf.constant("d@3")))
    seen[seed] = np.concatenate([b["s"].numpy() for b in out])
    return [b["x"].numpy()[:, 0].astype(int).tolist() for b in out]
  first, first_seeds = orders(0), seen[0]
  assert orders(0) == first                 # Same seed, same batches ...
  np.testing.assert_array_equal(seen[0], first_seeds)  # ... and augmentation.
  assert orders(1) != first                 # The run seed reaches the shuffle
  assert not np.array_equal(seen[1], first_seeds)  # and augmentation seeds.
  assert len({tuple(s) for s in first_seeds}) == 40  # One per element.
  vc = {"virtual_client_size": 8, "shuffle_buffer": 0}  # Resampling alone.
  assert orders(0, **vc) == orders(0, **vc)
  assert sorted(sum(orders(0, **vc), [])) != sorted(sum(orders(1, **vc), []))


def _keras_model():
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=(1,)),
      tf.keras.layers.Dense(3, kernel_initializer=tf.keras.initializers.GlorotUniform(seed=1))])


def _process(fed, spec):
  element_spec = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec)(
          tf.constant("a@0")).element_spec
  model_fn = build_tff_model_fn(_keras_model, element_spec)
  return algorithms.build_fedavg(model_fn,
                                 tff.learning.optimizers.build_sgdm(0.05))


def test_recorded_budget_equals_batches_taken(tmp_path):
  fed, _ = _fed()
  spec = cdl.TrainingSpec(batch_size=3, epochs=2, seed=7)
  sampler = sampling.UniformSampler(list(SIZES), 2, seed=7)
  fn = cdl.build_training_dataset_fn(fed.client_data.serializable_dataset_fn,
                                     spec)
  taken = {r: [len(list(fn(tf.constant(k)))) for k in sampler.round_keys(r)]
           for r in (1, 2, 3)}
  with contexts.managed_execution_context():
    process = _process(fed, spec)
    result = training_loop.run_federated_training(
        "fedavg", process, fed, spec, sampler, lambda w: {"loss": 0.0,
                                                          "accuracy": 0.0},
        training_loop.LoopConfig(total_rounds=3, output_dir=str(tmp_path),
                                 rounds_per_checkpoint=3), log_fn=None)
    # TFF's own count of the batches it trained on in round 1.
    composed = training_loop.build_training_process(process, fed, spec)
    out = composed.next(composed.initialize(), sampler.round_keys(1))
    tff_batches = int(out.metrics["client_work"]["train"]["num_batches"])
  assert tff_batches == sum(taken[1])
  for row in result.rows:
    assert int(row["batch_budget"]) == max(taken[int(row["round"])])
  assert int(result.rows[-1]["cumulative_batch_budget"]) == sum(
      max(t) for t in taken.values())


def test_two_run_seeds_train_differently_one_seed_identically():
  fed, _ = _fed()
  weights = {}
  with contexts.managed_execution_context():
    # FedAvg's computations depend on no seed (the element spec is the
    # same): built once; each run composes them with its own seeded
    # dataset computation (ours: test-suite time, issue 29).
    fedavg = _process(fed, cdl.TrainingSpec(batch_size=3, epochs=2, seed=0))
    for run, seed in (("first", 0), ("again", 0), ("other", 1)):
      spec = cdl.TrainingSpec(batch_size=3, epochs=2, seed=seed)
      process = training_loop.build_training_process(fedavg, fed, spec)
      state = process.initialize()
      initial = process.get_model_weights(state).trainable
      for r in (1, 2):
        state = process.next(state, [f"c@{r}", f"d@{r}"]).state
      weights[run] = (initial, process.get_model_weights(state).trainable)
  for a, b in zip(weights["first"][0], weights["other"][0]):
    np.testing.assert_array_equal(a, b)  # Same initial weights.
  for a, b in zip(weights["first"][1], weights["again"][1]):
    np.testing.assert_array_equal(a, b)
  assert max(np.abs(a - b).max() for a, b in
             zip(weights["first"][1], weights["other"][1])) > 1e-6


@pytest.mark.parametrize("global_seed", [0, 7])
def test_global_seed_changes_no_client_shuffle(global_seed):
  """A process-wide tf.random.set_seed (a centralized baseline trained
  earlier in the process, a user's script) neither changes the client's
  shuffles (eager and traced, as TFF traces them) nor, for 0, breaks them."""
  fed, _ = _fed()
  spec = cdl.TrainingSpec(batch_size=3, epochs=2, seed=5)
  fn = cdl.build_training_dataset_fn(fed.client_data.serializable_dataset_fn,
                                     spec)
  traced = lambda: [b["x"].numpy()[:, 0].astype(int).tolist() for b in
                    tf.function(lambda k: fn(k))(tf.constant("d@3"))]
  fresh = (_batches(fed, "d@3", spec), traced())
  assert fresh[0] == fresh[1]
  try:
    tf.random.set_seed(global_seed)
    assert (_batches(fed, "d@3", spec), traced()) == fresh
  finally:
    from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
    context.context()._set_global_seed(None)  # pylint: disable=protected-access
