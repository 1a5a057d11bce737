"""Several TFF workers: same results as one, owned, failing fast and clearly."""

import functools
import os
import signal
import socket
import threading
import time

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from federated_vision import algorithms
from federated_vision.runtime import contexts
from federated_vision.runtime import worker_config
from federated_vision.runtime import worker_errors as worker_errors
from federated_vision.runtime import workers
from federated_vision import training_loop
from federated_vision.evaluation import keras_eval
from federated_vision.learning import sampling
from federated_vision.data import client_data as cdl
from federated_vision.data import digits
from federated_vision.models import build_tff_model_fn
from federated_vision.models import digits as digits_models
from test_execution import _alive
from worker_logs import remove_logs


@functools.lru_cache(maxsize=None)
def _setup():
  """The data, spec, FedAvg process, sampler and evaluation the tests run:
  built once (a process's computations run in any execution context)."""
  fed = digits.synthetic(num_clients=6, examples_per_client=10, num_test=20)
  spec = cdl.TrainingSpec(batch_size=5, seed=3)
  element_spec = cdl.build_training_dataset_fn(
      fed.client_data.serializable_dataset_fn, spec,
      fed.train_map_fn)(tf.constant("0")).element_spec
  model_fn = build_tff_model_fn(digits_models.create_digits_cnn, element_spec)
  process = algorithms.build_fedavg(
      model_fn, tff.learning.optimizers.build_sgdm(0.1))
  sampler = sampling.UniformSampler(fed.client_data.client_ids, 5, seed=3)
  evaluate = keras_eval.build_keras_evaluate_fn(
      digits_models.create_digits_cnn,
      cdl.build_eval_dataset(fed.test_data, fed.eval_map_fn))
  return fed, spec, process, sampler, evaluate


def _run(tmp_path, name, rounds=3, **context_kwargs):
  fed, spec, process, sampler, evaluate = _setup()
  with contexts.managed_execution_context(**context_kwargs) as pool:
    pids = pool.pids
    result = training_loop.run_federated_training(
        name, process, fed, spec, sampler, evaluate,
        training_loop.LoopConfig(total_rounds=rounds,
                                 output_dir=str(tmp_path / name)),
        log_fn=None)
  return result, pids


def _wait_dead(pids, seconds=10):
  deadline = time.time() + seconds
  while any(_alive(p) for p in pids) and time.time() < deadline:
    time.sleep(0.05)
  return not any(_alive(p) for p in pids)


def test_two_local_workers_owned_and_match_remote_workers(tmp_path):
  # That 2 local workers give 1 worker's numbers (every metric, every
  # round) is tests/experiments/test_workers_flags.py's
  # test_two_local_workers_match_one_and_are_stopped: train_main
  # --local_workers=2 against conftest's reference_run on one worker.
  two, two_pids = _run(tmp_path, "two", local_workers=2)
  assert len(two_pids) == 2 and len(set(two_pids)) == 2
  assert len(two.rows) == 3
  assert _wait_dead(two_pids), "a worker outlived its context"
  # Workers "started by hand" (here: our own, reached only by address)
  # train as the 2 local workers did.
  pool = contexts.WorkerPool(local_workers=2)
  pool.start()
  try:
    addresses = [w.address for w in pool.local]
    remote, remote_pids = _run(tmp_path, "remote", rounds=2, local_workers=0,
                               workers=addresses)
  finally:
    pool.stop()
  assert remote_pids == []  # Reached by address: none of the context's own.
  assert len(remote.rows) == 2
  for a, b in zip(two.rows, remote.rows):
    for key in ("train_loss", "train_accuracy", "test_loss", "test_accuracy"):
      np.testing.assert_allclose(float(b[key]), float(a[key]), rtol=1e-5,
                                 err_msg=f"round {a['round']} {key}")


def test_taken_port_is_one_clear_line():
  with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", 0))
    s.listen(1)
    port = s.getsockname()[1]
    worker = workers.ManagedWorker(port=port, startup_timeout=20)
    with pytest.raises(worker_errors.WorkerStartError) as info:
      worker.start()
  message = str(info.value)
  assert f"port {port}" in message and "\n" not in message
  # The worker exited (its port was taken): not the 20 s start-up timeout.
  assert "not serving after" not in message
  assert "exited with code" in message or "killed by signal" in message
  assert not worker.is_running()
  remove_logs([worker])


def test_missing_binary_is_one_clear_line(monkeypatch):
  monkeypatch.setattr(workers, "worker_binary_path", lambda: (_ for _ in ()).throw(
      worker_errors.WorkerStartError("TFF worker binary not found at /nope")))
  with pytest.raises(worker_errors.WorkerStartError, match="/nope"):
    with contexts.managed_execution_context(local_workers=2):
      pass


def test_unreachable_address_fails_within_deadline():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]  # Nothing listens here.
  # The deadline it gave up at is the one set (1 s), said in the line.
  with pytest.raises(worker_errors.WorkerStartError,
                     match=f"127.0.0.1:{port} within 1 s"):
    with contexts.managed_execution_context(
        local_workers=0, workers=[f"127.0.0.1:{port}"], startup_timeout=1):
      pass


