"""Centralized Keras evaluation works in any order with building processes.

Keras 2.14 swaps a model class's bases to its v1 classes whenever a model is
constructed inside TFF's `wrap_function` graphs (building a process); an
evaluation model built before that raised "Your Layer or Model is in an
invalid state" at the first evaluation, after the round had trained.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import algorithms
from federated_vision.runtime import contexts
from federated_vision import models
from federated_vision import training_loop as tl
from federated_vision.learning import sampling
from federated_vision.data import client_data as cdl
from federated_vision.data import digits
from federated_vision.evaluation import keras_eval
from federated_vision.models import digits as digits_models
from conftest import metric_rows

INPUT_SPEC = {"x": tf.TensorSpec([None, 8, 8, 1], tf.float32),
              "y": tf.TensorSpec([None], tf.int64)}


@pytest.fixture(scope="module")
def fed():
  return digits.load_federated(num_clients=3, alpha=0.5, seed=2)


def _reference(weights, fed):
  """Numpy-side loss/accuracy of `weights` over the whole test set."""
  model = digits_models.create_digits_cnn()
  weights.assign_weights_to(model)
  xs, ys = [], []
  for b in fed.test_batches(64):
    xs.append(b["x"].numpy())
    ys.append(b["y"].numpy())
  x, y = np.concatenate(xs), np.concatenate(ys)
  logits = model(x, training=False).numpy().astype(np.float64)
  logits -= logits.max(axis=1, keepdims=True)
  logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
  return (-logp[np.arange(len(y)), y].mean(),
          float((logits.argmax(axis=1) == y).mean()))


def test_test_batches_is_the_eval_pipeline(fed):
  got = list(fed.test_batches(50))
  want = list(cdl.build_eval_dataset(fed.test_data, fed.eval_map_fn, 50))
  assert len(got) == len(want) and [len(b["y"]) for b in got][0] == 50
  assert sum(len(b["y"]) for b in got) == sum(1 for _ in fed.test_data)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(g["x"].numpy(), w["x"].numpy())
    np.testing.assert_array_equal(g["y"].numpy(), w["y"].numpy())


def test_evaluate_fn_built_first_then_two_processes(fed, tmp_path):
  """docs/algorithms.md order: evaluate_fn, then two processes, each trained
  2 rounds."""
  evaluate = keras_eval.build_keras_evaluate_fn(
      digits_models.create_digits_cnn, fed.test_batches())
  model_fn = models.build_tff_model_fn(digits_models.create_digits_cnn,
                                       INPUT_SPEC)
  sgd = tff.learning.optimizers.build_sgdm
  first = algorithms.build_fedavg(model_fn, sgd(0.05))
  second = algorithms.build_fedavgm(model_fn, sgd(0.05),
                                    server_learning_rate=1.0,
                                    server_momentum=0.9)
  spec = cdl.TrainingSpec(batch_size=16, max_elements=32, seed=2)
  sampler = sampling.UniformSampler(fed.client_data.client_ids, 2, seed=2)
  with contexts.managed_execution_context():
    for name, process in (("fedavg", first), ("fedavgm", second)):
      result = tl.run_federated_training(
          name, process, fed, spec, sampler, evaluate,
          tl.LoopConfig(total_rounds=2, output_dir=str(tmp_path / name)),
          log_fn=lambda _: None)
      assert result.status == "completed" and result.rounds == 2
      rows = metric_rows(str(tmp_path / name / "metrics.csv"))
      assert [int(r["round"]) for r in rows] == [1, 2]
      assert all(0.0 <= float(r["test_accuracy"]) <= 1.0 for r in rows)
    # Reused after yet another process was built (classes swapped again):
    # still the exact loss and accuracy of the weights.
    weights = first.get_model_weights(first.initialize())
    algorithms.build_fedavg(model_fn, sgd(0.1))
    got = evaluate(weights)
  loss, accuracy = _reference(weights, fed)
  assert got["accuracy"] == pytest.approx(accuracy, abs=1e-6)
  assert got["loss"] == pytest.approx(loss, rel=1e-4)


def test_built_as_v1_detects_the_swap():
  model = digits_models.create_digits_cnn()
  assert not keras_eval.built_as_v1(model)
  model_fn = models.build_tff_model_fn(digits_models.create_digits_cnn,
                                       INPUT_SPEC)
  algorithms.build_fedavg(model_fn, tff.learning.optimizers.build_sgdm(0.1))
  assert keras_eval.built_as_v1(model)
  digits_models.create_digits_cnn()  # an eager construction swaps back
  assert not keras_eval.built_as_v1(model)


def test_group_evaluate_fn_built_first_survives_process_builds(fed):
  from federated_vision.mixing import scenarios as mixing_scenarios  # pylint: disable=g-import-not-at-top
  evaluate = mixing_scenarios.build_group_evaluate_fn(
      digits_models.create_digits_cnn, fed.test_batches(), 10,
      {"missing": [8, 9]})
  model_fn = models.build_tff_model_fn(digits_models.create_digits_cnn,
                                       INPUT_SPEC)
  process = algorithms.build_fedavg(model_fn,
                                    tff.learning.optimizers.build_sgdm(0.1))
  weights = process.get_model_weights(process.initialize())
  got = evaluate(weights)
  algorithms.build_fedavg(model_fn, tff.learning.optimizers.build_sgdm(0.2))
  again = evaluate(weights)
  _, accuracy = _reference(weights, fed)
  assert got["accuracy"] == pytest.approx(accuracy, abs=1e-6)
  assert again == got
