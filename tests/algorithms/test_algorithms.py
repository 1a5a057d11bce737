"""FedAvg / FedAvgM / FedSGD / FedIR processes: construction and exact runs."""

import collections
import functools

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import algorithms
from federated_vision.algorithms import fedir
from tiny_model_runs import (  # pylint: disable=unused-import
    IMBALANCED, NUM_CLASSES, _client_datasets, _keras_model, _sgd, _train,
    context, model_fn)

# --- exact maths -----------------------------------------------------------

def test_importance_weights_exact():
  labels = tf.constant([0, 0, 1, 2, 2, 2], tf.int64)
  p = tf.constant([0.5, 0.25, 0.25])
  q = tf.constant([2 / 6, 1 / 6, 3 / 6])
  w = fedir.importance_weights(labels, p, q).numpy()
  np.testing.assert_allclose(w, [1.5, 1.5, 1.5, 0.5, 0.5, 0.5], rtol=1e-6)
  losses = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
  # Eq. 4: sum w l / sum w = (1.5*6 + 0.5*15) / 6 = 16.5 / 6.
  assert fedir.self_normalized_loss(losses, w).numpy() == pytest.approx(2.75)


def test_importance_weights_zero_where_client_lacks_class():
  w = fedir.importance_weights(tf.constant([1]), tf.constant([0.5, 0.5]),
                               tf.constant([1.0, 0.0])).numpy()
  assert w.tolist() == [0.0]
  assert fedir.self_normalized_loss(tf.constant([3.0]), w).numpy() == 0.0


def test_label_distribution_counts_all_batches():
  ds = tf.data.Dataset.from_tensor_slices(
      {"y": tf.constant([0, 2, 2, 2], tf.int64)}).batch(3)
  np.testing.assert_allclose(fedir.label_distribution(ds, 3).numpy(),
                             [0.25, 0.0, 0.75])


def test_estimate_target_distribution():
  np.testing.assert_allclose(
      fedir.estimate_target_distribution([0, 1, 1, 1], 3), [0.25, 0.75, 0.0])
  with pytest.raises(ValueError, match="labels must lie"):
    fedir.estimate_target_distribution([0, 3], 3)


# --- construction ----------------------------------------------------------

def test_builders_validate_arguments():
  with pytest.raises(TypeError, match="client_optimizer"):
    algorithms.build_fedavg(model_fn, tf.keras.optimizers.SGD(0.1))
  with pytest.raises(ValueError, match="server_momentum"):
    algorithms.build_fedavgm(model_fn, _sgd(0.1), server_momentum=1.0)
  with pytest.raises(ValueError, match="server_learning_rate"):
    algorithms.build_fedavgm(model_fn, _sgd(0.1), server_learning_rate=0.0)
  with pytest.raises(ValueError, match="learning_rate"):
    algorithms.build_fedsgd(model_fn, learning_rate=-1.0)
  with pytest.raises(ValueError, match="target_distribution"):
    fedir.build_fedir(model_fn, _sgd(0.1), NUM_CLASSES,
                      target_distribution=[0.5, 0.5])
  with pytest.raises(ValueError, match="num_classes"):
    fedir.build_fedir(model_fn, _sgd(0.1), 0)


# --- built once: processes several tests train ------------------------------

@pytest.fixture(scope="module")
def fedavg_process():
  """FedAvg, client SGD(0.1), its defaults otherwise."""
  return algorithms.build_fedavg(model_fn, _sgd(0.1))


@pytest.fixture(scope="module")
def fedir_process():
  """FedIR, client SGD(0.1), its defaults otherwise (uniform target p)."""
  return fedir.build_fedir(model_fn, _sgd(0.1), NUM_CLASSES)


# The class distribution of every client in test_fedir_with_own_distribution_is_fedavg.
OWN_P = (3 / 6, 1 / 6, 2 / 6)


@pytest.fixture(scope="module")
def fedir_own_p_process():
  """FedIR with target p = OWN_P, client SGD(0.1)."""
  return fedir.build_fedir(model_fn, _sgd(0.1), NUM_CLASSES,
                           target_distribution=list(OWN_P))


def test_type_signatures(fedavg_process, fedir_process):
  avg = fedavg_process
  assert isinstance(avg, tff.learning.templates.LearningProcess)
  ir = fedir_process
  # Same data and model weights types; FedIR's client-work state carries p.
  assert (avg.next.type_signature.parameter[1]
          == ir.next.type_signature.parameter[1])
  assert (avg.get_model_weights.type_signature.result
          == ir.get_model_weights.type_signature.result)
  work_state = ir.initialize.type_signature.result.member.client_work
  assert work_state.message.shape == (NUM_CLASSES,)


