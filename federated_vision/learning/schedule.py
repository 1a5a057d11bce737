"""Learning-rate schedules: round t's rate eta_0 * gamma^(t-1).

McMahan et al. 2017 §3 (CIFAR): "For all algorithms, we tuned a
learning-rate decay parameter in addition to the initial learning rate";
Figure 4's caption (arXiv 1602.05629) gives the form: "FedSGD uses a
learning-rate decay of 0.9934 per round; FedAvg uses ... learning-rate
decay of 0.99 per round". --client_learning_rate_decay and
--server_learning_rate_decay (gamma; 1, the default, is a constant rate)
are declared once with the shared hyper-parameters
(`methods.HyperParameters`) and read by every method that reads the rate.

The training loop sets each round's rates in the process state before the
round (`with_learning_rates`): the clients' optimizer hyper-parameters,
which the one local step reads (`local.WorkState`, a stateful round's
`client_hparams`, so every method's client update, per client, grouped,
in a mixing strategy or a stateful round, trains with it), and the server
optimizer's. A rate depends on the round alone, so a resumed run continues
the schedule where it stopped.
"""

import collections
from collections import abc
from typing import NamedTuple, Optional

import numpy as np

LEARNING_RATE = "learning_rate"  # Every TFF / package optimizer's hparam.


class Schedule(NamedTuple):
  """eta_t = initial * decay^(t-1), t = 1, 2, ..."""
  initial: float
  decay: float = 1.0

  def at(self, round_num: int) -> float:
    return self.initial * self.decay ** (round_num - 1)


def _with_rate(hparams, rate: float, what: str):
  if not (isinstance(hparams, abc.Mapping)
          and LEARNING_RATE in hparams):
    raise ValueError(f"a {what} learning-rate schedule needs the {what} "
                     f"optimizer's hyper-parameters in the process state; "
                     f"this method keeps {type(hparams).__name__}")
  out = collections.OrderedDict(hparams)
  out[LEARNING_RATE] = np.asarray(rate, np.asarray(
      hparams[LEARNING_RATE]).dtype)
  return out


def with_learning_rates(state, client: Optional[float] = None,
                        server: Optional[float] = None):
  """`state` (of a composed FedAvg round, a client-group process, a
  stateful round or parallel training) with the clients' and the server
  optimizer's learning rates set (None: unchanged).

  Raises:
    ValueError: the state keeps no such learning rate (e.g. a client work
      of one's own whose state holds none).
  """
  if hasattr(state, "fedavg") and hasattr(state, "round_num"):  # Parallel.
    return state._replace(fedavg=with_learning_rates(state.fedavg, client,
                                                     server))
  if hasattr(state, "client_hparams"):  # `stateful.State`.
    if client is not None:
      state = state._replace(client_hparams=_with_rate(
          state.client_hparams, client, "client"))
    if server is not None:
      state = state._replace(optimizer_state=_with_rate(
          state.optimizer_state, server, "server"))
    return state
  if client is not None:
    work = state.client_work
    if hasattr(work, "optimizer_hparams"):  # `local.WorkState`.
      work = work._replace(optimizer_hparams=_with_rate(
          work.optimizer_hparams, client, "client"))
    else:
      work = _with_rate(work, client, "client")
    state = state._replace(client_work=work)
  if server is not None:
    state = state._replace(finalizer=_with_rate(state.finalizer, server,
                                                "server"))
  return state


def learning_rates(state):
  """(client, server) learning rates in `state`, as floats (None where the
  state keeps none): what a round trains with."""
  if hasattr(state, "fedavg") and hasattr(state, "round_num"):
    return learning_rates(state.fedavg)
  if hasattr(state, "client_hparams"):
    client, server = state.client_hparams, state.optimizer_state
  else:
    client, server = state.client_work, state.finalizer
    client = getattr(client, "optimizer_hparams", client)
  rate = lambda h: (float(h[LEARNING_RATE]) if isinstance(
      h, abc.Mapping) and LEARNING_RATE in h else None)
  return rate(client), rate(server)
