"""Client groups (learning/client_groups.py): the grouped path gives the
ungrouped path's metrics and model, and a killed run resumes exactly."""

import collections
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff
from conftest import StopBefore, metric_rows
import in_process

from federated_vision import algorithms
from federated_vision import models as models_lib
from federated_vision import training_loop
from federated_vision.learning import client_groups
from federated_vision.methods import groups as group_size_lib
from federated_vision.algorithms import fedir
from federated_vision.algorithms import fedprox
from federated_vision.algorithms import fedvc
from federated_vision.data import client_data as cdl
from federated_vision.data import mnist
from federated_vision.models import mnist as mnist_models

SIZES = (4, 4, 7, 2, 4, 9, 3, 4)  # Clients of a few examples, B = 3.
CLIENTS_PER_ROUND = 5
ROUNDS = 3


def _data():
  n = sum(SIZES)
  arrays = mnist.synthetic_arrays(n, 10, seed=1)
  bounds = np.cumsum((0,) + SIZES)
  part = {f"c{k}": np.arange(bounds[k], bounds[k + 1])
          for k in range(len(SIZES))}
  return mnist.from_arrays("synthetic_mnist", arrays, part)


def _model_fn(fed, spec):
  element = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec, fed.train_map_fn)(
          tf.constant("c0")).element_spec
  return models_lib.build_tff_model_fn(
      lambda: mnist_models.create_2nn(seed=0), element)


MU = 0.5  # FedProx's proximal strength in these tests.


def _server(kind):
  """The server optimizer of `kind` (None: SGD(1)); 'adam' is FedAdam's
  (Reddi et al. 2021, Algorithm 2), which the grouped composition uses as
  the ungrouped one does."""
  if kind != "adam":
    return None
  from federated_vision.algorithms import server_adaptive  # pylint: disable=g-import-not-at-top
  return server_adaptive.build_adaptive("adam", 0.05, tau=0.01)


def _objective(work):
  """The client work's `methods.LocalObjective` ('plain': the model's loss)."""
  from federated_vision import methods  # pylint: disable=g-import-not-at-top
  from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
  return {"fedir": lambda: fedir.local_objective(10),
          "fedprox": lambda: methods.LocalObjective(fedprox.proximal(MU)),
          "plain": lambda: methods.LocalObjective(local.model_loss)}[work]()


def _grouped(work, model_fn, server=None, lr=0.1, group_size=2):
  objective = _objective(work)
  return client_groups.GroupedMethod(
      model_fn, tff.learning.optimizers.build_sgdm(lr), _server(server),
      group_size=group_size, objective=objective.fn,
      label_counts=objective.label_counts, message=objective.message)


def _methods(work, model_fn, server=None):
  """The ungrouped and grouped processes of FedAvg with the client `work`
  ('plain', 'fedir' or 'fedprox') and the `server` optimizer (None: SGD(1),
  'adam': FedAdam's)."""
  sgd = tff.learning.optimizers.build_sgdm
  if work == "fedir":
    ref = fedir.build_fedir(model_fn, sgd(0.1), 10, client_label_counts=True,
                            server_optimizer=_server(server))
  elif work == "fedprox":
    ref = algorithms.build_fedavg(
        model_fn, sgd(0.1), _server(server),
        client_work=fedprox.build_fedprox_client_work(model_fn, sgd(0.1), MU))
  else:
    ref = algorithms.build_fedavg(model_fn, sgd(0.1), _server(server))
  return ref, _grouped(work, model_fn, server)


def _run(process, fed, spec, sampler):
  """Per round: (client_work metrics, flat model weights)."""
  return _rounds(training_loop.build_training_process(process, fed, spec),
                 sampler)


def _rounds(training, sampler):
  """`_run` of a built training process."""
  state = training.initialize()
  out = []
  for r in range(1, ROUNDS + 1):
    result = training.next(state, sampler.round_keys(r))
    state = result.state
    weights = training.get_model_weights(state).trainable
    out.append((result.metrics["client_work"],
                np.concatenate([np.ravel(w) for w in weights])))
  return out


