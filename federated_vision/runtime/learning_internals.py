"""The TFF learning internals the algorithms build on, each with why.

TFF 0.87 composes FedProx's client work and the client training loop inside
its public algorithm builders but does not export them on their own, while
our methods plug client works into one composition (`algorithms.fedavg`).
"""

import tensorflow_federated as tff
from tensorflow_federated.python.learning import loop_builder
from tensorflow_federated.python.learning.templates import proximal_client_work


def build_proximal_client_work(model_fn, client_optimizer, proximal_strength: float):
  """FedProx's client work (Li et al. 2020): gradient + mu (w - w_server).

  TFF 0.87's `proximal_client_work.build_model_delta_client_work`, what
  `tff.learning.algorithms.build_weighted_fed_prox` composes; that builder
  returns the whole learning process, and the client work is not public.
  Examples weight the clients; the loop is `DATASET_REDUCE`, as FedAvg's.
  """
  return proximal_client_work.build_model_delta_client_work(
      model_fn, client_optimizer, tff.learning.ClientWeighting.NUM_EXAMPLES,
      float(proximal_strength),
      loop_implementation=tff.learning.LoopImplementation.DATASET_REDUCE)


def build_training_loop(loop_implementation: tff.learning.LoopImplementation):
  """TFF's client training loop for `loop_implementation` (a function
  `(dataset, step_fn, initial_state) -> state`), as TFF's own client works
  use; `loop_builder` is not exported by `tff.learning`."""
  return loop_builder.build_training_loop(loop_implementation)
