"""--mixing through train_main (Augenstein et al.): config, payload column,
per-group metrics, resume, digits and the CelebA SQLite fixture."""

import csv
import functools
import json

import numpy as np
import pytest

from conftest import run_module
import in_process
from federated_vision.experiment import config as config_lib
from federated_vision.errors import ConfigError

BINARY = "experiments.train_main"
FIVE = "none,parallel,example_transfer,gradient_transfer,oracle"
NAMES = [f"fedavg+{s}" for s in FIVE.split(",")]


def _rows(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


# --- configuration (no TensorFlow) --------------------------------------------

@pytest.mark.parametrize("values, given, must_mention", [
    ({"mixing": ["gradient_transfer"], "fedir": True, "algorithm": ["fedavg"]},
     (), ["--mixing=gradient_transfer", "--fedir"]),
    ({"mixing": ["example_transfer"], "fedvc": True, "algorithm": ["fedavg"]},
     (), ["--mixing=example_transfer", "--fedvc"]),
    ({"mixing": ["parallel"], "algorithm": ["fedsgd"]}, (),
     ["--mixing=parallel", "--algorithm=fedsgd"]),
    ({"mixing": ["gradient_transfer"], "fedprox": True,
      "algorithm": ["fedavg"]}, (), ["--mixing=gradient_transfer",
                                     "--fedprox"]),
    ({"mixing": ["sideways"]}, (), ["mixing strategy must be one of"]),
    ({"mixing": ["none", "none"]}, (), ["--mixing", "repeated"]),
    ({"merge_weight": 0.3}, ("merge_weight",),
     ["--merge_weight", "only used with --mixing"]),
    ({"missing_classes": "8"}, ("missing_classes",),
     ["--missing_classes", "only used with --mixing"]),
    ({"mixing": ["parallel"], "merge_weight": 1.5}, (), ["--merge_weight"]),
    ({"mixing": ["parallel"], "central_steps": 0}, (), ["--central_steps"]),
    ({"mixing": ["none"], "dataset": "synthetic_mnist"}, (),
     ["--mixing", "no mixing scenario", "celeba", "digits"]),
    ({"dataset": "celeba"}, (), ["--celeba_cache_dir", "required"]),
])
def test_refused_settings_name_the_flags(values, given, must_mention):
  with pytest.raises(ConfigError) as e:
    config_lib.from_values(values, given)
  assert "\n" not in str(e.value)
  for m in must_mention:
    assert m in str(e.value)


def test_allowed_combinations_validate():
  config = config_lib.from_values(
      {"mixing": ["none", "parallel", "example_transfer", "oracle"],
       "algorithm": ["fedavg", "fedavgm"], "fedir": True,
       "missing_classes": "7,9"})
  assert config.mixing.missing_classes == "7,9"
  with pytest.raises(ConfigError, match="--fedir"):  # fedir x gradient.
    config_lib.from_values({"mixing": FIVE.split(","), "fedir": True})
  config = config_lib.from_values(
      {"mixing": ["parallel", "oracle", "gradient_transfer"], "fedvc": True})
  assert config.to_dict()["mixing"]["mixing"] == [
      "parallel", "oracle", "gradient_transfer"]


# --- digits through the binary --------------------------------------------------

DIGITS = ["--dataset=digits", "--missing_classes=8,9", f"--mixing={FIVE}",
          "--algorithm=fedavg", "--num_clients=10", "--alpha=1.0",
          "--clients_per_round=5", "--client_batch_size=20",
          "--rounds_per_eval=1", "--rounds_per_checkpoint=1",
          "--centralized_epochs=0", "--central_examples_per_client=3",
          "--central_steps=2", "--central_batch_size=8", "--seed=1"]


def _digits(mixing):
  """DIGITS with --mixing=`mixing` (none of parallel's and gradient
  transfer's settings: refused without them)."""
  only = ("--mixing=", "--central_steps=", "--central_batch_size=")
  return [a for a in DIGITS if not a.startswith(only)] + [
      f"--mixing={mixing}"]


# A test may train the module's fixture (its own timeout 900 s) and its run.
pytestmark = pytest.mark.timeout(2400)


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory):
  """The 2-round digits run and what it printed (in this process: its tests
  read files and stdout, not the process boundary)."""
  root = tmp_path_factory.mktemp("mixing_digits")
  stdout = in_process.run_train_main(*DIGITS, f"--root_output_dir={root}",
                                     "--experiment_name=mix",
                                     "--total_rounds=2")
  return root / "mix", stdout