# (client work, server optimizer, FedVC's data side): each component in one
# case, components of different kinds composed in one (a broken component
# breaks its case's equality); `BUILT` below composes them otherwise.
@pytest.mark.parametrize("work, server, virtual_clients", [
    ("plain", None, False), ("fedir", "adam", False),
    ("fedprox", None, True)], ids=["fedavg", "fedir+adam", "fedprox+fedvc"])
def test_grouped_equals_ungrouped(work, server, virtual_clients):
  from federated_vision.learning import sampling  # pylint: disable=g-import-not-at-top
  fed = _data()
  spec = cdl.TrainingSpec(batch_size=3, seed=4)
  ids = fed.client_data.client_ids
  if virtual_clients:
    spec, sampler = fedvc.virtual_clients(spec, ids, list(SIZES),
                                          CLIENTS_PER_ROUND, 5, seed=4)
  else:
    sampler = sampling.UniformSampler(ids, CLIENTS_PER_ROUND, 4)
  ref, grouped = _methods(work, _model_fn(fed, spec), server)
  a, b = (training_loop.build_training_process(p, fed, spec)
          for p in (ref, grouped))
  # Checkpoints of either path load into the other (same state type).
  assert (a.next.type_signature.parameter[0]
          == b.process.next.type_signature.parameter[0])
  _assert_same_rounds(_rounds(a, sampler), _rounds(b, sampler))
  _assert_non_finite_dropped_alike(a, b, sampler)


def _assert_non_finite_dropped_alike(a, b, sampler):
  """A client learning rate that overflows some clients' models (1e37, set
  in the client work's state, where both paths read it): both paths drop
  the same clients (zero update, weight 0) and count them."""
  lr = collections.OrderedDict(learning_rate=np.float32(1e37))

  def overflowing(state):  # (`local.WorkState`: its hparams, its message.)
    return state._replace(
        client_work=state.client_work._replace(optimizer_hparams=lr))

  results = [t.next(overflowing(t.initialize()), sampler.round_keys(1))
             .metrics["client_work"] for t in (a, b)]
  _assert_dropped_alike(*results)


def _assert_dropped_alike(expected, got):
  """First-round client_work metrics of the ungrouped (`expected`) and
  grouped paths: some clients dropped, the same count, the same examples,
  batches and loss."""
  assert expected["clients_dropped_non_finite"] > 0
  assert got["clients_dropped_non_finite"] == expected["clients_dropped_non_finite"]
  for key in ("num_examples", "num_batches"):
    assert got["train"][key] == expected["train"][key]
  np.testing.assert_allclose(got["train"]["loss"], expected["train"]["loss"],
                             rtol=1e-5, equal_nan=True)


