"""The TFF learning internals the algorithms build on, each with why.

TFF 0.87 builds the client training loop inside its public client works but
does not export it, while our client works (FedIR, FedProx, client groups)
build their own (`algorithms.fedir`, `algorithms.fedprox`). Its Keras
wrapper's forward pass is a `tf.function` around another (`predict_on_batch`),
which a local step differentiates at a high tracing cost (`forward_pass`).
"""

import tensorflow_federated as tff
from tensorflow_federated.python.learning import loop_builder
from tensorflow_federated.python.learning.models import keras_utils


def build_training_loop(loop_implementation: tff.learning.LoopImplementation):
  """TFF's client training loop for `loop_implementation` (a function
  `(dataset, step_fn, initial_state) -> state`), as TFF's own client works
  use; `loop_builder` is not exported by `tff.learning`."""
  return loop_builder.build_training_loop(loop_implementation)


class _InlinePredictions:
  """A TFF Keras model whose `predict_on_batch` is its Python body: the
  Keras model called where the caller traces, not in a function of its own.
  Every other attribute is the model's."""

  def __init__(self, model):
    self._model = model

  def __getattr__(self, name):
    return getattr(self._model, name)

  def predict_on_batch(self, x, training=True):
    return keras_utils._KerasModel.predict_on_batch.python_function(  # pylint: disable=protected-access
        self._model, x, training)


def forward_pass(model: tff.learning.models.VariableModel, batch_input,
                 training: bool = True):
  """`model.forward_pass(batch_input, training)`, with the ops of a model
  made by `tff.learning.models.from_keras_model` traced inline.

  Why: TFF's Keras wrapper (`keras_utils._KerasModel`, not exported) makes
  `forward_pass` a `tf.function` that calls `predict_on_batch`, another.
  A `tf.GradientTape` over a function call differentiates it with respect
  to every input it captures (`_DelayedRewriteGradientFunctions`), so a
  step that trains the last layers of a frozen backbone traces the whole
  backbone's backward pass only for it to be pruned (docs/performance.md,
  "Building a last-layers method"). Here the wrapper's own Python bodies
  run, unchanged (`_forward_pass`: loss with the Keras model's losses,
  metrics updated, examples counted), in the caller's graph, so the tape
  sees the Keras model's ops and differentiates only what the gradient
  needs. Any other model (a subclass, a `VariableModel` of one's own) runs
  its `forward_pass` as it is.

  Args:
    model: a `tff.learning.models.VariableModel`.
    batch_input: a batch as the model's `input_spec` says.
    training: as `forward_pass`'s.

  Returns:
    The model's `tff.learning.models.BatchOutput`.
  """
  if type(model) is not keras_utils._KerasModel:  # pylint: disable=protected-access,unidiomatic-typecheck
    return model.forward_pass(batch_input, training=training)
  return keras_utils._KerasModel._forward_pass(  # pylint: disable=protected-access
      _InlinePredictions(model), batch_input, training=training)
