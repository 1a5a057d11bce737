"""Training-loop integrity: lock, checkpoints, disk full, divergence, resume."""

import csv
import errno
import io
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff
from tensorboard.backend.event_processing import event_accumulator

from federated_vision import algorithms
from federated_vision.runtime import contexts
from federated_vision import models
from federated_vision import training_loop as tl
from federated_vision.training import checkpoints as checkpoints_lib
from federated_vision.training import divergence
from federated_vision.training import run_errors
from federated_vision.training import metrics_csv as metrics_csv_lib
from federated_vision.training import run_lock
from federated_vision.training import tensorboard
from federated_vision.learning import sampling
from federated_vision.data import client_data as cdl
from federated_vision.data import digits
from federated_vision.evaluation import keras_eval
from federated_vision.evaluation import reporting
from federated_vision.models import digits as digits_models
from conftest import StopBefore
from conftest import metric_rows as _rows

ROUNDS = 4
INPUT_SPEC = {"x": tf.TensorSpec([None, 8, 8, 1], tf.float32),
              "y": tf.TensorSpec([None], tf.int64)}


@pytest.fixture(scope="module")
def setup():
  fed = digits.load_federated(num_clients=6, alpha=0.5, seed=1)
  spec = cdl.TrainingSpec(batch_size=16, max_elements=32, seed=1)
  with contexts.managed_execution_context():
    yield fed, spec


# (client_lr, server_lr) -> (process, evaluate) of `_built`.
_BUILT = {}


def _built(setup, client_lr, server_lr):
  """A tiny FedAvgM process on digits and its Keras evaluation, built once
  per learning rates for the whole module (ours: test-suite CPU, issue 29;
  tracing is most of a build). Sharing them between runs changes no run:
  the process's computations hold no state between calls (each run
  initializes its state or restores it from a checkpoint), and `evaluate`
  assigns the weights it is given to its model before every evaluation.
  Resumes across fresh builds (new processes) are checked through the
  binary: tests/experiments/test_train_main.py,
  tests/experiments/test_run_integrity.py."""
  key = (client_lr, server_lr)
  if key not in _BUILT:
    fed, _ = setup
    model_fn = models.build_tff_model_fn(digits_models.create_digits_cnn,
                                         INPUT_SPEC)
    process = algorithms.build_fedavgm(
        model_fn, tff.learning.optimizers.build_sgdm(client_lr),
        server_learning_rate=server_lr, server_momentum=0.5)
    # Keras models for evaluation are built after TFF has traced its graphs.
    # Every run of the module also records the training-set loss.
    evaluate = keras_eval.with_full_train_loss(
        keras_eval.build_keras_evaluate_fn(
            digits_models.create_digits_cnn,
            cdl.build_eval_dataset(fed.test_data, fed.eval_map_fn)),
        digits_models.create_digits_cnn, fed.pooled_train_batches())
    _BUILT[key] = process, evaluate
  return _BUILT[key]


def _run(setup, out, total_rounds=ROUNDS, client_lr=0.05, server_lr=1.0,
         sampler=None, log=None, **config):
  """One tiny FedAvgM run on digits through `run_federated_training`,
  recording the loss on the pooled training data (`full_train_loss`)."""
  fed, spec = setup
  process, evaluate = _built(setup, client_lr, server_lr)
  sampler = sampler or sampling.UniformSampler(fed.client_data.client_ids, 3,
                                               seed=1)
  config.setdefault("rounds_per_checkpoint", 2)
  lines = [] if log is None else log
  return tl.run_federated_training(
      "fedavgm", process, fed, spec, sampler, evaluate,
      tl.LoopConfig(total_rounds=total_rounds, output_dir=str(out),
                    full_train_loss=True, **config),
      log_fn=lines.append)