# --- tiny runs ---------------------------------------------------------------

@pytest.fixture(scope="module")
def fedavg_imbalanced(context, fedavg_process):
  """`_train(FedAvg, IMBALANCED)`: 3 rounds' weights and losses."""
  del context
  return _train(fedavg_process, _client_datasets(IMBALANCED))


def test_fedavg_matches_tff_weighted_fed_avg(fedavg_imbalanced):
  data = _client_datasets(IMBALANCED)
  ours, our_losses = fedavg_imbalanced
  theirs, _ = _train(tff.learning.algorithms.build_weighted_fed_avg(
      model_fn, _sgd(0.1), _sgd(1.0)), data)
  for a, b in zip(ours, theirs):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  assert our_losses[-1] < our_losses[0]


def test_fedavgm_without_momentum_is_fedavg(fedavg_imbalanced):
  data = _client_datasets(IMBALANCED)
  avg, _ = fedavg_imbalanced
  avgm0, _ = _train(algorithms.build_fedavgm(
      model_fn, _sgd(0.1), server_learning_rate=1.0, server_momentum=0.0), data)
  for a, b in zip(avg, avgm0):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  avgm, _ = _train(algorithms.build_fedavgm(
      model_fn, _sgd(0.1), server_learning_rate=1.0, server_momentum=0.9), data)
  assert max(np.abs(a - b).max() for a, b in zip(avg, avgm)) > 1e-3


def test_fedir_with_own_distribution_is_fedavg(context, fedavg_process,
                                               fedir_process,
                                               fedir_own_p_process):
  del context
  # Every client has the same class distribution q = (3/6, 1/6, 2/6) = p.
  same = [[0, 0, 0, 1, 2, 2], [2, 0, 1, 0, 2, 0], [0, 2, 1, 2, 0, 0]]
  for labels in same:
    np.testing.assert_allclose(np.bincount(labels) / len(labels), OWN_P)
  data = _client_datasets(same)
  avg, _ = _train(fedavg_process, data)
  ir, _ = _train(fedir_own_p_process, data)
  for a, b in zip(avg, ir):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  # A different target (uniform) changes training.
  ir_u, _ = _train(fedir_process, data)
  assert max(np.abs(a - b).max() for a, b in zip(avg, ir_u)) > 1e-4


def test_fedir_gradient_equals_explicitly_weighted_loss(context,
                                                       fedir_own_p_process):
  del context
  # q = (3/5, 1/5, 1/5) != p = OWN_P: w = p(y)/q(y) = (5/6, 5/6, 5/6, 5/6,
  # 10/6), not a plain mean. The module's FedIR(p = OWN_P, SGD(0.1)).
  labels = [0, 0, 0, 1, 2]
  (data,) = _client_datasets([labels], batch_size=5)
  p = np.array(OWN_P, np.float32)
  lr = 0.1
  process = fedir_own_p_process
  state = process.initialize()
  start = process.get_model_weights(state)
  end = process.get_model_weights(process.next(state, [data]).state)
  # Reference: one SGD step on sum_i w_i l_i / sum_i w_i with w = p(y)/q(y).
  model = _keras_model()
  start.assign_weights_to(model)
  batch = next(iter(data))
  q = np.bincount(labels, minlength=3) / len(labels)
  w = p[labels] / q[labels]
  with tf.GradientTape() as tape:
    logits = model(batch["x"])
    l = tf.keras.losses.sparse_categorical_crossentropy(batch["y"], logits,
                                                        from_logits=True)
    loss = tf.reduce_sum(w * l) / w.sum()
  grads = tape.gradient(loss, model.trainable_variables)
  for v0, g, v1 in zip(start.trainable, grads, end.trainable):
    np.testing.assert_allclose(np.asarray(v0) - lr * g.numpy(), v1,
                               rtol=1e-5, atol=1e-6)


def test_fedir_composes_with_server_momentum(context):
  del context
  data = _client_datasets(IMBALANCED)
  process = fedir.build_fedir(
      model_fn, _sgd(0.1), NUM_CLASSES,
      server_optimizer=algorithms.build_server_momentum_optimizer(1.0, 0.9))
  finalizer_state = process.initialize().finalizer
  assert "momentum" in str(finalizer_state) or len(finalizer_state) > 1
  _, losses = _train(process, data, rounds=4)
  assert np.isfinite(losses).all() and losses[-1] < losses[0]
  state = fedir.with_target_distribution(process.initialize(), [1, 1, 2])
  np.testing.assert_allclose(state.client_work.message,
                             [0.25, 0.25, 0.5])