def _digits_payload():
  """The formula of the issue, from the raw arrays and the Keras model."""
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  from federated_vision.models import digits as digits_models  # pylint: disable=g-import-not-at-top
  x_tr, y_tr, _, _ = digits.load_arrays()
  per_example = x_tr[0].nbytes + np.asarray(y_tr[0]).nbytes
  model = digits_models.create_digits_cnn(10, seed=1)
  model_bytes = sum(w.numpy().nbytes for w in model.trainable_weights)
  return {"none": 0, "parallel": 0, "oracle": 0,
          "example_transfer": 3 * 5 * per_example,  # M x clients x bytes.
          "gradient_transfer": model_bytes}


def test_digits_five_strategies_payload_and_groups(digits_run):
  out, stdout = digits_run
  summary = json.loads((out / "summary.json").read_text())
  assert sorted(summary["methods"]) == sorted(NAMES)
  payload = _digits_payload()
  assert payload["example_transfer"] > 0 and payload["gradient_transfer"] > 0
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  y_test = digits.load_arrays()[3]
  counts = np.bincount(y_test, minlength=10)
  for name, m in summary["methods"].items():
    strategy = name.split("+")[1]
    rows = _rows(out / name / "metrics.csv")
    assert [r["round"] for r in rows] == ["1", "2"]
    assert [int(r["extra_broadcast_bytes"]) for r in rows] == \
        [payload[strategy]] * 2, name
    assert m["extra_broadcast_bytes_per_round"] == payload[strategy]
    assert m["settings"]["mixing"] == strategy
    last = rows[-1]
    assert m["missing_class_accuracy"] == pytest.approx(
        float(last["test_accuracy_missing"]))
    assert m["present_class_accuracy"] == pytest.approx(
        float(last["test_accuracy_present"]))
    per_class = np.array(m["accuracy_per_class"])
    # Overall and per-group accuracy are the per-class ones pooled.
    assert m["final_accuracy"] == pytest.approx(
        (per_class * counts).sum() / counts.sum(), abs=1e-6)
    assert m["missing_class_accuracy"] == pytest.approx(
        (per_class[8:] * counts[8:]).sum() / counts[8:].sum(), abs=1e-6)
  # The strategies trained on different data / processes.
  finals = {n: tuple(m["accuracy_per_class"])
            for n, m in summary["methods"].items()}
  assert len(set(finals.values())) > 1
  for name in NAMES:
    assert name in stdout
  assert "missing_class_accuracy" in stdout
  assert "extra_bytes/round" in stdout
  hparams = json.loads((out / "hparams.json").read_text())
  assert hparams["mixing"] == FIVE.split(",")
  assert hparams["data"]["missing_classes"] == [8, 9]
  assert hparams["config"]["mixing"]["central_examples_per_client"] == 3


# The mixing strategies client groups cover (`methods.groups`): none (FedAvg
# on the clients' data), oracle (on the data with the missing classes
# restored), example transfer (on the clients' data shuffled with
# centralized examples, Augenstein et al. Algorithm 3).
GROUPED = ("none", "oracle", "example_transfer")


def test_grouped_strategies_equal_ungrouped(digits_run, tmp_path):
  """The module's run groups the covered strategies by default ('auto' =
  min(25, ceil(5 / 4)) = 2 clients a slot) and only those; a run of them
  with --client_group_size=1 gives their metrics (1e-5), the mixing
  columns and the usual ones, round by round."""
  out, _ = digits_run
  summary = json.loads((out / "summary.json").read_text())
  for name, m in summary["methods"].items():
    size = 2 if name.split("+")[1] in GROUPED else 1
    assert m["settings"]["client_group_size"] == size, name
  # In this process: the test reads files only.
  in_process.run_train_main(*_digits(",".join(GROUPED)),
                            "--client_group_size=1", "--total_rounds=2",
                            f"--root_output_dir={tmp_path}",
                            "--experiment_name=ungrouped")
  strip = lambda r: {k: v for k, v in r.items() if k != "round_seconds"}
  for strategy in GROUPED:
    method = f"fedavg+{strategy}"
    ungrouped = _rows(tmp_path / "ungrouped" / method / "metrics.csv")
    grouped = _rows(out / method / "metrics.csv")
    assert len(ungrouped) == len(grouped) == 2
    compared = 0
    for a, b in zip(map(strip, ungrouped), map(strip, grouped)):
      assert a["round"] == b["round"] and a["clients"] == b["clients"]
      for key, value in a.items():
        if key in ("round", "clients") or value in ("", None):
          continue
        np.testing.assert_allclose(float(b[key]), float(value), atol=1e-5,
                                   err_msg=f"{strategy}: {key}")
        compared += 1
    assert compared >= 2 * 4  # Losses, accuracies and the per-group columns.