@pytest.fixture(scope="module")
def reference(setup, tmp_path_factory):
  """An uninterrupted 4-round run: (output dir, metric rows)."""
  out = tmp_path_factory.mktemp("reference") / "run"
  result = _run(setup, out)
  assert result.status == "completed" and result.non_finite_rounds == ()
  return out, _rows(out / "metrics.csv")


def _scalars(log_dir):
  acc = event_accumulator.EventAccumulator(
      str(log_dir), size_guidance={event_accumulator.TENSORS: 0},
      purge_orphaned_data=False)
  acc.Reload()
  return {tag: [(e.step, float(tf.make_ndarray(e.tensor_proto)))
                for e in acc.Tensors(tag)]
          for tag in acc.Tags()["tensors"]}


# --- resume, TensorBoard purge, seconds ----------------------------------------

def test_reference_run_records_every_column(reference):
  out, rows = reference
  assert [r["round"] for r in rows] == ["1", "2", "3", "4"]
  assert all(r["clients_dropped_non_finite"] == "0" and r["non_finite"] == "0"
             for r in rows)
  assert sorted(os.listdir(out / "checkpoints")) == ["round_2", "round_4"]
  tb = _scalars(out / "tensorboard")
  assert [s for s, _ in tb["train_loss"]] == [1, 2, 3, 4]
  np.testing.assert_allclose([v for _, v in tb["train_loss"]],
                             [float(r["train_loss"]) for r in rows], rtol=1e-6)


def test_full_train_loss_is_the_final_models_loss_on_the_pooled_data(
    setup, reference):
  """Issue 35, check 4: the last round's full_train_loss equals the loss
  computed here, with the run's final weights (its round-4 checkpoint), on
  every client's training examples (decoded without augmentation): mean
  softmax cross-entropy in float64 plus the model's regularization losses.
  Every evaluated round has one, and it is not the test loss."""
  out, rows = reference
  fed, _ = setup
  process, _ = _built(setup, 0.05, 1.0)
  state, version = checkpoints_lib.Checkpoints(str(out / "checkpoints"), 2,
                                  lambda _: None).load_latest(
                                      process.initialize())
  assert version == ROUNDS
  model = digits_models.create_digits_cnn()
  process.get_model_weights(state).assign_weights_to(model)
  examples = [fed.eval_map_fn(e) for cid in fed.client_data.client_ids
              for e in fed.client_data.create_tf_dataset_for_client(cid)]
  x = np.stack([e["x"].numpy() for e in examples])
  y = np.array([e["y"].numpy() for e in examples])
  # The 6 clients of 239 examples use 1,434 of the 1,438 training images.
  assert len(y) == sum(fed.client_sizes.values()) == 6 * 239
  logits = model(x, training=False).numpy().astype(np.float64)
  logits -= logits.max(axis=1, keepdims=True)
  log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
  loss = -log_p[np.arange(len(y)), y].mean() + sum(
      float(l) for l in model.losses)
  assert float(rows[-1]["full_train_loss"]) == pytest.approx(loss, rel=2e-6)
  assert all(r["full_train_loss"] not in ("", r["test_loss"]) for r in rows)
  tb = _scalars(out / "tensorboard")
  assert [s for s, _ in tb["full_train_loss"]] == [1, 2, 3, 4]


