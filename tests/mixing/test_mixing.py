"""Mixing strategies (Augenstein et al.): exact values on a tiny linear model.

The model is logits = x W (no bias) with mean softmax cross-entropy; the numpy
reference below computes its gradient, local SGD and FedAvg rounds by hand.
Client datasets are built from round keys with shuffling off, so the batch
order of every client is known.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision.runtime import contexts
from federated_vision.methods import method_config as method_components
from federated_vision.mixing import strategy as mixing_strategies
from federated_vision import training_loop
from federated_vision.evaluation import keras_eval
from federated_vision.algorithms import fedavg
from federated_vision.algorithms import fedir as fedir_lib
from federated_vision.algorithms import fedvc
from federated_vision.mixing import strategies as mixing
from federated_vision.mixing.strategy import MixingSettings
from federated_vision.mixing import central_data as mixing_data
from federated_vision.mixing import gradient_transfer as mixing_gradient
from federated_vision.mixing import parallel_training as mixing_parallel
from federated_vision.mixing import payload as mixing_payload
from federated_vision.learning import sampling as sampling_lib
from federated_vision.data import client_data as cdl
from federated_vision.data import digits
from federated_vision.mixing import scenarios as mixing_scenarios
from federated_vision.learning import reference as linear_reference
from federated_vision.learning.reference import (B, C, F, LR, model_fn, np_fedavg_round,
                                    np_grad, np_local_sgd)

SIZES = {"a": 5, "b": 7}
N_CENTRAL = 6
SOURCES = ["a", "b", "z", "a", "z", "b"]  # 'z' has no federated examples.
_keras_model = linear_reference.keras_model
_sgd = linear_reference.sgd


# --- data ---------------------------------------------------------------------

def _arrays(zero_client_x=False):
  rng = np.random.default_rng(5)
  n_fed = sum(SIZES.values())
  x = rng.normal(size=(n_fed + N_CENTRAL + 4, F)).astype(np.float32)
  y = rng.integers(0, 2, n_fed + N_CENTRAL + 4).astype(np.int64)
  y[n_fed:n_fed + N_CENTRAL] = 2  # The centralized set covers class 2 only.
  if zero_client_x:
    x[:n_fed] = 0.0  # No bias: zero features give zero gradients.
  return x, y


def _scenario(zero_client_x=False):
  x, y = _arrays(zero_client_x)
  n_fed = sum(SIZES.values())
  partition, start = {}, 0
  for cid, n in SIZES.items():
    partition[cid] = np.arange(start, start + n)
    start += n
  fed = digits.from_arrays("tiny", x[:n_fed], y[:n_fed], x[-4:], y[-4:],
                           partition, C)
  cx, cy = x[n_fed:n_fed + N_CENTRAL], y[n_fed:n_fed + N_CENTRAL]
  central = mixing_scenarios.array_centralized_data(
      "tiny_central", {"x": cx, "y": cy}, digits._identity_train,  # pylint: disable=protected-access
      source_clients=SOURCES)
  clients = {c: (x[i], y[i]) for c, i in partition.items()}
  return fed, central, clients, (cx, cy)


SPEC = cdl.TrainingSpec(batch_size=B, shuffle_buffer=0, seed=11)
EXAMPLE_BYTES = F * 4 + 8  # float32 x[F] + int64 y.
MODEL_BYTES = F * C * 4    # float32 W.


def _method(strategy, fed, central, clients_per_round=2,
            config=MixingSettings(), server_optimizer=None, fedir=False,
            fedir_target_distribution=None, virtual_client_size=None):
  """The strategy's registered builder (`mixing_strategies`, what
  `methods.build_method` calls) on the test's components: its params checked
  with the variants (fedir, fedvc) as a method's, FedIR's client work and the
  uniform / FedVC sampler over SPEC (no shuffling) built here."""
  variants = (("fedir",) if fedir else ()) + (
      ("fedvc",) if virtual_client_size is not None else ())
  params = mixing_strategies.checked_params(strategy, config, "fedavg",
                                            variants)
  work = None
  if fedir:
    work = fedir_lib.build_fedir_client_work(model_fn, _sgd(), fed.num_classes,
                                             fedir_target_distribution)

  def sampling(data):
    ids = data.client_data.client_ids
    if virtual_client_size is None:
      return SPEC, sampling_lib.UniformSampler(ids, clients_per_round,
                                               SPEC.seed)
    return fedvc.virtual_clients(SPEC, ids, [data.client_sizes[c] for c in ids],
                                 clients_per_round, virtual_client_size,
                                 SPEC.seed)

  inputs = method_components.MethodInputs(
      model_fn, fed.num_classes, fed.client_data.client_ids,
      [fed.client_sizes[c] for c in fed.client_data.client_ids],
      clients_per_round, SPEC.seed)
  scenario = mixing_scenarios.MixingScenario("tiny", fed, central, {})
  return mixing_strategies.get_strategy(strategy).build(
      strategy, params, mixing_strategies.StrategyInputs(
          inputs, scenario, SPEC, _sgd(),
          server_optimizer,
          client_work=work, sampling=sampling, variants=variants))


def _run(method, rounds=2):
  """Weights before training and after each round (W matrices)."""
  process = training_loop.build_training_process(
      method.process, method.fed_data, method.spec)
  state = process.initialize()
  ws = [np.asarray(process.get_model_weights(state).trainable[0])]
  for r in range(1, rounds + 1):
    state = process.next(state, method.sampler.round_keys(r)).state
    ws.append(np.asarray(process.get_model_weights(state).trainable[0]))
  return ws


def _close(a, b):
  np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def _check_extra_broadcast_bytes(method, value):
  """Acceptance 3: what `method` broadcasts per round beyond the model, and
  what its settings (summary.json) record. Checked on the methods the exact
  runs build (ours: test-suite CPU, issue 29; a method built only to read
  its bytes costs a trace)."""
  assert method.extra_broadcast_bytes == value, method.name
  assert method.settings["extra_broadcast_bytes_per_round"] == value


@pytest.fixture(scope="module")
def context():
  with contexts.managed_execution_context() as worker:
    yield worker


@pytest.fixture(scope="module")
def fedavg_run(context):
  del context
  fed, central, clients, _ = _scenario()
  method = _method("none", fed, central)
  # Nothing beyond the model, though the config's M (default 10) is set.
  assert MixingSettings().central_examples_per_client > 0
  _check_extra_broadcast_bytes(method, 0)
  ws = _run(method)
  # FedAvg itself matches the numpy reference.
  for r in (1, 2):
    _close(ws[r], np_fedavg_round(ws[r - 1], list(clients.values())))
  return ws


# --- acceptance 1: exact values -------------------------------------------------

def test_parallel_merge_weight_one_is_fedavg(fedavg_run):
  fed, central, _, _ = _scenario()
  ws = _run(_method("parallel", fed, central, config=MixingSettings(
      merge_weight=1.0, central_steps=3, central_batch_size=4)))
  for a, b in zip(ws, fedavg_run):
    _close(a, b)


def test_parallel_merge_weight_zero_is_k_centralized_steps(context):
  del context
  fed, central, _, (cx, cy) = _scenario()
  # Batch = all N examples (a permutation), so each step is full-batch GD.
  ws = _run(_method("parallel", fed, central, config=MixingSettings(
      merge_weight=0.0, central_steps=3, central_batch_size=N_CENTRAL,
      central_learning_rate=0.2)))
  w = ws[0]
  for r in (1, 2):
    for _ in range(3):
      w = w - 0.2 * np_grad(w, cx, cy)
    _close(ws[r], w)


def test_parallel_merges_both_models_from_the_same_start(context):
  del context
  fed, central, clients, (cx, cy) = _scenario()
  method = _method("parallel", fed, central, config=MixingSettings(
      merge_weight=0.25, central_steps=2, central_batch_size=N_CENTRAL))
  _check_extra_broadcast_bytes(method, 0)
  ws = _run(method)
  for r in (1, 2):
    w_fed = np_fedavg_round(ws[r - 1], list(clients.values()))
    w_central = ws[r - 1]
    for _ in range(2):  # Central learning rate defaults to the client's.
      w_central = w_central - LR * np_grad(w_central, cx, cy)
    _close(ws[r], 0.25 * w_fed + 0.75 * w_central)


def test_gradient_transfer_lambda_zero_is_fedavg(fedavg_run):
  fed, central, _, _ = _scenario()
  ws = _run(_method("gradient_transfer", fed, central,
                    config=MixingSettings(gradient_weight=0.0)))
  for a, b in zip(ws, fedavg_run):
    _close(a, b)


def test_gradient_transfer_on_zero_gradient_clients_steps_along_g_c(context):
  del context
  fed, central, clients, (cx, cy) = _scenario(zero_client_x=True)
  lam = 0.5
  ws = _run(_method("gradient_transfer", fed, central, config=MixingSettings(
      gradient_weight=lam, central_batch_size=N_CENTRAL)))
  steps = {c: -(-n // B) for c, n in SIZES.items()}  # a: 2, b: 3.
  n = np.array([SIZES[c] for c in steps], np.float64)
  mean_steps = (n * np.array(list(steps.values()))).sum() / n.sum()
  for r in (1, 2):
    g_c = np_grad(ws[r - 1], cx, cy)  # At the round's starting weights.
    for (x, _), _c in zip(clients.values(), steps):
      assert not np_grad(ws[r - 1], x, np.zeros(len(x), np.int64)).any()
    _close(ws[r], ws[r - 1] - mean_steps * LR * lam * g_c)
    # The same numbers through the general reference.
    _close(ws[r], np_fedavg_round(ws[r - 1], list(clients.values()),
                                  extra=lam * g_c))


def test_gradient_transfer_general_clients(context):
  del context
  fed, central, clients, (cx, cy) = _scenario()
  method = _method("gradient_transfer", fed, central, config=MixingSettings(
      gradient_weight=1.0, central_batch_size=N_CENTRAL))
  _check_extra_broadcast_bytes(method, MODEL_BYTES)  # g_c: one model's size.
  ws = _run(method)
  for r in (1, 2):
    g_c = np_grad(ws[r - 1], cx, cy)
    _close(ws[r], np_fedavg_round(ws[r - 1], list(clients.values()), extra=g_c))


def test_example_transfer_zero_examples_is_fedavg(fedavg_run):
  fed, central, _, _ = _scenario()
  method = _method("example_transfer", fed, central,
                   config=MixingSettings(central_examples_per_client=0))
  assert method.fed_data.client_sizes == SIZES
  for a, b in zip(_run(method), fedavg_run):
    _close(a, b)


def _client_examples(fed_data, key):
  ds = fed_data.client_data.serializable_dataset_fn(tf.constant(key))
  rows = list(ds.as_numpy_iterator())
  return (np.stack([r["x"] for r in rows]).astype(np.float32),
          np.array([r["y"] for r in rows], np.int64))


def test_example_transfer_data_is_own_plus_m_reproducible_centralized():
  fed, central, clients, (cx, _) = _scenario()
  mixed = mixing_data.example_transfer_data(fed, central, 4, seed=11)
  assert mixed.client_sizes == {"a": 9, "b": 11}
  x, y = _client_examples(mixed, "a@3")
  np.testing.assert_array_equal(x[:5], clients["a"][0])
  rows = [int(np.flatnonzero((cx == r).all(axis=1))[0]) for r in x[5:]]
  assert len(set(rows)) == 4 and (y[5:] == 2).all()
  again, _ = _client_examples(mixed, "a@3")
  np.testing.assert_array_equal(x, again)
  other, _ = _client_examples(mixed, "a@4")
  assert not np.array_equal(x[5:], other[5:])  # Another round, another sample.
  b_x, _ = _client_examples(mixed, "b@3")
  assert not np.array_equal(x[5:], b_x[7:])    # Another client, another sample.
  # More than N: every example once before any repeats.
  many, _ = _client_examples(
      mixing_data.example_transfer_data(fed, central, 8, seed=11), "a@1")
  firsts = [int(np.flatnonzero((cx == r).all(axis=1))[0]) for r in many[5:11]]
  assert sorted(firsts) == list(range(N_CENTRAL))


def test_example_transfer_trains_fedavg_on_the_mix_weighted_by_n_plus_m(context):
  del context
  fed, central, _, _ = _scenario()
  method = _method("example_transfer", fed, central,
                   config=MixingSettings(central_examples_per_client=5))
  # M x clients a round x bytes per example (5 x 2: M != K).
  _check_extra_broadcast_bytes(method, 5 * 2 * EXAMPLE_BYTES)
  ws = _run(method)
  for r in (1, 2):
    mixes = [_client_examples(method.fed_data, k)
             for k in method.sampler.round_keys(r)]
    _close(ws[r], np_fedavg_round(ws[r - 1], mixes))


def test_oracle_is_fedavg_on_the_recombined_partition(context):
  del context
  fed, central, clients, (cx, cy) = _scenario()
  method = _method("oracle", fed, central, clients_per_round=3)
  recombined = {}
  for cid in ("a", "b", "z"):
    own = clients.get(cid, (np.zeros([0, F], np.float32), np.zeros([0], np.int64)))
    mine = [i for i, s in enumerate(SOURCES) if s == cid]
    recombined[cid] = (np.concatenate([own[0], cx[mine]]),
                       np.concatenate([own[1], cy[mine]]))
    got = _client_examples(method.fed_data, f"{cid}@1")
    np.testing.assert_array_equal(got[0], recombined[cid][0])
    np.testing.assert_array_equal(got[1], recombined[cid][1])
  assert method.fed_data.client_sizes == {"a": 7, "b": 9, "z": 2}
  np.testing.assert_array_equal(method.fed_data.class_counts[:, 2], [2, 2, 2])
  _check_extra_broadcast_bytes(method, 0)
  ws = _run(method)
  for r in (1, 2):
    _close(ws[r], np_fedavg_round(ws[r - 1], list(recombined.values())))


# --- composition --------------------------------------------------------------

def test_compositions_with_fedavgm_and_fedir_reduce_to_their_base(fedavg_run):
  fed, central, _, _ = _scenario()
  server = fedavg.build_server_momentum_optimizer(1.0, 0.9)
  base = _run(_method("none", fed, central,
                      server_optimizer=fedavg.build_server_momentum_optimizer(
                          1.0, 0.9)), rounds=3)
  gt = _run(_method("gradient_transfer", fed, central, server_optimizer=server,
                    config=MixingSettings(gradient_weight=0.0)), rounds=3)
  par = _run(_method("parallel", fed, central,
                     server_optimizer=fedavg.build_server_momentum_optimizer(
                         1.0, 0.9),
                     config=MixingSettings(merge_weight=1.0)), rounds=3)
  for a, b, c in zip(base, gt, par):
    _close(a, b)
    _close(a, c)
  # Momentum changes training (so the equalities above are not vacuous):
  # from round 2 on, the step carries round 1's (fedavg_run: plain FedAvg).
  assert np.abs(fedavg_run[2] - base[2]).max() > 1e-4
  ir = _run(_method("none", fed, central, fedir=True), rounds=2)
  ir_par = _run(_method("parallel", fed, central, fedir=True,
                        config=MixingSettings(merge_weight=1.0)), rounds=2)
  for a, b in zip(ir, ir_par):
    _close(a, b)
  assert np.abs(ir[2] - fedavg_run[2]).max() > 1e-5


def test_fedvc_composes_with_gradient_transfer(context):
  del context
  fed, central, _, _ = _scenario()
  method = _method("gradient_transfer", fed, central, virtual_client_size=4,
                   config=MixingSettings(gradient_weight=0.0))
  assert method.spec.virtual_client_size == 4 and method.name == "gradient_transfer+fedvc"
  base = _method("none", fed, central, virtual_client_size=4)
  for a, b in zip(_run(method), _run(base)):
    _close(a, b)


def test_refused_combinations_name_both():
  fed, central, _, _ = _scenario()
  with pytest.raises(ValueError, match="gradient_transfer.*FedIR"):
    _method("gradient_transfer", fed, central, fedir=True)
  with pytest.raises(ValueError, match="example_transfer.*FedVC"):
    _method("example_transfer", fed, central, virtual_client_size=3)
  with pytest.raises(ValueError, match="mixing strategy must be one of"):
    _method("mixup", fed, central)


def test_builders_validate_arguments():
  fed, central, _, _ = _scenario()
  with pytest.raises(ValueError, match="merge_weight"):
    mixing_parallel.build_parallel_training(model_fn, _sgd(), central, merge_weight=1.5)
  with pytest.raises(ValueError, match="central_steps"):
    mixing_parallel.build_parallel_training(model_fn, _sgd(), central, central_steps=0)
  with pytest.raises(ValueError, match="central_batch_size"):
    mixing_gradient.build_gradient_transfer(model_fn, _sgd(), central,
                                            central_batch_size=0)
  with pytest.raises(ValueError, match="gradient_weight"):
    mixing_gradient.build_gradient_transfer(model_fn, _sgd(), central,
                                            gradient_weight=-1.0)
  with pytest.raises(TypeError, match="central_optimizer"):
    mixing_parallel.build_parallel_training(model_fn, _sgd(), central,
                                            central_optimizer=tf.keras.optimizers.SGD())
  with pytest.raises(ValueError, match="examples_per_client"):
    mixing_data.example_transfer_data(fed, central, -1, seed=0)
  with pytest.raises(ValueError, match="central_learning_rate"):
    _method("parallel", fed, central,
            config=MixingSettings(central_learning_rate=0.0))
  no_source = central._replace(source_clients=None)
  with pytest.raises(ValueError, match="no source_clients"):
    mixing_data.recombined_data(fed, no_source)
  other = mixing_scenarios.array_centralized_data(
      "wide", {"x": np.zeros([2, F + 1], np.float32), "y": np.zeros([2], np.int64)},
      digits._identity_train)  # pylint: disable=protected-access
  with pytest.raises(ValueError, match="different raw elements"):
    mixing_data.example_transfer_data(fed, other, 1, seed=0)


# --- acceptance 3: payload ------------------------------------------------------

def test_extra_broadcast_bytes_equal_the_formula():
  """The formula's parts; each strategy's built method reports its bytes in
  its exact-value test (`_check_extra_broadcast_bytes`: none in `fedavg_run`,
  parallel, gradient transfer, example transfer with M = 5, K = 2, the
  oracle)."""
  _, central, _, _ = _scenario()
  assert mixing_scenarios.bytes_per_example(central.element_spec) == EXAMPLE_BYTES
  assert mixing_payload.model_trainable_bytes(model_fn) == MODEL_BYTES
  # What gradient transfer's distributor actually broadcasts beyond w_t.
  distributor = mixing_gradient.build_central_gradient_distributor(model_fn, central, 4)
  payload = distributor.next.type_signature.result.result.member
  assert mixing_payload.tensor_bytes(payload.central_gradient) == MODEL_BYTES
  assert mixing_payload.tensor_bytes(payload.weights) == MODEL_BYTES
  assert mixing.extra_broadcast_bytes(
      "example_transfer", clients_per_round=7, examples_per_client=3,
      bytes_per_example=100) == 2100


# --- sampling and resumption ----------------------------------------------------

def test_centralized_sampling_is_seeded_by_round():
  fed, central, _, _ = _scenario()
  del fed
  idx = mixing_data.sample_indices(6, 14, tf.constant([3, 4], tf.int64)).numpy()
  assert sorted(idx[:6]) == list(range(6)) and sorted(idx[6:12]) == list(range(6))
  np.testing.assert_array_equal(
      idx, mixing_data.sample_indices(6, 14, tf.constant([3, 4], tf.int64)))

  def batches(r, seed=0):
    ds = mixing_data.central_batches(central, tf.constant(r, tf.int64), seed, 2, 3)
    return np.concatenate([b["x"].numpy() for b in ds])
  assert batches(1).shape == (6, F)
  np.testing.assert_array_equal(batches(1), batches(1))
  assert not np.array_equal(batches(1), batches(2))
  assert not np.array_equal(batches(1), batches(1, seed=1))


@pytest.fixture(scope="module")
def evaluate(context):
  """Keras evaluation on the scenario's test set, shared by the resume runs
  (ours: test-suite CPU, issue 29). Sharing it changes no run: it assigns
  the weights it is given before every evaluation, and makes its Keras model
  at its first call (remade when a process built since switched Keras's
  classes to v1: `keras_eval.build_keras_evaluate_fn`)."""
  del context
  fed, _, _, _ = _scenario()
  return keras_eval.build_keras_evaluate_fn(
      _keras_model, cdl.build_eval_dataset(fed.test_data, fed.eval_map_fn))


@pytest.mark.parametrize("strategy", ["parallel", "gradient_transfer"])
def test_resumed_run_equals_uninterrupted(evaluate, tmp_path, strategy):
  fed, central, _, _ = _scenario()
  config = MixingSettings(central_batch_size=2, central_steps=2)

  def run(method, rounds, out):
    # Checkpoints at the last round only (LoopConfig's default every 10):
    # the interrupted run's at round 2 is the one the resume reads.
    result = training_loop.run_federated_training(
        strategy, method.process, method.fed_data, method.spec, method.sampler,
        evaluate, training_loop.LoopConfig(total_rounds=rounds, output_dir=out),
        log_fn=None)
    return [r["test_loss"] for r in result.rows], result.resumed_from
  # The uninterrupted run and the interrupted one's first 2 rounds share a
  # build (a process holds no state between runs: each run initializes its
  # state); the resume is a fresh build, as a new process would make it.
  method = _method(strategy, fed, central, config=config)
  whole, _ = run(method, 3, str(tmp_path / "whole"))
  run(method, 2, str(tmp_path / "split"))
  resumed, start = run(_method(strategy, fed, central, config=config), 3,
                       str(tmp_path / "split"))
  assert start == 2
  np.testing.assert_allclose([float(v) for v in resumed],
                             [float(v) for v in whole], rtol=1e-6)
  assert len(set(whole)) == 3
