"""McMahan's character LSTM: its parameter count against the documented one,
and next-character accuracy counted as the docs say (padding skipped, the
line end a target), checked on a tiny run's weights."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import centralized
from federated_vision.data import shakespeare
from federated_vision.evaluation import keras_eval
from federated_vision.models import char_lstm
from federated_vision.models import masked

from conftest import REPO as ROOT


def _documented(pattern: str) -> int:
  """The number docs/datasets.md prints after `pattern`."""
  with open(os.path.join(ROOT, "docs", "datasets.md")) as f:
    m = re.search(pattern + r"\s*\**([\d,]+)", f.read())
  assert m, f"docs/datasets.md prints no {pattern!r}"
  return int(m.group(1).replace(",", ""))


def test_parameter_count_matches_the_documented_figure():
  model = char_lstm.create_char_lstm(vocab_size=shakespeare.VOCAB_SIZE)
  assert model.count_params() == char_lstm.num_params(256) == 864_512
  assert model.count_params() == _documented("char_lstm parameters:")
  assert _documented("paper:") == char_lstm.PAPER_PARAMS == 866_578
  # What the docs say of the difference: 265 V + 796,672 with Keras' cells,
  # no integer V gives 866,578; TF1 peephole cells (3 x 256 per layer) with
  # V = 258 give it exactly.
  assert char_lstm.num_params(1) - char_lstm.num_params(0) == 265
  assert (char_lstm.PAPER_PARAMS - char_lstm.num_params(0)) % 265 != 0
  assert char_lstm.num_params(258) + 2 * 3 * 256 == char_lstm.PAPER_PARAMS
  shapes = [tuple(w.shape) for w in model.weights]
  assert shapes[0] == (256, 8)  # The 8-d character embedding.
  assert (8, 1024) in shapes and (256, 1024) in shapes  # 2 x LSTM(256).
  assert shapes[-2:] == [(256, 256), (256,)]  # The softmax over 256 bytes.
  assert model.output_shape == (None, 80, 256)


def test_masked_loss_and_accuracy_exact():
  rng = np.random.default_rng(0)
  y = np.array([[5, 6, 10, 0, 0], [7, 0, 0, 0, 0]], np.int64)
  logits = rng.normal(size=(2, 5, 12)).astype(np.float32)
  loss, (accuracy,) = masked.loss_and_metrics(2)
  mask = y != masked.PAD_LABEL
  shifted = logits - logits.max(-1, keepdims=True)
  log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  want = -np.take_along_axis(log_p, y[..., None], -1)[..., 0][mask].mean()
  np.testing.assert_allclose(float(loss(y, logits)), want, rtol=1e-6)
  accuracy.update_state(y, logits)
  assert float(accuracy.result()) == pytest.approx(
      (logits.argmax(-1) == y)[mask].mean())
  # One class per example: the plain Keras pair, unchanged.
  plain_loss, (plain_acc,) = masked.loss_and_metrics(1)
  assert plain_loss.get_config().get("ignore_class") is None
  assert loss.get_config()["ignore_class"] == masked.PAD_LABEL
  assert isinstance(plain_acc, tf.keras.metrics.SparseCategoricalAccuracy)


@pytest.fixture(scope="module")
def tiny_run():
  """The package's centralized baseline (`centralized.train_centralized`,
  Keras fit with the masked loss and accuracy) for 2 epochs of a small char
  LSTM on 3 synthetic roles: the trained model, its builder, the data and
  the run's result."""
  split = shakespeare.synthetic_split(num_clients=3, lines_per_client=6)
  fed = shakespeare.build(split, "syn")
  built = []

  def keras_fn():
    built.append(char_lstm.create_char_lstm(256, units=16, layers=1, seed=1))
    return built[-1]
  result = centralized.train_centralized(
      keras_fn, fed, fed.test_batches(7), learning_rate=2.0, batch_size=4,
      epochs=2, seed=0)
  return built[0], keras_fn, fed, result


def test_tiny_run_accuracy_is_the_count_of_correct_next_characters(tiny_run):
  model, keras_fn, fed, result = tiny_run
  # The count, in numpy: argmax of the trained model's logits at every
  # position whose target is not padding; the line end is a target.
  test = list(fed.test_data.as_numpy_iterator())
  x = np.stack([e["x"] for e in test]).astype(np.int32)
  y = np.stack([e["y"] for e in test]).astype(np.int64)
  predicted = model.predict(x, verbose=0).argmax(-1)
  targets = y != shakespeare.PAD
  correct = int(((predicted == y) & targets).sum())
  assert int(targets.sum()) == sum(
      len(l) for c in fed.client_data.client_ids
      for l in shakespeare.synthetic_split(3, 6).test[c])
  assert int((y == shakespeare.LINE_END).sum()) == len(test)  # 1 per line.
  assert 0 < correct < int(targets.sum())
  want = correct / int(targets.sum())
  # The run's own accuracy, and the federated runs' evaluation (what
  # train_main reports as test_accuracy) of the same weights.
  assert result.accuracy == pytest.approx(want, abs=1e-7)
  evaluate = keras_eval.build_keras_evaluate_fn(keras_fn, fed.test_batches(7))
  weights = tff.learning.models.ModelWeights.from_model(model)
  assert evaluate(weights)["accuracy"] == pytest.approx(want, abs=1e-7)
  assert result.history[-1] == result.accuracy
