"""The clients' training loop (iterator vs dataset.reduce) changes no number."""

import numpy as np
import pytest
import tensorflow_federated as tff

from federated_vision import algorithms
from federated_vision.learning import local
from federated_vision.algorithms import fedir
from tiny_model_runs import IMBALANCED, NUM_CLASSES, _client_datasets, _sgd, _train, context, model_fn  # pylint: disable=unused-import

_REDUCE = tff.learning.LoopImplementation.DATASET_REDUCE
_ITERATOR = tff.learning.LoopImplementation.DATASET_ITERATOR


def test_default_is_the_iterator_loop():
  assert local.DEFAULT_LOOP == _ITERATOR


@pytest.fixture(scope="module")
def fedavg_loops():
  """{loop: FedAvg (client SGD 0.1) with that client loop}, built once; the
  iterator's is the default build (test_default_is_the_iterator_loop)."""
  return {_REDUCE: algorithms.build_fedavg(model_fn, _sgd(0.1),
                                           loop_implementation=_REDUCE),
          _ITERATOR: algorithms.build_fedavg(model_fn, _sgd(0.1))}


def _fedir(loop):
  return fedir.build_fedir(model_fn, _sgd(0.1), NUM_CLASSES,
                           target_distribution=[0.2, 0.3, 0.5],
                           loop_implementation=loop)


@pytest.mark.parametrize("method", ["fedavg", "fedir"])
def test_loops_give_the_same_model(context, fedavg_loops, method):  # pylint: disable=redefined-outer-name
  del context
  build = fedavg_loops.get if method == "fedavg" else _fedir
  data = _client_datasets(IMBALANCED)
  reduce_weights, reduce_losses = _train(build(_REDUCE), data)
  iter_weights, iter_losses = _train(build(_ITERATOR), data)
  for a, b in zip(reduce_weights, iter_weights):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(reduce_losses, iter_losses, rtol=1e-6)
  assert iter_losses[-1] < iter_losses[0]


def test_loop_implementation_is_validated():
  with pytest.raises(TypeError, match="loop_implementation"):
    algorithms.build_fedavg(model_fn, _sgd(0.1), loop_implementation="reduce")
  with pytest.raises(TypeError, match="loop_implementation"):
    fedir.build_fedir_client_work(model_fn, _sgd(0.1), NUM_CLASSES,
                                  loop_implementation=1)


def _next_fn_bytes(process) -> bytes:
  return tff.framework.ConcreteComputation.get_proto(
      process.next).SerializeToString()


def test_fedavg_client_graph_has_no_reduce_dataset(fedavg_loops):  # pylint: disable=redefined-outer-name
  # The speed lever: a reduce function is a tf.data function that no Grappler
  # pass optimises (see local.DEFAULT_LOOP).
  iterator = _next_fn_bytes(fedavg_loops[_ITERATOR])  # The default build.
  assert b"ReduceDataset" not in iterator
  assert b"IteratorGetNext" in iterator
  reduce = _next_fn_bytes(fedavg_loops[_REDUCE])
  assert b"ReduceDataset" in reduce
