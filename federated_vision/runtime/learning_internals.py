"""The TFF learning internals the algorithms build on, each with why.

TFF 0.87 builds the client training loop inside its public client works but
does not export it, while our client works (FedIR, FedProx, client groups)
build their own (`algorithms.fedir`, `algorithms.fedprox`).
"""

import tensorflow_federated as tff
from tensorflow_federated.python.learning import loop_builder


def build_training_loop(loop_implementation: tff.learning.LoopImplementation):
  """TFF's client training loop for `loop_implementation` (a function
  `(dataset, step_fn, initial_state) -> state`), as TFF's own client works
  use; `loop_builder` is not exported by `tff.learning`."""
  return loop_builder.build_training_loop(loop_implementation)