def test_interrupted_run_resumes_purges_tensorboard_and_sums_seconds(
    setup, reference, tmp_path):
  out = tmp_path / "run"
  fed, _ = setup
  sampler = sampling.UniformSampler(fed.client_data.client_ids, 3, seed=1)
  with pytest.raises(KeyboardInterrupt):
    _run(setup, out, sampler=StopBefore(sampler, 4))
  # Round 3 was written to metrics.csv and TensorBoard, never checkpointed.
  assert [r["round"] for r in _rows(out / "metrics.csv")] == ["1", "2", "3"]
  assert [s for s, _ in _scalars(out / "tensorboard")["train_loss"]] == [1, 2, 3]
  with open(out / "metrics.csv", newline="") as f:
    first_seconds = {r["round"]: float(r["round_seconds"])
                     for r in csv.DictReader(f)}
  log = []
  result = _run(setup, out, log=log)
  assert result.resumed_from == 2 and result.status == "completed"
  assert any("resuming from the checkpoint of round 2 (dropped" in l
             for l in log), log
  assert _rows(out / "metrics.csv") == reference[1]
  tb = _scalars(out / "tensorboard")
  for tag in ("train_loss", "test_accuracy", "cumulative_batch_budget"):
    assert [s for s, _ in tb[tag]] == [1, 2, 3, 4], tag
  np.testing.assert_allclose([v for _, v in tb["train_loss"]],
                             [float(r["train_loss"]) for r in reference[1]],
                             rtol=1e-6)
  # seconds = rounds 1-2 of the first invocation + rounds 3-4 of the second.
  with open(out / "metrics.csv", newline="") as f:
    final_seconds = {r["round"]: float(r["round_seconds"])
                     for r in csv.DictReader(f)}
  assert {k: final_seconds[k] for k in ("1", "2")} == {
      k: first_seconds[k] for k in ("1", "2")}
  assert result.seconds == pytest.approx(sum(final_seconds.values()))
  # A finished run started again trains nothing and reports the same.
  again = _run(setup, out)
  assert again.resumed_from == ROUNDS and again.seconds == pytest.approx(
      result.seconds)
  assert again.final_accuracy == result.final_accuracy


def _write_events(log_dir, steps_values, tag="loss"):
  writer = tf.summary.create_file_writer(str(log_dir))
  with writer.as_default():
    for step, value in steps_values:
      tf.summary.scalar(tag, value, step=step)
  writer.close()


def test_purge_tensorboard_keeps_one_value_per_step(tmp_path):
  log_dir = tmp_path / "tb"
  _write_events(log_dir, [(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0)])
  time.sleep(1.1)  # A later file name, as after a resume.
  _write_events(log_dir, [(3, 30.0), (4, 40.0), (5, 50.0)])
  assert tensorboard.purge_tensorboard(str(log_dir), 3) == 4  # 3, 4 | 4, 5.
  assert _scalars(log_dir)["loss"] == [(1, 1.0), (2, 2.0), (3, 30.0)]
  assert os.listdir(log_dir) == [tensorboard.KEPT_EVENTS_FILE]
  assert tensorboard.purge_tensorboard(str(log_dir), 3) == 0  # Already clean.
  # A record cut short (a killed writer) is dropped, the rest kept.
  _write_events(log_dir, [(4, 4.5)])
  newest = max(log_dir.glob("*tfevents*"), key=os.path.getmtime)
  newest.write_bytes(newest.read_bytes()[:-5])
  tensorboard.purge_tensorboard(str(log_dir), 4)
  assert _scalars(log_dir)["loss"] == [(1, 1.0), (2, 2.0), (3, 30.0)]
  assert tensorboard.purge_tensorboard(str(log_dir), 0) == 3
  assert _scalars(log_dir) == {}


# --- lock ----------------------------------------------------------------------

# The holder imports only the lock's module (run_lock.RunLock is it):
# no TensorFlow import, ~4 s of CPU (ours: test-suite time, issue 29).
_HOLD_LOCK = """
import sys, time
from federated_vision.training import run_lock
with run_lock.RunLock(sys.argv[1]):
  print("locked", flush=True)
  time.sleep(120)
"""