def test_digits_mixing_resumes(tmp_path):
  """A mixing run extended by a round resumes from its checkpoint (its own
  experiment of one strategy: the module's run is read by other tests)."""
  args = _digits("example_transfer") + [f"--root_output_dir={tmp_path}",
                                        "--experiment_name=mix"]
  in_process.run_train_main(*args, "--total_rounds=2")
  out = tmp_path / "mix"
  before = _rows(out / "fedavg+example_transfer" / "metrics.csv")
  # The same experiment, extended by one round (another --mixing list would
  # be another experiment: refused in this directory).
  in_process.run_train_main(*args, "--total_rounds=3")
  summary = json.loads((out / "summary.json").read_text())
  m = summary["methods"]["fedavg+example_transfer"]
  assert m["resumed_from_round"] == 2 and m["rounds"] == 3
  rows = _rows(out / "fedavg+example_transfer" / "metrics.csv")
  strip = lambda r: {k: v for k, v in r.items() if k != "round_seconds"}
  assert [strip(r) for r in rows[:2]] == [strip(r) for r in before]
  assert rows[2]["extra_broadcast_bytes"] == before[0]["extra_broadcast_bytes"]


@pytest.mark.parametrize("flag_args, must_mention, real_process", [
    (["--mixing=gradient_transfer", "--fedir"],
     ["--mixing=gradient_transfer", "--fedir"], True),
    (["--mixing=example_transfer", "--fedvc"],
     ["--mixing=example_transfer", "--fedvc"], True),
    # Refused with the data (TensorFlow imported): in this process
    # (in_process.run: main's exit status and stderr; the two above check
    # a real process's).
    (["--mixing=none", "--missing_classes=3,11"], ["--missing_classes"],
     False),
])
def test_bad_mixing_flags_exit_2_with_one_line(tmp_path, flag_args,
                                               must_mention, real_process):
  run = (functools.partial(run_module, timeout=300) if real_process
         else in_process.run)
  proc = run(BINARY, "--algorithm=fedavg", "--total_rounds=1",
             f"--root_output_dir={tmp_path}", *flag_args)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr
  lines = [l for l in proc.stderr.splitlines() if all(m in l for m in
                                                       must_mention)]
  assert len(lines) == 1, proc.stderr


# --- CelebA (TFF's SQLite schema) through the binary ---------------------------

def test_celeba_fixture_two_rounds_of_each_strategy(tmp_path):
  from celeba_fixture import write_celeba_sqlite  # pylint: disable=g-import-not-at-top
  cache = tmp_path / "celeba_cache"  # Not the experiment directory.
  cache.mkdir()
  write_celeba_sqlite(str(cache))
  in_process.run_train_main(  # In this process: the test reads files.
      "--dataset=celeba", f"--celeba_cache_dir={cache}",
      f"--mixing={FIVE}", "--algorithm=fedavg", "--clients_per_round=2",
      "--client_batch_size=2", "--central_batch_size=2",
      "--central_examples_per_client=2", "--total_rounds=2",
      "--rounds_per_eval=1", "--centralized_epochs=0",
      f"--root_output_dir={tmp_path}", "--experiment_name=celeba")
  out = tmp_path / "celeba"
  hparams = json.loads((out / "hparams.json").read_text())
  assert hparams["resolved"]["partition"] == "celebrity"  # Not --partition's.
  data = hparams["data"]
  # Federated = smiling images of c0 (3), c1 (2), c3 (1); centralized = the 5
  # unsmiling train images; test = both labels of t0, t1.
  assert (data["federated_clients"], data["federated_examples"],
          data["centralized_examples"], data["test_examples"],
          data["test_smiling"]) == (3, 6, 5, 6, 3)
  report = json.loads(next(out.glob("partition*.json")).read_text())
  counts = np.array([c["class_counts"] for c in report["clients"]])
  assert counts[:, 0].sum() == 0 and counts[:, 1].sum() == 6
  summary = json.loads((out / "summary.json").read_text())
  assert sorted(summary["methods"]) == sorted(NAMES)
  image_bytes = 84 * 84 * 3 * 1 + 8  # uint8 image + int64 label.
  for name, m in summary["methods"].items():
    assert m["rounds"] == 2
    # Three smiling and three unsmiling test images: overall = their mean.
    assert m["final_accuracy"] == pytest.approx(
        (m["accuracy_smiling"] + m["accuracy_unsmiling"]) / 2, abs=1e-6)
    expected = {"example_transfer": 2 * 2 * image_bytes,
                "gradient_transfer": 30242 * 4}.get(name.split("+")[1], 0)
    assert m["extra_broadcast_bytes_per_round"] == expected, name
    rows = _rows(out / name / "metrics.csv")
    assert [int(r["extra_broadcast_bytes"]) for r in rows] == [expected] * 2
  # Every strategy trained a different model from no mixing's.
  none = _rows(out / "fedavg+none" / "metrics.csv")[-1]["test_loss"]
  for name in NAMES[1:]:
    assert _rows(out / name / "metrics.csv")[-1]["test_loss"] != none, name


