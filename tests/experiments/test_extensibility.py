"""A new data set, model and algorithm touch no existing module (issue 8).

Everything registered here lives in this file alone: a tiny 4x4 task, a
one-layer model for it and an algorithm ("toy_avg": FedAvg with a halved
client learning rate) plus a client-work variant-free run of train_main for
2 rounds, in-process through absl flag parsing.
"""

import json
import sys

import numpy as np
import pytest
import tensorflow as tf

from experiments import cli
from federated_vision import methods
from federated_vision import tasks
from federated_vision.errors import ConfigError
from run_checks import check_method_run

NUM_CLASSES = 3


def _toy_data(task, data, resolved, context):
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  from federated_vision.data import partition  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(context.seed)
  k, n = resolved["num_clients"], resolved["examples_per_client"]
  y = rng.integers(0, NUM_CLASSES, k * n + 30)
  x = rng.normal(size=(len(y), 4, 4, 1)).astype(np.float32)
  x[:, 0, 0, 0] += 2 * y  # Learnable.
  part = partition.dirichlet_partition(y[:k * n], k, n, data.alpha,
                                       seed=context.seed)
  return digits.from_arrays(task.name, x[:k * n], y[:k * n], x[k * n:],
                            y[k * n:], part, NUM_CLASSES,
                            info={"partition": "dirichlet",
                                  "alpha": data.alpha})


def _toy_model(config, resolved, num_classes, input_shape, seed):
  del config, resolved
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=input_shape),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(num_classes, kernel_initializer=
                            tf.keras.initializers.GlorotUniform(seed=seed))])


def _toy_avg(config, inputs, parts):
  import tensorflow_federated as tff  # pylint: disable=g-import-not-at-top
  from federated_vision import algorithms  # pylint: disable=g-import-not-at-top
  lr = config.client_learning_rate / 2
  process = algorithms.build_fedavg(
      inputs.model_fn, tff.learning.optimizers.build_sgdm(lr),
      parts.server_optimizer, client_work=parts.client_work)
  return process, dict(client_optimizer="sgd", client_learning_rate=lr,
                       toy=True)


tasks.register_model(tasks.ModelSpec("toy_dense", ("toy4x4",), _toy_model))
tasks.register_task(tasks.Task(
    "toy4x4", "toy4x4", "toy_dense", _toy_data,
    reads=frozenset({"num_clients", "examples_per_client", "alpha",
                     "partition"}),
    num_clients=5, examples_per_client=12, partitions=("dirichlet",)))
methods.register(methods.Algorithm(
    name="toy_avg", build=_toy_avg, citation="ours: FedAvg with a halved "
    "client learning rate (a test algorithm)",
    reads=("client_epochs", "client_batch_size", "client_learning_rate")))


def test_train_main_runs_a_task_and_method_registered_here(parse, tmp_path):
  from experiments import train_main  # pylint: disable=g-import-not-at-top
  parse("--dataset=toy4x4", "--algorithm=toy_avg,fedavg", "--fedprox",
        "--total_rounds=2", "--rounds_per_eval=1", "--clients_per_round=3",
        "--client_batch_size=4", "--client_learning_rate=0.2",
        "--centralized_epochs=0", "--seed=2", f"--root_output_dir={tmp_path}",
        "--experiment_name=toy")
  train_main.main(["train_main"])
  out = tmp_path / "toy"
  summary = json.loads((out / "summary.json").read_text())
  assert sorted(summary["methods"]) == ["fedavg", "fedavg+fedprox", "toy_avg",
                                        "toy_avg+fedprox"]
  for name, m in summary["methods"].items():
    assert m["rounds"] == 2 and 0 <= m["final_accuracy"] <= 1
    check_method_run(out / name, m, num_test=30)  # _toy_data's 30 held out.
    assert (out / name / "metrics.csv").is_file()
  toy = summary["methods"]["toy_avg+fedprox"]["settings"]
  assert toy["toy"] is True and toy["client_learning_rate"] == 0.1
  assert (toy["client_work"], toy["fedprox_mu"], toy["B"], toy["E"]) == (
      "fedprox", 0.01, 4, 1)
  assert summary["methods"]["fedavg"]["settings"]["client_learning_rate"] == 0.2
  assert summary["resolved"] == {"model": "toy_dense", "num_clients": 5,
                                 "examples_per_client": 12,
                                 "partition": "dirichlet",
                                 "clients_per_round": 3}
  assert summary["config"]["data"]["dataset"] == "toy4x4"
  hparams = json.loads((out / "hparams.json").read_text())
  assert hparams["partition_stats"]["num_examples"] == 60
  assert (out / "partition_alpha_0.50_class_counts.json").is_file()