def _assert_same_rounds(expected, got):
  """`_run`'s rounds of the ungrouped and grouped paths agree to 1e-5."""
  assert len(expected) == len(got) == ROUNDS
  for (m_ref, w_ref), (m_got, w_got) in zip(expected, got):
    train_ref, train_got = m_ref["train"], m_got["train"]
    assert train_got["num_examples"] == train_ref["num_examples"]
    assert train_got["num_batches"] == train_ref["num_batches"]
    np.testing.assert_allclose(train_got["loss"], train_ref["loss"],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(train_got["accuracy"], train_ref["accuracy"],
                               atol=1e-6)
    assert m_got["clients_dropped_non_finite"] == 0
    assert m_ref["clients_dropped_non_finite"] == 0
    np.testing.assert_allclose(w_got, w_ref, atol=1e-5)
  # The model moved: the comparison is not between two untouched models.
  assert np.abs(expected[-1][1] - expected[0][1]).max() > 1e-4


# (algorithm, variants, server optimizer, its own settings): with the cases
# above, every covered algorithm, client work, data side and server
# optimizer, built as a run builds them (`build_method` with a group size:
# the grouped builders alone), so the grouped process is checked to be the
# method's own (its spec, sampler, client work's hooks, server optimizer).
# (`with_client_groups`, which mixing runs use:
# tests/mixing/test_mixing_train_main.py's
# test_grouped_strategies_equal_ungrouped.)
BUILT = [
    ("fedsgd", ("fedir",), "yogi", {"server_learning_rate": 0.05}),
    ("fedavgm", ("fedprox", "fedvc"), None, {}),  # sgdm, beta = 0.9.
    ("fedavg", ("fedir", "fedvc"), "nesterov", {"server_momentum": 0.5}),
    ("fedsgd", ("fedvc",), "adagrad", {"server_learning_rate": 0.05}),
]


@pytest.mark.parametrize("algorithm, variants, optimizer, own", BUILT)
def test_built_method_grouped_equals_ungrouped(algorithm, variants,
                                               optimizer, own):
  from federated_vision import methods  # pylint: disable=g-import-not-at-top
  fed = _data()
  config = methods.MethodConfig(algorithm, variants, optimizer,
                                virtual_client_size=5, fedprox_mu=MU,
                                client_learning_rate=0.1, client_batch_size=3,
                                **own)
  # (The model's batch dimension is None whatever the method's B.)
  model_fn = _model_fn(fed, cdl.TrainingSpec(batch_size=3, seed=4))
  inputs = methods.MethodInputs(model_fn, 10, fed.client_data.client_ids,
                                list(SIZES), CLIENTS_PER_ROUND, seed=4)
  method = methods.build_method(config, inputs)
  # Built once, grouped: no per-client process or client work is built
  # (and discarded) first.
  from federated_vision.learning import compose  # pylint: disable=g-import-not-at-top
  from federated_vision.learning import local  # pylint: disable=g-import-not-at-top
  never = mock.Mock(side_effect=AssertionError("built per client"))
  with mock.patch.object(compose, "build_fedavg_process", never), \
       mock.patch.object(local, "build_client_work", never):
    grouped = methods.build_method(config, inputs, client_group_size=2)
  assert grouped.settings == {**method.settings, "client_group_size": 2}
  assert isinstance(grouped.process, client_groups.GroupedMethod)
  _assert_same_rounds(_run(method.process, fed, method.spec, method.sampler),
                      _run(grouped.process, fed, method.spec,
                           method.sampler))


def test_group_keys_and_sizes():
  slots = client_groups.group_keys(["a@1", "b@1", "c@1", "d@1", "e@1"], 2)
  assert [list(s) for s in slots] == [[b"a@1", b"b@1"], [b"c@1", b"d@1"],
                                      [b"e@1"]]
  assert group_size_lib.resolve_group_size("auto", 100) == 25
  assert group_size_lib.resolve_group_size("auto", 3) == 1
  # 'auto' = min(25, ceil(C / 4)): at least 4 slots, at most 25 a slot.
  assert {c: group_size_lib.resolve_group_size("auto", c)
          for c in (1, 4, 5, 8, 10, 99, 101, 400, 5000)} == {
              1: 1, 4: 1, 5: 2, 8: 2, 10: 3, 99: 25, 101: 25, 400: 25,
              5000: 25}
  assert group_size_lib.resolve_group_size(7, 100) == 7
  assert group_size_lib.parse_group_size("auto") == "auto"
  assert group_size_lib.parse_group_size("12") == 12
  for bad in ("0", "-3", "1.5", "x", str(group_size_lib.MAX_GROUP_SIZE + 1)):
    with pytest.raises(ValueError, match="'auto' or an integer"):
      group_size_lib.parse_group_size(bad)


def test_grouped_run_killed_midway_resumes_to_the_same_metrics(tmp_path):
  from federated_vision.learning import sampling  # pylint: disable=g-import-not-at-top
  fed = _data()
  spec = cdl.TrainingSpec(batch_size=3, seed=4)
  model_fn = _model_fn(fed, spec)
  sampler = sampling.UniformSampler(fed.client_data.client_ids,
                                    CLIENTS_PER_ROUND, 4)
  evaluate = lambda weights: {"loss": float(np.sum(weights.trainable[-1])),
                              "accuracy": 0.5}

  def run(out, sampler):
    return training_loop.run_federated_training(
        "grouped", _grouped("plain", model_fn), fed, spec, sampler,
        evaluate, training_loop.LoopConfig(
            total_rounds=ROUNDS, output_dir=str(out), rounds_per_eval=1,
            rounds_per_checkpoint=1), log_fn=None)

  whole = run(tmp_path / "whole", sampler)
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path / "killed", StopBefore(sampler, ROUNDS))
  resumed = run(tmp_path / "killed", sampler)
  assert resumed.resumed_from == ROUNDS - 1
  assert (metric_rows(tmp_path / "killed" / "metrics.csv")
          == metric_rows(tmp_path / "whole" / "metrics.csv"))
  assert len(whole.rows) == ROUNDS


