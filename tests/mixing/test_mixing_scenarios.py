"""Mixing scenarios: the digits split and per-class / per-group evaluation."""

import math

import numpy as np
import pytest
import tensorflow as tf

from federated_vision.mixing import central_data as mixing_data
from federated_vision.data import client_data as cdl
from federated_vision.data import digits
from federated_vision.mixing import scenarios as mixing_scenarios


def _all_examples(fed, cid):
  ds = fed.client_data.serializable_dataset_fn(tf.constant(cid))
  return [(e["x"], int(e["y"])) for e in ds.as_numpy_iterator()]


def test_digits_scenario_moves_exactly_the_missing_classes_to_the_server():
  scenario = mixing_scenarios.digits_scenario("9,8", num_clients=6, alpha=0.5)
  fed, central = scenario.federated, scenario.central
  x_tr, y_tr, _, y_te = digits.load_arrays()
  assert scenario.groups == {"missing": [8, 9], "present": list(range(8))}
  # Clients hold no 8 or 9; the server holds every 8 and 9 of the partition.
  assert fed.class_counts[:, 8:].sum() == 0
  for cid in fed.client_data.client_ids:
    labels = [y for _, y in _all_examples(fed, cid)]
    assert len(labels) == fed.client_sizes[cid] and not set(labels) & {8, 9}
  used = (len(y_tr) // 6) * 6  # Equal client sizes drop the remainder.
  counts = fed.class_counts.sum(axis=0) + np.bincount(central.labels,
                                                      minlength=10)
  assert counts.sum() == used and counts[8:].sum() == central.num_examples
  assert set(central.labels.tolist()) == {8, 9}
  rows = central.gather_fn(tf.range(central.num_examples, dtype=tf.int64))
  np.testing.assert_array_equal(rows["y"].numpy(), central.labels)
  # Each centralized image is a training image of its class.
  for image, label in zip(rows["x"].numpy()[:5], rows["y"].numpy()[:5]):
    assert (np.abs(x_tr[y_tr == label] - image).reshape(
        -1, 64).max(axis=1) == 0).any()
  # Handing them back gives K equal-size clients again (the oracle).
  oracle = mixing_data.recombined_data(fed, central)
  assert sorted(oracle.client_sizes.values()) == [len(y_tr) // 6] * 6
  np.testing.assert_array_equal(oracle.class_counts.sum(axis=0), counts)
  # The test set keeps every class.
  test_labels = np.concatenate([b["y"].numpy() for b in fed.test_data.batch(999)])
  assert set(test_labels.tolist()) == set(range(10))
  assert len(test_labels) == len(y_te)


def test_missing_classes_are_validated():
  for bad in ("", "10", "a,b", list(range(10))):
    with pytest.raises(ValueError, match="missing_classes"):
      mixing_scenarios.digits_scenario(bad)


def test_group_metrics_exact():
  logits = np.array([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 1.0],
                     [1.0, 0.0, 0.0]])
  labels = np.array([0, 1, 1, 2])
  out = mixing_scenarios.group_metrics(logits, labels, 3,
                                       {"head": [0, 1], "tail": [2]})
  log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
  assert out["loss"] == pytest.approx(-log_p[np.arange(4), labels].mean())
  assert out["accuracy"] == 0.5
  assert out["accuracy_class_0"] == 1.0 and out["accuracy_class_1"] == 0.5
  assert out["accuracy_class_2"] == 0.0
  assert out["accuracy_head"] == pytest.approx(2 / 3) and out["accuracy_tail"] == 0.0
  empty = mixing_scenarios.group_metrics(logits[:2], labels[:2], 3, {"t": [2]})
  assert math.isnan(empty["accuracy_class_2"]) and math.isnan(empty["accuracy_t"])
  with pytest.raises(ValueError, match="logits must have shape"):
    mixing_scenarios.group_metrics(logits, labels[:3], 3, {})


def test_group_evaluate_fn_matches_group_metrics():
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top

  def keras_model():
    return tf.keras.Sequential([
        tf.keras.layers.InputLayer(input_shape=(2,)),
        tf.keras.layers.Dense(3, kernel_initializer=tf.keras.initializers
                              .GlorotUniform(seed=1))])
  rng = np.random.default_rng(0)
  x = rng.normal(size=(9, 2)).astype(np.float32)
  y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2], np.int64)
  evaluate = mixing_scenarios.build_group_evaluate_fn(
      keras_model, cdl.build_eval_dataset(
          tf.data.Dataset.from_tensor_slices({"x": x, "y": y}), batch_size=4),
      3, {"odd": [1]})
  model = keras_model()
  weights = tff.learning.models.ModelWeights.from_model(model)
  got = evaluate(weights)
  want = mixing_scenarios.group_metrics(model(x).numpy(), y, 3, {"odd": [1]})
  assert got.keys() == want.keys()
  for k in want:
    assert got[k] == pytest.approx(want[k], rel=1e-6), k
