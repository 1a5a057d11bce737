"""FedIR against a numpy reference where its two easy-to-lose details matter.

Hsu, Qi & Brown 2020, Sec. 5.2: each client k weights an example's loss by
w = p(y) / q_k(y), and "in practice, we use self-normalized weights when
computing loss over a mini-batch" (loss = sum_i w_i l_i / sum_i w_i, eq. 4);
FedIR "does not change server optimization loops", so the server still
averages client updates weighted by n_k (McMahan et al. 2017, Algorithm 1).

Neither detail shows when a mini-batch is the client's whole data (then
sum_i w_i = n_k whenever p and q_k share their support) or when all clients
have the same size, which is how the older FedIR tests are built. Here the
batches are smaller than the clients' data and the clients differ in size;
every run is compared with a softmax-regression reference written in numpy.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.runtime import contexts
from federated_vision import methods
from federated_vision.algorithms import fedir
from federated_vision.data import client_data as cdl

NUM_CLASSES = 3
FEATURES = 4
LR = 0.5
TOL = 1e-5
# Initial softmax-regression weights (ours: any values with distinct logits).
W0 = np.linspace(-0.6, 0.5, FEATURES * NUM_CLASSES).reshape(
    FEATURES, NUM_CLASSES).astype(np.float32)
B0 = np.array([0.1, -0.2, 0.05], np.float32)
INPUT_SPEC = collections.OrderedDict(
    x=tf.TensorSpec([None, FEATURES], tf.float32),
    y=tf.TensorSpec([None], tf.int64))


def model_fn():
  keras_model = tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=(FEATURES,)),
      tf.keras.layers.Dense(
          NUM_CLASSES, kernel_initializer=tf.constant_initializer(W0),
          bias_initializer=tf.constant_initializer(B0))])
  return tff.learning.models.from_keras_model(
      keras_model, input_spec=INPUT_SPEC,
      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))


def _features(labels, seed):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(len(labels), FEATURES)).astype(np.float32)
  x[:, 0] += labels  # Some signal, so the gradients differ per class.
  return x


def _dataset(x, y, batch_size, with_counts):
  ds = tf.data.Dataset.from_tensor_slices(
      collections.OrderedDict(x=x, y=np.asarray(y, np.int64))).batch(batch_size)
  if not with_counts:
    return ds
  # What client_data adds for client_label_counts=True: the whole client's
  # class counts on every batch.
  counts = tf.constant(np.bincount(y, minlength=NUM_CLASSES), tf.float32)
  return ds.map(lambda b: collections.OrderedDict(
      b, **{cdl.LABEL_COUNTS_KEY: counts}))


# --- numpy reference ---------------------------------------------------------

def _softmax(z):
  e = np.exp(z - z.max(axis=1, keepdims=True))
  return e / e.sum(axis=1, keepdims=True)


def _reference_client(w, b, x, y, p, batch_size, normalise=True):
  """Client k's local SGD epoch on eq. 4's loss; returns its final (W, b).

  normalise=False is the bug: mean_i w_i l_i instead of sum w l / sum w.
  """
  w, b = w.astype(np.float64), b.astype(np.float64)
  q = np.bincount(y, minlength=NUM_CLASSES) / len(y)  # Whole local data.
  for start in range(0, len(y), batch_size):
    xb, yb = x[start:start + batch_size], y[start:start + batch_size]
    iw = p[yb] / q[yb]
    scale = iw / (iw.sum() if normalise else len(yb))
    # d/dz of cross-entropy(softmax(z), y) is softmax(z) - onehot(y).
    g = (_softmax(xb @ w + b) - np.eye(NUM_CLASSES)[yb]) * scale[:, None]
    w, b = w - LR * xb.T @ g, b - LR * g.sum(axis=0)
  return w, b


def _reference_round(clients, p, batch_size, by_size=True, normalise=True):
  """One FedAvg round of FedIR clients (server SGD, learning rate 1)."""
  ends = [_reference_client(W0, B0, x, y, p, batch_size, normalise)
          for x, y in clients]
  weights = np.array([len(y) if by_size else 1.0 for _, y in clients])
  weights = weights / weights.sum()
  return (sum(a * e[0] for a, e in zip(weights, ends)),
          sum(a * e[1] for a, e in zip(weights, ends)))


def _max_diff(a, b):
  return max(np.abs(x - y).max() for x, y in zip(a, b))


# --- the plain functions -----------------------------------------------------

def test_self_normalized_loss_is_not_the_weighted_mean():
  # (1*1 + 3*2) / (1 + 3) = 1.75; the weighted mean would be 7 / 2 = 3.5.
  loss = fedir.self_normalized_loss(tf.constant([1.0, 2.0]),
                                    tf.constant([1.0, 3.0]))
  assert loss.numpy() == pytest.approx(1.75, abs=1e-7)


def test_self_normalized_loss_on_a_batch_smaller_than_the_client():
  # Client labels [0, 0, 0, 0, 1, 2], p uniform: q_k = (4/6, 1/6, 1/6), so
  # w = (1/3)/(4/6) = 0.5 for class 0 and 2 for classes 1, 2. Over the whole
  # client sum w = 6 = n_k; over a batch of two class-0 examples it is 1.
  q = np.array([4 / 6, 1 / 6, 1 / 6], np.float32)
  p = np.full(3, 1 / 3, np.float32)
  w = fedir.importance_weights(tf.constant([0, 0], tf.int64), p, q).numpy()
  np.testing.assert_allclose(w, [0.5, 0.5], rtol=1e-6)
  loss = fedir.self_normalized_loss(tf.constant([1.0, 3.0]), w).numpy()
  assert loss == pytest.approx(2.0, abs=1e-6)  # Not 0.5 * 4 / 2 = 1.0.
  w2 = fedir.importance_weights(tf.constant([1, 2], tf.int64), p, q).numpy()
  np.testing.assert_allclose(w2, [2.0, 2.0], rtol=1e-6)
  assert fedir.self_normalized_loss(tf.constant([1.0, 3.0]), w2).numpy() \
      == pytest.approx(2.0, abs=1e-6)  # Not 2 * 4 / 2 = 4.0.


# --- process-level runs ------------------------------------------------------

@pytest.fixture(scope="module")
def context():
  with contexts.managed_execution_context() as pool:
    yield pool


def _run_one_round(process, datasets):
  state = process.initialize()
  state = process.next(state, datasets).state
  return [np.asarray(v) for v in process.get_model_weights(state).trainable]


@pytest.mark.parametrize("label_counts", [False, True])
def test_fedir_client_normalises_every_mini_batch(context, label_counts):
  del context
  # One client of 6 examples in batches of 2: the batches' weights sum to
  # 1, 1 and 4 (see the test above), never to the batch size.
  y = np.array([0, 0, 0, 0, 1, 2])
  x = _features(y, seed=1)
  p = np.full(NUM_CLASSES, 1 / NUM_CLASSES)
  process = fedir.build_fedir(
      model_fn, tff.learning.optimizers.build_sgdm(LR), NUM_CLASSES,
      client_label_counts=label_counts)
  ours = _run_one_round(process, [_dataset(x, y, 2, label_counts)])
  want = _reference_round([(x, y)], p, batch_size=2)
  for a, b in zip(ours, want):
    np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
  # The reference tells the bug apart by far more than the tolerance.
  bug = _reference_round([(x, y)], p, batch_size=2, normalise=False)
  assert _max_diff(want, bug) > 1e3 * TOL


# Same class mix (labels [0, 0, 1, 2] repeated), sizes 4, 8 and 12; with
# any p every batch of 4 (one client mix) has sum w = 4: only the weighting
# matters.
SIZES = (4, 8, 12)


def _clients():
  out = []
  for k, n in enumerate(SIZES):
    y = np.tile([0, 0, 1, 2], n // 4)
    out.append((_features(y, seed=10 + k), y))
  return out


def _check_weighted_by_n_k(ours, clients, p):
  want = _reference_round(clients, p, batch_size=4)
  for a, b in zip(ours, want):
    np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
  uniform = _reference_round(clients, p, batch_size=4, by_size=False)
  assert _max_diff(want, uniform) > 1e3 * TOL


def test_fedir_weights_clients_by_their_size(context):
  del context
  clients = _clients()
  p = np.array([0.2, 0.5, 0.3])
  process = fedir.build_fedir(model_fn,
                              tff.learning.optimizers.build_sgdm(LR),
                              NUM_CLASSES, target_distribution=p)
  ours = _run_one_round(process,
                        [_dataset(x, y, 4, False) for x, y in clients])
  _check_weighted_by_n_k(ours, clients, p)


def test_fedir_method_as_the_binaries_build_it_weights_by_size(context):
  del context
  # methods.build_method is what train_main runs: FedIR's client work with
  # q_k from the label counts, inside FedAvg's composition.
  clients = _clients()
  config = methods.MethodConfig(algorithm="fedavg", variants=("fedir",),
                                client_learning_rate=LR, client_batch_size=4)
  inputs = methods.MethodInputs(
      model_fn=model_fn, num_classes=NUM_CLASSES,
      client_ids=["a", "b", "c"], client_sizes=list(SIZES),
      clients_per_round=3)
  method = methods.build_method(config, inputs)
  assert method.settings["client_work"] == "fedir"
  ours = _run_one_round(method.process,
                        [_dataset(x, y, 4, True) for x, y in clients])
  _check_weighted_by_n_k(ours, clients, np.full(NUM_CLASSES, 1 / 3))
