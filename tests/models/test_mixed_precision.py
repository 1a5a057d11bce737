"""--mixed_precision (issue 18): float32 (the default) is today's run
exactly; bfloat16 computes the layers in bfloat16 with float32 variables and
logits, is recorded as a setting that changes results, and is refused for
the models not measured faster with it in the TFF worker."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from conftest import SMALL_RUN, TRAIN_MAIN, metric_rows, run_module
from federated_vision.experiment import config as config_lib
from federated_vision.experiment import run_record
from federated_vision import models as models_lib
from federated_vision import tasks
from federated_vision.errors import ConfigError
from federated_vision.models import cifar as cifar_models
from federated_vision.models import precision
from federated_vision.tasks import models as model_registry

# A tiny CIFAR-shaped run: 3 clients x 20 synthetic images, 2 rounds, with
# the centralized baseline (its Keras path sees the same precision).
TINY = ["--dataset=synthetic_cifar10", "--algorithm=fedavg", "--num_clients=3",
        "--examples_per_client=20", "--clients_per_round=3",
        "--client_batch_size=10", "--total_rounds=2", "--rounds_per_eval=1",
        "--centralized_epochs=1", "--seed=1"]


def _cifar_fn(mixed_precision):
  config = model_registry.ModelConfig(mixed_precision=mixed_precision)
  return tasks.get_task("synthetic_cifar10").build_keras_model_fn(
      config, 10, cifar_models.CIFAR_INPUT_SHAPE, seed=0)


def _images(n=8):
  return np.random.default_rng(0).random((n, 24, 24, 3), dtype=np.float32)


# --- The models. -------------------------------------------------------------

def test_float32_model_is_the_model_built_without_the_option():
  default = cifar_models.create_cifar_cnn(seed=0)
  explicit = _cifar_fn("float32")()
  assert [l.dtype_policy.name for l in explicit.layers] == ["float32"] * 8
  for a, b in zip(default.get_weights(), explicit.get_weights()):
    np.testing.assert_array_equal(a, b)
  np.testing.assert_array_equal(default(_images()).numpy(),
                                explicit(_images()).numpy())


def test_bfloat16_layers_compute_in_bfloat16_variables_and_logits_float32():
  model = _cifar_fn("bfloat16")()
  # Keras' global policy is untouched: the policy is given to each layer.
  assert tf.keras.mixed_precision.global_policy().name == "float32"
  hidden, last = model.layers[:-1], model.layers[-1]
  assert {l.compute_dtype for l in hidden} == {"bfloat16"}
  assert last.compute_dtype == "float32"
  assert {v.dtype for v in model.variables} == {tf.float32}
  logits = model(_images())
  assert logits.dtype == tf.float32
  # The conv output is bfloat16 (8-bit mantissa) ...
  conv = tf.keras.Model(model.inputs, model.layers[0].output)
  assert conv(_images()).dtype == tf.bfloat16
  # ... so the logits differ from float32's, by bfloat16 rounding only.
  reference = _cifar_fn("float32")()(_images()).numpy()
  diff = np.abs(logits.numpy() - reference)
  assert diff.max() > 0
  assert diff.max() < 0.05 * np.abs(reference).max() + 1e-3


def test_tff_weights_stay_float32():
  fn = _cifar_fn("bfloat16")
  spec = {"x": tf.TensorSpec([None, 24, 24, 3], tf.float32),
          "y": tf.TensorSpec([None], tf.int32)}
  model = models_lib.build_tff_model_fn(fn, spec)()
  assert {v.dtype for v in model.trainable_variables} == {tf.float32}
  assert tf.keras.mixed_precision.global_policy().name == "float32"


def test_layer_dtypes():
  assert set(precision.KERAS_POLICIES) == set(model_registry.MIXED_PRECISIONS)
  assert precision.layer_dtypes("float32") == (None, None)
  hidden, output = precision.layer_dtypes("bfloat16")
  assert (hidden.compute_dtype, hidden.variable_dtype) == ("bfloat16",
                                                           "float32")
  assert output == "float32"
  with pytest.raises(ValueError, match="mixed_precision must be one of "
                     "float32, bfloat16, got 'float16'"):
    precision.layer_dtypes("float16")


# --- Validation. -------------------------------------------------------------

def test_refused_models_name_the_flag_the_model_and_the_measurement():
  for name, ratio in [(n, model_registry.get_model(n).bfloat16_cpu_ratio)
                      for n in model_registry.model_names()]:
    config = model_registry.ModelConfig(model=name, mixed_precision="bfloat16")
    if name in model_registry.bfloat16_model_names():
      assert ratio < model_registry.BFLOAT16_MAX_CPU_RATIO
      model_registry.check_mixed_precision(config, name)
      continue
    with pytest.raises(ConfigError) as e:
      model_registry.check_mixed_precision(config, name)
    assert e.value.field == "mixed_precision"
    expected = (f"not measured for {name} in the TFF worker" if ratio is None
                else f"no speed-up for {name} in the TFF worker (measured "
                f"{ratio:.2f}x the float32 CPU time), refused")
    assert str(e.value).startswith("--mixed_precision=bfloat16: " + expected)
  assert "cifar_cnn" in model_registry.bfloat16_model_names()
  assert "mobilenet_v2_gn" not in model_registry.bfloat16_model_names()


def test_config_accepts_float32_everywhere_and_refuses_other_values():
  for dataset in ("digits", "synthetic_inaturalist", "synthetic_cifar10"):
    given = config_lib.from_values({"dataset": dataset,
                                    "mixed_precision": "float32"},
                                   ["dataset", "mixed_precision"])
    assert given == config_lib.from_values({"dataset": dataset})
  with pytest.raises(ConfigError, match="^--mixed_precision=float16: must be "
                     "one of float32, bfloat16$"):
    config_lib.from_values({"mixed_precision": "float16"})
  with pytest.raises(ConfigError, match="^--mixed_precision=bfloat16: no "
                     "speed-up for mobilenet_v2_gn"):
    config_lib.from_values({"dataset": "synthetic_inaturalist",
                            "mixed_precision": "bfloat16"})
  # Never built and ignored, even past validation.
  with pytest.raises(ConfigError, match="no speed-up for mobilenet_v2_gn"):
    model_registry.build_keras_model_fn(
        model_registry.ModelConfig(mixed_precision="bfloat16"),
        {"model": "mobilenet_v2_gn", "bottleneck_dim": None}, 2,
        (32, 32, 3), 0)


def test_a_record_from_before_the_flag_resumes_as_float32_only(tmp_path):
  config = config_lib.from_values({"dataset": "synthetic_cifar10"})
  settings = run_record.recorded_settings(config)
  assert settings["mixed_precision"] == "float32"
  old = {k: v for k, v in settings.items() if k != "mixed_precision"}
  (tmp_path / run_record.RECORD_FILE).write_text(json.dumps(
      {"settings": old, "partition_fingerprint": "f"}))
  assert run_record.check(str(tmp_path), config) is not None
  bf16 = config_lib.replace_fields(config, {"mixed_precision": "bfloat16"})
  with pytest.raises(ConfigError, match="holds another experiment: "
                     "--mixed_precision=bfloat16 \\(recorded float32\\)"):
    run_record.check(str(tmp_path), bf16)


def test_refused_model_is_exit_2_and_one_line(tmp_path):
  proc = run_module(TRAIN_MAIN, f"--root_output_dir={tmp_path}",
                    "--experiment_name=x", "--dataset=synthetic_inaturalist",
                    "--mixed_precision=bfloat16", timeout=120)
  assert proc.returncode == 2, proc.stderr[-2000:]
  errors = [l for l in proc.stderr.splitlines() if "error:" in l]
  assert len(errors) == 1, proc.stderr
  ratio = model_registry.get_model("mobilenet_v2_gn").bfloat16_cpu_ratio
  assert errors[0].endswith(
      "error: --mixed_precision=bfloat16: no speed-up for mobilenet_v2_gn in "
      f"the TFF worker (measured {ratio:.2f}x the float32 CPU time), "
      "refused"), errors[0]
  assert "Traceback" not in proc.stderr
  assert not (tmp_path / "x").exists()


# --- Runs. -------------------------------------------------------------------

@pytest.fixture(scope="module", name="runs")
def _runs(tmp_path_factory, train_in_process, reference_run):
  """{name: run directory} of the tiny run without the flag and with
  --mixed_precision=bfloat16; of the session's reference run (digits,
  no flag) and its first 2 rounds with --mixed_precision=float32 (in this
  process: conftest's train_in_process; the tests read results only)."""
  root = tmp_path_factory.mktemp("mixed_precision")
  out = {"reference": reference_run}
  for name, args in [
      ("default", TINY), ("bfloat16", TINY + ["--mixed_precision=bfloat16"]),
      ("float32", SMALL_RUN + ["--total_rounds=2", "--centralized_epochs=0",
                               "--mixed_precision=float32"])]:
    proc = train_in_process(f"--root_output_dir={root}",
                            f"--experiment_name={name}", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out[name] = root / name
  return out


def _json(path):
  return json.loads(path.read_text())


def test_float32_run_equals_the_run_without_the_flag(runs):
  float32 = metric_rows(runs["float32"] / "fedavg" / "metrics.csv")
  assert [r["round"] for r in float32] == ["1", "2"]
  assert float32 == metric_rows(
      runs["reference"] / "fedavg" / "metrics.csv")[:2]
  for name in ("reference", "default", "float32"):
    assert _json(runs[name] / "experiment.json")["settings"][
        "mixed_precision"] == "float32"
    assert _json(runs[name] / "hparams.json")["mixed_precision"] == "float32"


def test_bfloat16_run_is_recorded_finite_and_differs(runs):
  record = _json(runs["bfloat16"] / "experiment.json")["settings"]
  hparams = _json(runs["bfloat16"] / "hparams.json")
  assert record["mixed_precision"] == "bfloat16"
  assert hparams["mixed_precision"] == "bfloat16"
  assert hparams["config"]["model"]["mixed_precision"] == "bfloat16"
  bf16 = metric_rows(runs["bfloat16"] / "fedavg" / "metrics.csv")
  f32 = metric_rows(runs["default"] / "fedavg" / "metrics.csv")
  assert [r["round"] for r in bf16] == [r["round"] for r in f32] == ["1", "2"]
  losses = [(float(a["train_loss"]), float(b["train_loss"]))
            for a, b in zip(f32, bf16)]
  assert all(np.isfinite(b) for _, b in losses)
  assert any(a != b for a, b in losses)
  # bfloat16 rounding, not another model: the same loss to within 5%.
  assert all(abs(a - b) < 0.05 * a for a, b in losses), losses
  # The centralized baseline (Keras fit + evaluate) ran in bfloat16 too.
  central = [_json(runs[n] / "summary.json")["centralized"]
             for n in ("default", "bfloat16")]
  assert all(c["status"] == central[0]["status"] for c in central), central
  assert np.isfinite(central[1]["loss"])
  assert central[1]["loss"] != central[0]["loss"]


def test_resuming_a_float32_directory_with_bfloat16_is_refused(runs):
  root, name = runs["default"].parent, runs["default"].name
  proc = run_module(TRAIN_MAIN, f"--root_output_dir={root}",
                    f"--experiment_name={name}", *TINY,
                    "--mixed_precision=bfloat16", "--total_rounds=3",
                    timeout=120)
  assert proc.returncode == 2, proc.stderr[-2000:]
  errors = [l for l in proc.stderr.splitlines() if "error:" in l]
  assert len(errors) == 1, proc.stderr
  assert "holds another experiment: --mixed_precision=bfloat16 (recorded " \
      "float32)" in errors[0], errors[0]
  assert "Traceback" not in proc.stderr
  # Nothing was touched: still the 2 rounds of the float32 run.
  assert len(metric_rows(runs["default"] / "fedavg" / "metrics.csv")) == 2


def test_a_bfloat16_run_extends_from_its_float32_checkpoint(
    runs, train_in_process):
  """Weights (and so checkpoints) are float32 in a bfloat16 run: extending
  it resumes from round 2's checkpoint and runs only round 3."""
  # A copy: the other tests read the 2-round run.
  copy = runs["bfloat16"].parent / "bfloat16_extended"
  shutil.copytree(runs["bfloat16"], copy)
  metrics = copy / "fedavg" / "metrics.csv"
  before = metric_rows(metrics)
  proc = train_in_process(f"--root_output_dir={copy.parent}",
                          f"--experiment_name={copy.name}", *TINY,
                          "--mixed_precision=bfloat16", "--total_rounds=3")
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "extending" in proc.stdout
  after = metric_rows(metrics)
  assert after[:2] == before
  assert [r["round"] for r in after] == ["1", "2", "3"]
  assert np.isfinite(float(after[2]["train_loss"]))
