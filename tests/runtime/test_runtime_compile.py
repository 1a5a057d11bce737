"""The worker's compile without Grappler's constant folding for a model with
frozen weights (`runtime.tff_internals.skip_constant_folding`, registered by
`training_loop.build_training_process`): the graph differs, the numbers the
worker computes do not."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import algorithms
from federated_vision import training_loop
from federated_vision.data import client_data as cdl
from federated_vision.data import digits
from federated_vision.data import round_keys
from federated_vision.models import build_tff_model_fn
from federated_vision.models import digits as digits_models
from federated_vision.runtime import contexts
from federated_vision.runtime import tff_internals


def _digits(frozen: bool):
  """(FedAvg process over 3 digits clients, fed data, spec); the CNN's first
  conv frozen when `frozen` (as `--trainable_last_layers` freezes a
  backbone)."""
  fed = digits.load_federated(3, 0.5, seed=0)
  spec = cdl.TrainingSpec(batch_size=10, seed=0)

  def keras_model():
    model = digits_models.create_digits_cnn(seed=0)
    if frozen:
      model.layers[0].trainable = False
    return model
  element_spec = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec, fed.train_map_fn)(
          fed.client_data.client_ids[0]).element_spec
  process = algorithms.build_fedavg(
      build_tff_model_fn(keras_model, element_spec),
      tff.learning.optimizers.build_sgdm(0.05))
  return process, fed, spec


@pytest.fixture
def registry(monkeypatch):
  """A fresh registry of blocks compiled without constant folding."""
  fresh = set()
  monkeypatch.setattr(tff_internals, "_SKIP_CONSTANT_FOLDING", fresh)
  return fresh


def _two_rounds(process, fed):
  """Losses and final trainable weights of 2 rounds in a new context (its
  own compile cache)."""
  keys = lambda r: [round_keys.round_key(c, r)
                    for c in fed.client_data.client_ids]
  losses = []
  with contexts.managed_execution_context():
    state = process.initialize()
    for r in (1, 2):
      out = process.next(state, keys(r))
      state = out.state
      losses.append(out.metrics["client_work"]["train"]["loss"])
    weights = process.get_model_weights(state)
  return losses, [np.asarray(w) for w in weights.trainable]


def _constant_folded_nodes(comp) -> int:
  """Nodes Grappler's constant folding made in `comp`'s TensorFlow blocks."""
  count = 0
  for block in tff_internals._tensorflow_blocks(comp.to_building_block()):  # pylint: disable=protected-access
    graph = tf.compat.v1.GraphDef()
    block.proto.tensorflow.graph_def.Unpack(graph)
    nodes = list(graph.node) + [n for f in graph.library.function
                                for n in f.node_def]
    count += sum("ConstantFolding" in n.name for n in nodes)
  return count


def test_fully_trainable_model_is_compiled_as_tff_compiles(registry):
  process, fed, spec = _digits(frozen=False)
  training_loop.build_training_process(process, fed, spec)
  assert not registry


def test_frozen_model_skips_constant_folding_with_identical_numbers(registry):
  process, fed, spec = _digits(frozen=True)
  lean = training_loop.build_training_process(process, fed, spec)
  assert registry  # Its round's blocks are registered.
  # The option is applied: TFF's pass folds constants in the client work
  # (e.g. its seeded initializers); the lean one only in the blocks TFF's
  # compiler adds (intrinsics' bodies).
  folded = _constant_folded_nodes(tff_internals.compile_for_worker(lean.next))
  keys = set(registry)
  registry.clear()
  assert _constant_folded_nodes(
      tff_internals.compile_for_worker(lean.next)) > folded + 10
  tff_losses, tff_weights = _two_rounds(lean, fed)
  registry.update(keys)
  lean_losses, lean_weights = _two_rounds(lean, fed)
  assert lean_losses == tff_losses
  assert len(lean_weights) == len(tff_weights) == 4  # conv frozen: 2 dense.
  for a, b in zip(lean_weights, tff_weights):
    assert a.tobytes() == b.tobytes()