def test_benchmark_checks_and_overrides():
  from benchmarks import mixing_digits  # pylint: disable=g-import-not-at-top
  m = lambda missing, overall: {"missing_class_accuracy": missing,
                                "final_accuracy": overall}
  results = mixing_digits.checks({
      "fedavg+none": m(0.05, 0.78), "fedavg+parallel": m(0.5, 0.88),
      "fedavg+example_transfer": m(0.49, 0.95),
      "fedavg+gradient_transfer": m(0.9, 0.86), "fedavg+oracle": m(0.8, 0.92)})
  assert [(s, ok) for s, _, ok in results] == [
      ("none", True), ("parallel", True), ("parallel", True),
      ("example_transfer", False), ("example_transfer", True),
      ("gradient_transfer", True), ("gradient_transfer", False)]
  values = mixing_digits.parse_overrides(["--seed=3", "--mixing=none,oracle",
                                          "--merge_weight=0.5"])
  assert (values["seed"], values["mixing"], values["merge_weight"]) == (
      3, ["none", "oracle"], 0.5)
  config = config_lib.from_values(mixing_digits.SETTINGS)
  assert config.mixing.mixing == tuple(mixing_digits.STRATEGIES)
  assert config.training.total_rounds == 100


def test_loop_config_extra_columns():
  from federated_vision import training_loop as tl  # pylint: disable=g-import-not-at-top
  config = tl.LoopConfig(1, "out", round_columns=(("extra_broadcast_bytes", 7),),
                         eval_columns=("accuracy_missing",)).validate()
  from federated_vision.training import metrics_csv  # pylint: disable=g-import-not-at-top
  assert config.columns == metrics_csv.METRIC_COLUMNS + (
      "extra_broadcast_bytes", "test_accuracy_missing", "round_seconds")
  assert tl.LoopConfig(1, "out").columns == metrics_csv.CSV_COLUMNS
  with pytest.raises(ValueError, match="repeat"):  # test_accuracy exists.
    tl.LoopConfig(1, "out", eval_columns=("accuracy",)).validate()


def test_celeba_task_models():
  base = {"dataset": "celeba", "celeba_cache_dir": "somewhere"}
  resolved = config_lib.resolve(config_lib.from_values(base))
  # Clients are celebrities: the recorded partition says so, and
  # --partition (a Dirichlet/IID/shards choice) is refused.
  assert (resolved["model"], resolved["partition"]) == ("celeba_cnn",
                                                        "celebrity")
  with pytest.raises(ConfigError, match="--partition: not used by "
                     "--dataset=celeba"):
    config_lib.from_values(dict(base, partition="iid"))
  assert config_lib.resolve(config_lib.from_values(
      dict(base, model="mobilenet_v2_gn")))["model"] == "mobilenet_v2_gn"
  with pytest.raises(ConfigError, match="celeba_cnn, mobilenet_v2_gn"):
    config_lib.from_values(dict(base, model="digits_cnn"))
  with pytest.raises(ConfigError, match="--celeba_cache_dir: not used by "
                     "--dataset=digits"):
    config_lib.from_values({"celeba_cache_dir": "somewhere"})