def test_a_registered_name_cannot_be_taken_twice():
  with pytest.raises(ValueError, match="already registered"):
    tasks.register_task(tasks.get_task("toy4x4"))
  with pytest.raises(ValueError, match="already registered"):
    methods.register(methods.Algorithm(name="fedavg", build=_toy_avg,
                                       citation="ours"))


def test_extra_modules_import_user_registrations(tmp_path, monkeypatch):
  (tmp_path / "user_tasks.py").write_text(
      "from federated_vision import tasks\n"
      "import test_extensibility as t\n"
      "tasks.register_task(tasks.Task('toy4x4_b', 'toy4x4', 'toy_dense', "
      "t._toy_data, num_clients=2, examples_per_client=3))\n")
  (tmp_path / "broken_tasks.py").write_text("raise RuntimeError('boom')\n")
  monkeypatch.syspath_prepend(str(tmp_path))
  cli.import_extra_modules(["user_tasks"])
  assert tasks.get_task("toy4x4_b").model_names == ("toy_dense",)
  with pytest.raises(ConfigError, match="--extra_modules=broken_tasks: cannot "
                     "import broken_tasks \\(RuntimeError: boom\\)"):
    cli.import_extra_modules(["broken_tasks"])
  assert "broken_tasks" not in sys.modules


def test_extra_modules_take_a_file_path(tmp_path):
  # A module given by its path (not on sys.path): imported once as
  # '<stem>', its directory appended to sys.path for its neighbours.
  folder = tmp_path / "mine"
  folder.mkdir()
  (folder / "helper_by_path.py").write_text("NUM_CLIENTS = 3\n")
  (folder / "tasks_by_path.py").write_text(
      "from federated_vision import tasks\n"
      "import helper_by_path\n"
      "import test_extensibility as t\n"
      "tasks.register_task(tasks.Task('toy4x4_path', 'toy4x4', 'toy_dense', "
      "t._toy_data, num_clients=helper_by_path.NUM_CLIENTS, "
      "examples_per_client=3))\n")
  path = str(folder / "tasks_by_path.py")
  try:
    cli.import_extra_modules([path])
    cli.import_extra_modules([path])  # Once: not registered twice.
    assert tasks.get_task("toy4x4_path").num_clients == 3
    assert sys.modules["tasks_by_path"].__file__ == path
    (tmp_path / "tasks_by_path.py").write_text("")  # Another of that name.
    with pytest.raises(ConfigError, match="cannot import .*tasks_by_path.py "
                       r"\(ImportError: a module named tasks_by_path is "
                       "already imported from"):
      cli.import_extra_modules([str(tmp_path / "tasks_by_path.py")])
    with pytest.raises(ConfigError, match=r"^--extra_modules=\./nope\.py: "
                       r"cannot import \./nope\.py \(FileNotFoundError: no "
                       "such file .*nope.py\\)$"):
      cli.import_extra_modules(["./nope.py"])
    assert "nope" not in sys.modules
  finally:
    sys.path.remove(str(folder))
    for name in ("tasks_by_path", "helper_by_path"):
      sys.modules.pop(name, None)