def test_train_main_grouped_equals_ungrouped_and_records_the_size(
    tmp_path, monkeypatch):
  """An explicit size is recorded as the flag and the size it ran with; the
  default, 'auto', is min(25, ceil(C / 4)) = 2 at C = 8 whatever the
  machine: a default run stopped after round 2 and resumed on "another
  machine" (64 cores) ends with size 2's metrics.csv exactly, and records
  the flag ('auto') and the size (2). (Sizes 1 and 2 agree through
  train_main: test_mixing_train_main.py's
  test_grouped_strategies_equal_ungrouped, whose 'none' is FedAvg on the
  clients' data; the library's paths: test_grouped_equals_ungrouped.)"""
  import json  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  args = ["--algorithm=fedavg", "--num_clients=10", "--clients_per_round=8",
          "--client_batch_size=20", "--total_rounds=3", "--rounds_per_eval=1",
          "--centralized_epochs=0", "--seed=3", f"--root_output_dir={tmp_path}"]

  def recorded(name, flag, size):
    hparams = json.loads((tmp_path / name / "hparams.json").read_text())
    assert hparams["client_group_size"] == flag  # The flag, recorded.
    settings = hparams["method_settings"]["fedavg"]
    assert settings["client_group_size"] == size  # The size it ran with.
    return metric_rows(tmp_path / name / "fedavg" / "metrics.csv")

  # In this process: the test reads files only.
  in_process.run_train_main("--experiment_name=g2", "--client_group_size=2",
                            *args)
  size_2 = recorded("g2", "2", 2)
  assert [r["round"] for r in size_2] == ["1", "2", "3"]
  # No --client_group_size: 2 rounds here, the third on 64 cores.
  in_process.run_train_main("--experiment_name=auto", *args,
                            "--total_rounds=2")
  monkeypatch.setattr(os, "cpu_count", lambda: 64)
  monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(64)),
                      raising=False)
  in_process.run_train_main("--experiment_name=auto", *args)
  assert recorded("auto", "auto", 2) == size_2


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "big", "4097"])
def test_bad_client_group_size_is_a_config_error(value):
  from federated_vision.experiment import config as config_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.errors import ConfigError  # pylint: disable=g-import-not-at-top
  with pytest.raises(ConfigError) as e:
    config_lib.from_values({"client_group_size": value}, ["client_group_size"])
  assert e.value.field == "client_group_size"
  assert str(e.value).startswith(f"--client_group_size={value}: must be "
                                 "'auto' or an integer in [1, 4096]")
  for good in ("auto", "1", "7"):
    config_lib.from_values({"client_group_size": good}, ["client_group_size"])


def test_explicit_group_size_for_an_uncovered_method_exits_2(tmp_path):
  from conftest import TRAIN_MAIN, run_module  # pylint: disable=g-import-not-at-top
  proc = run_module(TRAIN_MAIN, "--client_group_size=3",
                    "--methods=fedavg,scaffold", "--num_clients=6",
                    "--clients_per_round=3", "--total_rounds=1",
                    "--centralized_epochs=0", f"--root_output_dir={tmp_path}")
  assert proc.returncode == 2
  assert ("--client_group_size=3: method scaffold cannot be grouped"
          in proc.stderr) and "Traceback" not in proc.stderr