def test_fedsgd_is_one_full_batch_gradient_step(context):
  del context
  data = _client_datasets([[0, 1, 2, 0], [1, 1]], batch_size=100)
  process = algorithms.build_fedsgd(model_fn, learning_rate=0.3)
  state = process.initialize()
  start = process.get_model_weights(state)
  end = process.get_model_weights(process.next(state, data).state)
  # Reference: the n_k-weighted mean of per-client mean-loss gradients.
  model = _keras_model()
  start.assign_weights_to(model)
  total = None
  for ds, n in zip(data, (4, 2)):
    batch = next(iter(ds))
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
          batch["y"], model(batch["x"]), from_logits=True))
    g = [n / 6 * t.numpy() for t in tape.gradient(loss, model.trainable_variables)]
    total = g if total is None else [a + b for a, b in zip(total, g)]
  for v0, g, v1 in zip(start.trainable, total, end.trainable):
    np.testing.assert_allclose(np.asarray(v0) - 0.3 * g, v1, rtol=1e-5, atol=1e-6)


# --- aggregation factories and dropped clients --------------------------------

UNIFORM = tff.learning.ClientWeighting.UNIFORM


def test_unweighted_factory_needs_uniform_weighting():
  dp = tff.learning.dp_aggregator(0.1, 5)
  fedavg = lambda **kw: algorithms.build_fedavg(model_fn, _sgd(0.1), **kw)
  fedsgd = lambda **kw: algorithms.build_fedsgd(model_fn, 0.1, **kw)
  for build in (fedavg, fedsgd,
                lambda **kw: algorithms.build_fedavgm(model_fn, _sgd(0.1), **kw),
                lambda **kw: fedir.build_fedir(model_fn, _sgd(0.1), NUM_CLASSES,
                                               **kw)):
    with pytest.raises(ValueError, match="model_aggregator .*unweighted.*"
                       "client_weighting=NUM_EXAMPLES"):
      build(model_aggregator=dp)
  # Accepted with UNIFORM. FedAvgM and FedIR: the processes (this factory)
  # that test_dp_aggregator_trains_two_rounds_on_digits trains, built once.
  for build in (fedavg, fedsgd):
    assert isinstance(build(model_aggregator=dp, client_weighting=UNIFORM),
                      tff.learning.templates.LearningProcess)
  for method in ("fedavgm", "fedir"):
    assert isinstance(_dp_digits_process(method),
                      tff.learning.templates.LearningProcess)
  with pytest.raises(TypeError, match="model_aggregator"):
    algorithms.build_fedavg(model_fn, _sgd(0.1), model_aggregator="mean")
  with pytest.raises(TypeError, match="client_weighting"):
    algorithms.build_fedavg(model_fn, _sgd(0.1), client_weighting="uniform")


def test_unweighted_mean_equals_tff_unweighted_fed_avg(context):
  del context
  data = _client_datasets(IMBALANCED)
  # Noise-free, never-clipping DP: the plain unweighted mean of the deltas.
  agg = lambda: tff.aggregators.DifferentiallyPrivateFactory.gaussian_fixed(
      noise_multiplier=0.0, clients_per_round=3, clip=1e6)
  ours, _ = _train(algorithms.build_fedavgm(
      model_fn, _sgd(0.1), server_learning_rate=1.0, server_momentum=0.5,
      model_aggregator=agg(), client_weighting=UNIFORM), data)
  theirs, _ = _train(tff.learning.algorithms.build_unweighted_fed_avg(
      model_fn, _sgd(0.1), tff.learning.optimizers.build_sgdm(1.0, 0.5),
      model_aggregator=agg()), data)
  for a, b in zip(ours, theirs):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  # And the same as a weighted mean with unit weights.
  uniform, _ = _train(algorithms.build_fedavgm(
      model_fn, _sgd(0.1), server_learning_rate=1.0, server_momentum=0.5,
      client_weighting=UNIFORM), data)
  for a, b in zip(ours, uniform):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _digits_setup(num_clients=5):
  from federated_vision import models  # pylint: disable=g-import-not-at-top
  from federated_vision.data import client_data as cdl  # pylint: disable=g-import-not-at-top
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  from federated_vision.models import digits as digits_models  # pylint: disable=g-import-not-at-top
  fed = digits.load_federated(num_clients=num_clients, alpha=0.5, seed=1)
  spec = cdl.TrainingSpec(batch_size=16, max_elements=48, seed=1)
  input_spec = {"x": tf.TensorSpec([None, 8, 8, 1], tf.float32),
                "y": tf.TensorSpec([None], tf.int64)}
  tff_model_fn = models.build_tff_model_fn(digits_models.create_digits_cnn,
                                           input_spec)
  return fed, spec, tff_model_fn