def test_worker_killed_mid_round_is_one_clear_line(tmp_path):
  fed, spec, process, sampler, evaluate = _setup()
  del evaluate
  training = training_loop.build_training_process(process, fed, spec)
  with contexts.managed_execution_context(local_workers=2) as pool:
    state = training.initialize()
    victim = pool.pids[1]
    # Kill the second worker while rounds are running.
    killer = threading.Timer(1.0, os.kill, (victim, signal.SIGKILL))
    killer.start()
    with pytest.raises(worker_errors.WorkerLostError) as info:
      for r in range(1, 1000):
        state = training.next(state, sampler.round_keys(r)).state
    killer.join()
  # The loss was noticed as the process's death (not a gRPC timeout).
  assert "killed by signal 9" in str(info.value)
  assert "\n" not in str(info.value)
  assert _wait_dead(pool.pids + [victim])
  remove_logs(pool.local)


def test_pool_validates_arguments():
  with pytest.raises(ValueError, match="local_workers"):
    contexts.WorkerPool(local_workers=-1)
  with pytest.raises(ValueError, match="at least one worker"):
    contexts.WorkerPool(local_workers=0)
  with pytest.raises(ValueError, match="not host:port"):
    contexts.WorkerPool(workers=["localhost"])
  assert worker_config.parse_worker_addresses("a:1, b:2") == ["a:1", "b:2"]


class _SignallingSampler:
  """Samples like `inner`; when asked for `round_num`, first signals `pid`."""

  def __init__(self, inner, round_num, pid, sig):
    self._inner, self._round, self._pid, self._sig = inner, round_num, pid, sig
    self.signalled_at = None

  def round_keys(self, round_num):
    if round_num == self._round and self.signalled_at is None:
      os.kill(self._pid, self._sig)
      self.signalled_at = time.monotonic()
    return self._inner.round_keys(round_num)


def test_hung_remote_worker_stops_run_within_seconds(tmp_path, monkeypatch):
  """Resuming after a lost remote worker is tested through train_main
  (test_workers_flags.
  test_two_concurrent_runs_one_proceeds_lost_worker_stops_it_rerun_resumes)."""
  # 3 unanswered probes of 1 s (5 s in use): the same path, 12 s sooner.
  monkeypatch.setattr(workers, "_REMOTE_PROBE_TIMEOUT_SEC", 1.0)
  fed, spec, process, sampler, evaluate = _setup()
  config = training_loop.LoopConfig(total_rounds=4, rounds_per_checkpoint=1,
                                    output_dir=str(tmp_path / "run"))
  hosts = contexts.WorkerPool(local_workers=2)  # "Started by hand".
  hosts.start()
  victim = hosts.local[1].pid
  # SIGSTOP: the process lives and its port accepts connections, but it
  # never answers (like a host that vanished without closing connections).
  hung = _SignallingSampler(sampler, 3, victim, signal.SIGSTOP)
  try:
    with pytest.raises(worker_errors.WorkerLostError) as info:
      with contexts.managed_execution_context(
          local_workers=0, workers=[w.address for w in hosts.local]):
        training_loop.run_federated_training(
            "run", process, fed, spec, hung, evaluate, config, log_fn=None)
    assert hung.signalled_at is not None
  finally:
    os.kill(victim, signal.SIGKILL)
    hosts.stop()
    remove_logs(hosts.local)
  message = str(info.value)
  assert hosts.local[1].address in message and "not answering" in message
  # Stopped by the probes, with the timeout set (not a blocked call's).
  assert (f"on {workers._REMOTE_PROBE_FAILURES} probes of 1 s"  # pylint: disable=protected-access
          in message)
  assert "\n" not in message
  # Rounds 1-2 finished and were checkpointed before the loss.
  assert sorted(os.listdir(tmp_path / "run" / "checkpoints"))[:2] == [
      "round_1", "round_2"]


def _listening_addresses(port):
  """Hex local addresses of LISTEN sockets on `port` (/proc/net/tcp{,6})."""
  out = []
  for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    with open(table) as f:
      for line in f.readlines()[1:]:
        fields = line.split()
        address, hex_port = fields[1].split(":")
        if int(hex_port, 16) == port and fields[3] == "0A":
          out.append(address)
  return out


@pytest.mark.parametrize("loopback_only", [True, False])
def test_local_workers_listen_on_loopback_only(loopback_only):
  config = worker_config.WorkerConfig(loopback_only=loopback_only)
  with contexts.managed_execution_context(config=config) as pool:
    addresses = _listening_addresses(pool.local[0].port)
  assert addresses
  wildcard = any(set(a) == {"0"} for a in addresses)
  # 127.0.0.1 is 0100007F in /proc's byte order, also inside ::ffff:127.0.0.1.
  assert wildcard != loopback_only
  if loopback_only:
    assert all(a.endswith("0100007F") for a in addresses)