def test_second_run_is_refused_at_once_and_lock_dies_with_holder(setup,
                                                                 tmp_path):
  out = tmp_path / "run"
  holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(out)],
                            stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  try:
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(run_errors.RunLockedError) as info:
      _run(setup, out)
    message = str(info.value)
    assert "\n" not in message and str(out) in message
    assert f"pid {holder.pid}" in message and info.value.exit_code == 2
    assert not (out / "metrics.csv").exists()  # Refused before any output.
  finally:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
  # SIGKILL released it: the lock is never stale.
  with run_lock.RunLock(str(out)):
    with run_lock.RunLock(str(out)):  # Re-entrant within one process.
      pass
    fd = os.open(out / run_lock.LOCK_FILE, os.O_RDWR)
    try:
      import fcntl  # pylint: disable=g-import-not-at-top
      with pytest.raises(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # Still held.
    finally:
      os.close(fd)


# --- unreadable checkpoints -----------------------------------------------------

def _copy_run(src, dst):
  subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


@pytest.mark.parametrize("damage", ["truncated_variables", "empty_saved_model"])
def test_unreadable_checkpoint_is_named_then_resumed_from_previous(
    setup, reference, tmp_path, damage):
  out = tmp_path / "run"
  _copy_run(reference[0], out)
  latest = out / "checkpoints" / "round_4"
  if damage == "truncated_variables":
    (data,) = latest.glob("variables/variables.data-*")
    data.write_bytes(data.read_bytes()[:len(data.read_bytes()) // 2])
  else:
    (latest / "saved_model.pb").write_bytes(b"")
  with pytest.raises(run_errors.CheckpointError) as info:
    _run(setup, out)
  message = str(info.value)
  assert "\n" not in message and str(latest) in message
  assert "resume_from_last_valid resumes from round 2" in message
  assert info.value.path == str(latest) and info.value.exit_code == 1
  log = []
  result = _run(setup, out, resume_from_last_valid=True, log=log)
  assert result.resumed_from == 2
  assert any(str(latest) in l and "cannot be read" in l for l in log), log
  assert _rows(out / "metrics.csv") == reference[1]
  assert (out / "checkpoints" / "corrupt" / "round_4").is_dir()
  assert sorted(os.listdir(out / "checkpoints")) == [
      "corrupt", "round_2", "round_4"]


def test_no_readable_checkpoint_never_restarts_silently(setup, reference,
                                                        tmp_path):
  out = tmp_path / "run"
  _copy_run(reference[0], out)
  for ckpt in ("round_2", "round_4"):
    (out / "checkpoints" / ckpt / "saved_model.pb").write_bytes(b"")
  with pytest.raises(run_errors.CheckpointError, match="no checkpoint in .* can be read"):
    _run(setup, out, resume_from_last_valid=True)
  assert len(_rows(out / "metrics.csv")) == ROUNDS  # Untouched.


# --- disk full -------------------------------------------------------------------

def test_disk_full_while_checkpointing_leaves_nothing_half_written(
    setup, reference, tmp_path, monkeypatch):
  real_save = tf.saved_model.save

  def full_disk(obj, export_dir, **kwargs):
    del obj, kwargs
    os.makedirs(os.path.join(export_dir, "variables"), exist_ok=True)
    with open(os.path.join(export_dir, "variables", "partial"), "wb") as f:
      f.write(b"x" * 100)
    raise tf.errors.ResourceExhaustedError(
        None, None, f"{export_dir}/variables/variables_temp/part-00000-of-"
        "00001.data-00000-of-00001.tempstate123; No space left on device "
        "[Op:SaveV2]")
  monkeypatch.setattr(tf.saved_model, "save", full_disk)
  out = tmp_path / "run"
  with pytest.raises(run_errors.OutputWriteError) as info:
    _run(setup, out)
  message = str(info.value)
  assert "\n" not in message
  assert message.startswith(f"cannot write the checkpoint of round 2 to "
                            f"{out / 'checkpoints'}:")
  assert "No space left on device" in message
  assert os.listdir(out / "checkpoints") == []  # No round_2, no *_temp*.
  monkeypatch.setattr(tf.saved_model, "save", real_save)
  result = _run(setup, out)  # Space again: resumes consistently from scratch.
  assert result.resumed_from == 0
  assert _rows(out / "metrics.csv") == reference[1]


def test_disk_full_while_appending_metrics_keeps_csv_whole(tmp_path,
                                                           monkeypatch):
  metrics = metrics_csv_lib.MetricsCsv(str(tmp_path / "metrics.csv"))
  metrics.truncate_after(0)
  metrics.append({"round": 1, "train_loss": 0.5})
  before = (tmp_path / "metrics.csv").read_bytes()

  class FullWriter:
    def __init__(self, f, **kwargs):
      del kwargs
      self.f = f

    def writerow(self, values):
      self.f.write(",".join(values[:3]))
      self.f.flush()
      raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
  monkeypatch.setattr(csv, "writer", FullWriter)
  with pytest.raises(run_errors.OutputWriteError,
                     match=r"cannot append round 2 to .*metrics.csv: "
                     r"No space left on device$"):
    metrics.append({"round": 2, "train_loss": 0.25})
  assert (tmp_path / "metrics.csv").read_bytes() == before


def _mount_tmpfs(path, size):
  os.makedirs(path)
  proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                         str(path)], capture_output=True, check=False)
  return proc.returncode == 0


def test_real_full_filesystem_gives_one_line_and_no_temp(setup, tmp_path):
  mount = tmp_path / "small"
  if not _mount_tmpfs(mount, "96k"):
    pytest.skip("cannot mount a tmpfs here (needs root); simulated above")
  try:
    with pytest.raises(run_errors.OutputWriteError) as info:
      _run(setup, mount / "run", total_rounds=2, rounds_per_checkpoint=1)
    message = str(info.value)
    assert "\n" not in message and "No space left on device" in message
    assert str(mount / "run") in message
    assert not list(mount.glob("run/checkpoints/*_temp*"))
    assert not list(mount.glob("run/checkpoints/round_*"))
  finally:
    subprocess.run(["umount", str(mount)], check=True)


# --- divergence -------------------------------------------------------------------

def test_non_finite_reasons_exact():
  weights = [np.ones([2, 2], np.float32), np.zeros([3], np.float32)]
  metrics = {"client_work": {"train": {"loss": 0.3},
                             "clients_dropped_non_finite": 0},
             "finalizer": {"update_non_finite": 0}}
  assert divergence.non_finite_reasons(metrics, weights, {"loss": 1.0,
                                                  "accuracy": 0.5}) == []
  bad = {"client_work": {"train": {"loss": math.nan},
                         "clients_dropped_non_finite": 2},
         "finalizer": {"update_non_finite": 1}}
  weights[1][0] = np.inf
  assert divergence.non_finite_reasons(bad, weights, {"loss": math.nan,
                                              "accuracy": 0.1}) == [
      "2 client update(s) non-finite and dropped",
      "the aggregated update was non-finite and not applied",
      "training loss nan", "the model weights are non-finite",
      "test loss nan"]
  # Processes built elsewhere may lack the count and the finalizer flag.
  assert divergence.non_finite_reasons({"client_work": {"train": {"loss": 1.0}}},
                               [np.ones(2)]) == []


@pytest.mark.parametrize("client_lr,server_lr,reason", [
    (1e30, 1.0, "3 client update(s) non-finite and dropped"),
    (0.05, 1e35, "test loss nan"),
])
def test_divergence_stops_with_method_and_round(setup, tmp_path, client_lr,
                                                server_lr, reason):
  out = tmp_path / "run"
  with pytest.raises(run_errors.DivergenceError) as info:
    _run(setup, out, client_lr=client_lr, server_lr=server_lr)
  error = info.value
  assert (error.method, error.round_num, error.exit_code) == ("fedavgm", 1, 3)
  assert str(error).startswith("[fedavgm] diverged at round 1: ")
  assert reason in error.reasons and "\n" not in str(error)
  assert error.result.status == "diverged" and error.result.rounds == 1
  assert error.result.non_finite_rounds == (1,)
  (row,) = _rows(out / "metrics.csv")
  assert row["non_finite"] == "1"
  assert row["clients_dropped_non_finite"] == ("3" if client_lr > 1 else "0")
  assert os.listdir(out / "checkpoints") == []  # A diverged state is not kept.


def test_divergence_continue_counts_and_marks_result(setup, tmp_path):
  log = []
  result = _run(setup, tmp_path / "run", total_rounds=2, client_lr=1e30,
                on_divergence="continue", log=log)
  assert result.non_finite_rounds == (1, 2) and result.rounds == 2
  # Every update was dropped, so the model is the finite initial one.
  assert result.status == "completed"
  assert sum("(on_divergence='continue')" in l for l in log) == 2
  rows = _rows(tmp_path / "run" / "metrics.csv")
  assert [r["clients_dropped_non_finite"] for r in rows] == ["3", "3"]
  nan_model = _run(setup, tmp_path / "nan", total_rounds=1, server_lr=1e35,
                   on_divergence="continue")
  assert nan_model.status == "diverged" and math.isnan(nan_model.final_loss)


# --- progress, config, JSON ----------------------------------------------------------

class _Terminal(io.StringIO):
  def isatty(self):
    return True


def test_progress_bar_on_a_terminal_lines_otherwise(setup, tmp_path,
                                                    monkeypatch):
  fed, spec = setup
  process, evaluate = _built(setup, 0.05, 1.0)  # The module's FedAvgM.
  sampler = sampling.UniformSampler(fed.client_data.client_ids, 3, seed=1)
  outputs = {}
  for kind, stream in (("tty", _Terminal()), ("pipe", io.StringIO())):
    monkeypatch.setattr(sys, "stdout", stream)
    tl.run_federated_training(
        "fedavgm", process, fed, spec, sampler, evaluate,
        tl.LoopConfig(total_rounds=2, output_dir=str(tmp_path / kind)),
        log_fn=print)
    outputs[kind] = stream.getvalue()
  monkeypatch.undo()
  assert " rounds/s" in outputs["tty"] and "2/2 [" in outputs["tty"]
  assert "<00:00" in outputs["tty"] or "<?" in outputs["tty"]  # The ETA.
  assert "round    1/2" not in outputs["tty"]
  lines = outputs["pipe"].splitlines()
  assert [l.split("train_loss")[0].strip() for l in lines] == [
      "[fedavgm] round    1/2", "[fedavgm] round    2/2"]


def test_loop_config_validates_naming_the_argument():
  for kwargs, name in (({"total_rounds": 0}, "total_rounds"),
                       ({"rounds_per_eval": 1.5}, "rounds_per_eval"),
                       ({"keep_checkpoints": -1}, "keep_checkpoints"),
                       ({"on_divergence": "ignore"}, "on_divergence")):
    config = tl.LoopConfig(**{"total_rounds": 3, "output_dir": "x", **kwargs})
    with pytest.raises(ValueError, match=name):
      config.validate()


def test_write_json_is_strict(tmp_path):
  path = str(tmp_path / "summary.json")
  reporting.write_json(path, {
      "nan": math.nan, "inf": -math.inf, "np": np.float32("nan"),
      "ok": np.float64(0.25), "n": np.int64(3), "flag": np.bool_(True),
      "nested": [{"a": (1.0, math.inf)}, np.array([0.5, np.nan])],
      np.int64(7): "key"})

  def refuse(constant):
    raise ValueError(f"non-standard JSON constant {constant}")
  value = json.loads(open(path).read(), parse_constant=refuse)
  # NaN = not measured -> null; +-inf (e.g. alpha = inf) keeps its meaning
  # as a string; strict JSON has neither constant.
  assert value == {"nan": None, "inf": "-inf", "np": None, "ok": 0.25, "n": 3,
                   "flag": True, "nested": [{"a": [1.0, "inf"]}, [0.5, None]],
                   "7": "key"}
  assert os.listdir(tmp_path) == ["summary.json"]