@pytest.mark.parametrize("variants, settings, name", [
    (("fedprox",), {"client_work": "fedprox", "mixing": "none"},
     "fedavg+fedprox+none"),
    ((), {"client_work": "plain", "mixing": "gradient_transfer"},
     "fedavg+gradient_transfer"),
    (("fedir",), {"client_work": "fedir", "mixing": "oracle"},
     "fedavg+fedir+oracle")])
def test_with_client_groups_applies_the_validation_rule(variants, settings,
                                                        name):
  """A library caller that skipped config validation: `with_client_groups`
  raises ValueError with `client_group_size.uncovered`'s text (the rule
  config validation refuses up front) for an explicit size, and 'auto'
  leaves the method as built, recorded as group size 1."""
  from federated_vision import methods  # pylint: disable=g-import-not-at-top
  from federated_vision.methods import groups as client_group_size  # pylint: disable=g-import-not-at-top
  config = methods.MethodConfig("fedavg", variants)
  method = methods.Method(name, "built", "spec", "sampler",
                          {"algorithm": "fedavg", **settings})
  # 100 clients a round: 'auto' resolves to a size > 1 on any core count.
  inputs = methods.MethodInputs(None, 10, [], [], 100)
  reason = client_group_size.uncovered(config, settings.get("mixing"))
  assert reason.startswith(f"method {name} cannot be grouped")
  with pytest.raises(ValueError) as e:
    methods.with_client_groups(method, config, inputs, 2)
  assert str(e.value) == reason
  auto = methods.with_client_groups(method, config, inputs, "auto")
  assert group_size_lib.resolve_group_size("auto", 100) > 1
  assert auto.process == "built"
  assert auto.settings == {**method.settings, "client_group_size": 1}


def test_fedprox_non_finite_clients_are_dropped_and_counted_alike():
  """A client learning rate that overflows some clients' models, the
  processes built with it: both paths drop the same clients (zero update,
  weight 0) and count them. (Set in the state: test_grouped_equals_ungrouped.)"""
  from federated_vision.learning import sampling  # pylint: disable=g-import-not-at-top
  fed = _data()
  spec = cdl.TrainingSpec(batch_size=3, seed=4)
  model_fn = _model_fn(fed, spec)
  sgd = tff.learning.optimizers.build_sgdm
  lr = 1e37
  ref = algorithms.build_fedavg(
      model_fn, sgd(lr), client_work=fedprox.build_fedprox_client_work(
          model_fn, sgd(lr), MU))
  grouped = _grouped("fedprox", model_fn, lr=lr, group_size=3)
  sampler = sampling.UniformSampler(fed.client_data.client_ids, len(SIZES), 4)
  results = []
  for process in (ref, grouped):
    training = training_loop.build_training_process(process, fed, spec)
    out = training.next(training.initialize(), sampler.round_keys(1))
    results.append(out.metrics["client_work"])
  _assert_dropped_alike(*results)


def test_mixing_with_fedir_is_not_grouped(tmp_path):
  """A mixing strategy's FedIR counts q_k per round, the groups' over the
  client's whole data: an explicit size is refused (one line, exit 2)."""
  from conftest import TRAIN_MAIN, run_module  # pylint: disable=g-import-not-at-top
  proc = run_module(TRAIN_MAIN, "--client_group_size=2", "--dataset=digits",
                    "--missing_classes=8,9", "--mixing=example_transfer",
                    "--algorithm=fedavg", "--fedir", "--num_clients=6",
                    "--clients_per_round=4", "--total_rounds=1",
                    "--centralized_epochs=0", f"--root_output_dir={tmp_path}")
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert ("--client_group_size=2: method fedavg+fedir+example_transfer cannot "
          "be grouped" in proc.stderr) and "Traceback" not in proc.stderr
