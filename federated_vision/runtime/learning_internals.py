"""The TFF learning internals the algorithms build on, each with why.

TFF 0.87 builds the client training loop inside its public client works but
does not export it, while our client works (FedIR, FedProx, client groups)
build their own (`algorithms.fedir`, `algorithms.fedprox`). Its Keras
wrapper's forward pass is a `tf.function` around another (`predict_on_batch`),
which a local step differentiates at a high tracing cost (`forward_pass`).
"""

import tensorflow as tf
from tensorflow.python.framework import auto_control_deps
from tensorflow.python.framework import auto_control_deps_utils
from tensorflow.python.framework import op_def_registry
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
  TF differentiates a function call with respect to every input it
  captures (`_DelayedRewriteGradientFunctions`), so a step that trains the
  last layers of a frozen backbone traced the whole backbone's backward
  pass only for it to be pruned (docs/performance.md, "Building a
  last-layers method"). Here the wrapper's own Python bodies run unchanged
  (`_forward_pass`: the loss with the Keras model's losses, the metrics
  updated, the examples counted) in the caller's graph, and the outputs
  leave as the function's did (`_as_function_outputs`): the caller's
  gradient (`local.step`'s `tf.gradients`) differentiates only the ops
  between the trainable weights and the loss, and the worker computes the
  same numbers. Any other model (a subclass, a `VariableModel` of one's
  own) runs its `forward_pass` as it is, as does an eager call.

  Args:
    model: a `tff.learning.models.VariableModel`.
    batch_input: a batch as the model's `input_spec` says.
    training: as `forward_pass`'s.

  Returns:
    The model's `tff.learning.models.BatchOutput`.
  """
  if (type(model) is not keras_utils._KerasModel  # pylint: disable=protected-access,unidiomatic-typecheck
      or tf.executing_eagerly()):
    return model.forward_pass(batch_input, training=training)
  first = len(tf.compat.v1.get_default_graph().get_operations())
  output = keras_utils._KerasModel._forward_pass(  # pylint: disable=protected-access
      _InlinePredictions(model), batch_input, training=training)
  return _as_function_outputs(output, first)


# Graph bookkeeping without tensor control flow: not autograph-converted
# (converted, its test of each new op goes through autograph's converted
# calls, slower to trace for nothing).
@tf.autograph.experimental.do_not_convert
def _as_function_outputs(output, first: int):
  """`output` as a `tf.function` returns it: each tensor through an Identity
  that waits for the ops the function had to run since op `first` of the
  graph (here, the metric updates and variable reads), by the rule of TF's
  automatic control dependencies (`AutomaticControlDependencies.__exit__`,
  private: stateful ops, and reads whose value is used).

  Why: the caller's graph is then the one it was, so Grappler does not
  merge the caller's ops on the outputs with the model's own (FedIR's
  per-example cross-entropy with the loss's, which rounds its gradient
  otherwise).
  """
  must_run = [
      op for op in tf.compat.v1.get_default_graph().get_operations()[first:]
      if op_def_registry.get(op.type) is None or (
          auto_control_deps.op_is_stateful(op)
          and (op.type not in auto_control_deps_utils.RESOURCE_READ_OPS
               or any(t.consumers() for t in op.outputs)))]
  with tf.control_dependencies([tf.group(*must_run)] if must_run else []):
    return tf.nest.map_structure(
        lambda t: t if t is None else tf.identity(t), output)