@functools.cache
def _dp_digits_process(method):
  """`method` ('fedavgm' or 'fedir') on the digits CNN with
  `tff.learning.dp_aggregator(0.1, 5)` and UNIFORM weighting; built once
  per module (ours: test-suite CPU, issue 29): a process holds no state
  between runs (each test initializes its own)."""
  _, _, digits_model_fn = _digits_setup()
  kwargs = dict(model_aggregator=tff.learning.dp_aggregator(0.1, 5),
                client_weighting=UNIFORM)
  if method == "fedavgm":
    return algorithms.build_fedavgm(digits_model_fn, _sgd(0.05), **kwargs)
  server = algorithms.build_server_momentum_optimizer(1.0, 0.9)
  return fedir.build_fedir(digits_model_fn, _sgd(0.05), 10,
                           server_optimizer=server, **kwargs)


@pytest.mark.parametrize("method", ["fedavgm", "fedir"])
def test_dp_aggregator_trains_two_rounds_on_digits(context, method):
  del context
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top
  fed, spec, _ = _digits_setup()
  training = training_loop.build_training_process(_dp_digits_process(method),
                                                  fed, spec)
  state = training.initialize()
  start = training.get_model_weights(state).trainable
  clients = sorted(fed.client_sizes)
  for r in (1, 2):
    out = training.next(state, [f"{c}@{r}" for c in clients])
    state = out.state
    train = out.metrics["client_work"]["train"]
    assert np.isfinite(train["loss"]) and train["num_examples"] == 5 * 48
    assert out.metrics["client_work"]["clients_dropped_non_finite"] == 0
    assert out.metrics["finalizer"]["update_non_finite"] == 0
  # The DP aggregator ran: it adapts its clipping norm from round to round.
  assert "dp" in str(out.metrics["aggregator"]), out.metrics["aggregator"]
  assert str(training.initialize().aggregator) != str(state.aggregator)
  end = training.get_model_weights(state).trainable
  moved = [np.abs(np.asarray(a) - np.asarray(b)).max() for a, b in zip(start, end)]
  assert all(np.isfinite(m) and m > 0 for m in moved)


def _with_nan(ds):
  return ds.map(lambda b: collections.OrderedDict(x=b["x"] * np.nan, y=b["y"]))


@pytest.mark.parametrize("weighting", ["num_examples", "uniform"])
@pytest.mark.parametrize("method", ["fedavg", "fedir"])
def test_clients_dropped_non_finite_counted(context, fedavg_process,
                                           fedir_process, weighting, method):
  del context
  weighting = tff.learning.ClientWeighting[weighting.upper()]
  good, bad, empty = _client_datasets([[0, 1, 2, 0], [1, 2, 2], []])
  bad = _with_nan(bad)
  if weighting == tff.learning.ClientWeighting.NUM_EXAMPLES:  # The default.
    process = {"fedavg": fedavg_process, "fedir": fedir_process}[method]
  elif method == "fedavg":
    process = algorithms.build_fedavg(model_fn, _sgd(0.1),
                                      client_weighting=weighting)
  else:
    process = fedir.build_fedir(model_fn, _sgd(0.1), NUM_CLASSES,
                                client_weighting=weighting)
  state = process.initialize()
  # An empty client is not a dropped one (its weight is 0 under NUM_EXAMPLES).
  counts = [process.next(state, data).metrics["client_work"][
      "clients_dropped_non_finite"] for data in (
          [good, empty], [good, bad, empty], [bad, bad])]
  assert counts == [0, 1, 2]
  out = process.next(state, [good, bad])
  assert out.metrics["finalizer"]["update_non_finite"] == 0
  all_bad = process.next(state, [bad])
  if weighting == tff.learning.ClientWeighting.NUM_EXAMPLES:
    # Weighted mean over zero total weight: TFF rejects the server update.
    assert all_bad.metrics["finalizer"]["update_non_finite"] == 1
