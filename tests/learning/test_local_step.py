"""The clients' local step is written once (`learning.local.step`): with it
replaced by one that raises, every gradient-based client work fails to
build -- per client, through client groups, in the mixing strategies and
in the stateful algorithms -- so no path trains another way."""

from unittest import mock

import numpy as np
import pytest

from federated_vision import methods
from federated_vision.algorithms import feddyn
from federated_vision.algorithms import fednova
from federated_vision.algorithms import fedir
from federated_vision.algorithms import fedprox
from federated_vision.algorithms import scaffold
from federated_vision.data import client_data as cdl
from federated_vision.data import digits
from federated_vision.learning import client_groups
from federated_vision.learning import local
from federated_vision.learning import reference as ref
from federated_vision.learning import stateful
from federated_vision.mixing import gradient_transfer
from federated_vision.mixing import parallel_training
from federated_vision.mixing import scenarios

SPEC = cdl.TrainingSpec(batch_size=ref.B, shuffle_buffer=0)


class Stepped(Exception):
  """Raised by the replaced local step."""


def _raise(*args, **kwargs):
  raise Stepped


def _data():
  rng = np.random.default_rng(2)
  x = rng.normal(size=(12, ref.F)).astype(np.float32)
  y = rng.integers(0, ref.C, 12).astype(np.int64)
  return digits.from_arrays("tiny", x[:8], y[:8], x[8:], y[8:],
                            {"a": np.arange(4), "b": np.arange(4, 8)}, ref.C)


def _central():
  rng = np.random.default_rng(3)
  return scenarios.array_centralized_data(
      "central", {"x": rng.normal(size=(6, ref.F)).astype(np.float32),
                  "y": rng.integers(0, ref.C, 6).astype(np.int64)},
      lambda element, seed: element)


def _grouped(objective):
  return client_groups.GroupedMethod(
      ref.model_fn, ref.sgd(), None, group_size=2, objective=objective.fn,
      label_counts=objective.label_counts,
      message=objective.message).build_training_process(_data(), SPEC)


def _stateful(round_fn):
  return stateful.Method(ref.model_fn, round_fn(), ref.sgd()
                         ).build_training_process(_data(), SPEC)


BUILDS = {
    "per client: fedavg": lambda: local.build_client_work(
        ref.model_fn, ref.sgd()),
    "per client: fedir": lambda: fedir.build_fedir_client_work(
        ref.model_fn, ref.sgd(), ref.C),
    "per client: fedprox": lambda: fedprox.build_fedprox_client_work(
        ref.model_fn, ref.sgd(), 0.1),
    "grouped: fedavg": lambda: _grouped(methods.LocalObjective(
        local.model_loss)),
    "grouped: fedir": lambda: _grouped(fedir.local_objective(ref.C)),
    "grouped: fedprox": lambda: _grouped(methods.LocalObjective(
        fedprox.proximal(0.1))),
    "mixing: gradient transfer": lambda: gradient_transfer.build_gradient_transfer(
        ref.model_fn, ref.sgd(), _central(), central_batch_size=2),
    # Its K centralized steps (traced before its FedAvg round's client work).
    "mixing: parallel's central steps": lambda: (
        parallel_training.build_parallel_training(
            ref.model_fn, ref.sgd(), _central(), central_batch_size=2)),
    "stateful: scaffold": lambda: _stateful(scaffold.scaffold_round),
    "stateful: feddyn": lambda: _stateful(lambda: feddyn.feddyn_round(0.1)),
    "stateful: fednova": lambda: _stateful(fednova.fednova_round),
}


@pytest.mark.parametrize("path", sorted(BUILDS))
def test_every_gradient_based_client_work_takes_the_one_local_step(path):
  with mock.patch.object(local, "step", _raise):
    with pytest.raises(Stepped):
      BUILDS[path]()
