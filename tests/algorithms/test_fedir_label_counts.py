"""FedIR's q_k from the client's whole local data, computed once."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import algorithms
from federated_vision.runtime import contexts
from federated_vision import training_loop
from federated_vision.algorithms import fedir
from federated_vision.data import client_data as cdl
from federated_vision.data import round_keys
from federated_vision.data import digits
from federated_vision.models import build_tff_model_fn
from federated_vision.models import digits as digits_models

FED = digits.synthetic(num_clients=3, examples_per_client=10, num_test=4)
IDS = FED.client_data.client_ids


@pytest.fixture(scope="module")
def context():
  with contexts.managed_execution_context() as pool:
    yield pool


def _dataset_fn(spec, with_counts=True):
  counts = cdl.label_counts_fn(IDS, FED.class_counts) if with_counts else None
  return cdl.build_training_dataset_fn(
      FED.client_data.serializable_dataset_fn, spec, FED.train_map_fn,
      label_counts=counts)


@pytest.mark.parametrize("virtual_client_size", [None, 4])
def test_batches_carry_whole_client_counts(virtual_client_size):
  spec = cdl.TrainingSpec(batch_size=3, seed=1,
                          virtual_client_size=virtual_client_size)
  for row, cid in enumerate(IDS):
    batches = list(_dataset_fn(spec)(tf.constant(round_keys.round_key(cid, 5))))
    assert batches
    for batch in batches:
      np.testing.assert_array_equal(batch[cdl.LABEL_COUNTS_KEY].numpy(),
                                    FED.class_counts[row].astype(np.float32))
  with pytest.raises(ValueError, match="class_counts must be"):
    cdl.label_counts_fn(IDS, FED.class_counts[:2])


class _OneClient:
  def __init__(self, client_id):
    self._id = client_id

  def round_keys(self, round_num):
    return [round_keys.round_key(self._id, round_num)]


@pytest.fixture(scope="module")
def processes(context):
  """FedAvg, and FedIR with q_k from the client's whole data ("whole") or
  from each round's batches ("per_round"), over the digits CNN (client SGD
  0.5): built once, each test sets FedIR's target p in the state."""
  del context
  spec = cdl.TrainingSpec(batch_size=3, seed=2)
  element_spec = _dataset_fn(spec, with_counts=False)(
      tf.constant(IDS[0])).element_spec  # (Any B: the batch dimension is None.)
  model_fn = build_tff_model_fn(digits_models.create_digits_cnn, element_spec)
  sgd = tff.learning.optimizers.build_sgdm(0.5)
  return {"fedavg": algorithms.build_fedavg(model_fn, sgd),
          "whole": fedir.build_fedir(model_fn, sgd, digits.NUM_CLASSES,
                                     client_label_counts=True),
          "per_round": fedir.build_fedir(model_fn, sgd, digits.NUM_CLASSES)}


def _final_weights(process, spec, client_id, rounds=2, target=None):
  """Weights after `rounds` rounds of `client_id` alone (FedIR: its target p
  set to `target`)."""
  training = training_loop.build_training_process(process, FED, spec)
  state = training.initialize()
  if target is not None:
    state = fedir.with_target_distribution(state, target)
  for r in range(1, rounds + 1):
    state = training.next(state, _OneClient(client_id).round_keys(r)).state
  return [np.asarray(w) for w in training.get_model_weights(state).trainable]


def test_q_k_is_the_whole_data_distribution_under_fedvc(processes):
  # FedVC trains on 4 of the client's 10 examples. With p = the client's own
  # class distribution, FedIR's weights p/q_k are all 1 (so FedIR == FedAvg)
  # exactly when q_k is the whole-data distribution, not the resample's.
  row = 1
  q = FED.class_counts[row] / FED.class_counts[row].sum()
  spec = cdl.TrainingSpec(batch_size=2, seed=7, virtual_client_size=4)
  fedavg_w = _final_weights(processes["fedavg"], spec, IDS[row])
  whole = _final_weights(processes["whole"], spec, IDS[row],
                         target=q + 1e-12)
  per_round = _final_weights(processes["per_round"], spec, IDS[row],
                             target=q + 1e-12)
  for a, b in zip(fedavg_w, whole):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  assert max(np.abs(a - b).max() for a, b in zip(fedavg_w, per_round)) > 1e-4


def test_label_counts_match_round_counts_without_resampling(processes):
  spec = cdl.TrainingSpec(batch_size=3, seed=2)
  p = np.linspace(1, 2, digits.NUM_CLASSES)
  whole = _final_weights(processes["whole"], spec, IDS[2], target=p)
  per_round = _final_weights(processes["per_round"], spec, IDS[2], target=p)
  for a, b in zip(whole, per_round):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
