"""ExperimentConfig: flags <-> fields, JSON, replace, expansion, layering."""

import ast
import dataclasses
import json
import math
import os

import pytest

from conftest import REPO
from federated_vision.experiment import config as config_lib
from experiments import flags_lib
from federated_vision.experiment import sweeps
from federated_vision.errors import ConfigError


def test_config_fields_are_exactly_the_defined_flags_with_equal_defaults(parse):
  f = parse()
  assert flags_lib.config_flag_names(f) == sorted(config_lib.field_sections())
  assert config_lib.from_flags(f) == config_lib.ExperimentConfig()


def test_from_flags_reads_every_section_and_lists_become_tuples(parse):
  c = config_lib.from_flags(parse(
      "--dataset=synthetic_mnist", "--partition=iid", "--model=mnist_2nn",
      "--algorithm=fedsgd,fedavgm", "--fedvc", "--client_fraction=0.3",
      "--total_rounds=7", "--experiment_name=x", "--num_clients=20"))
  assert (c.data.dataset, c.data.partition, c.data.num_clients) == (
      "synthetic_mnist", "iid", 20)
  assert c.model.model == "mnist_2nn"
  assert c.methods.algorithm == ("fedsgd", "fedavgm") and c.methods.fedvc
  assert (c.training.total_rounds, c.training.client_fraction) == (7, 0.3)
  assert c.output.experiment_name == "x"
  assert config_lib.resolve(c)["clients_per_round"] == 6  # max(0.3 x 20, 1).
  hash(c)  # Frozen and hashable: a sweep point is a value.
  with pytest.raises(dataclasses.FrozenInstanceError):
    c.training.seed = 3  # pytype: disable=not-writable


def test_to_dict_is_strict_json():
  c = config_lib.replace_fields(config_lib.ExperimentConfig(),
                                {"alpha": math.inf, "tar_shards": ["a", "b"]})
  d = c.to_dict()
  assert d["data"]["alpha"] == "inf" and d["data"]["tar_shards"] == ["a", "b"]
  assert set(d) == set(config_lib.SECTIONS)
  assert json.loads(json.dumps(d, allow_nan=False)) == d
  flat = config_lib.flat(c)
  assert flat["alpha"] == "inf" and flat["total_rounds"] == 60
  assert len(flat) == len(config_lib.field_sections())
  bad = config_lib.replace_fields(c, {"alpha": math.nan})
  with pytest.raises(ValueError, match="data.alpha is NaN"):
    bad.to_dict()


def test_replace_fields_routes_by_flag_name():
  c = config_lib.replace_fields(config_lib.ExperimentConfig(), {
      "alpha": 0.1, "model": "cifar_cnn", "algorithm": ["fedavg"],
      "seed": 4, "root_output_dir": "/r"})
  assert c.data.alpha == 0.1 and c.model.model == "cifar_cnn"
  assert c.methods.algorithm == ("fedavg",) and c.training.seed == 4
  assert c.output_dir == os.path.join("/r", "digits_fedavg_vs_fedavgm")
  with pytest.raises(ConfigError, match="--nope: not a setting"):
    config_lib.replace_fields(c, {"nope": 1})


@pytest.mark.parametrize("flags, names", [
    (dict(), ["fedavg"]),
    (dict(fedir=True, fedvc=True), [
        "fedavg", "fedavg+fedir", "fedavg+fedvc", "fedavg+fedir+fedvc"]),
    (dict(fedir=True, fedprox=True, include_plain=False), [
        "fedavg+fedir", "fedavg+fedprox"]),
    (dict(fedvc=True, include_plain=False), ["fedavg+fedvc"]),
])
def test_methods_expand(flags, names):
  m = dataclasses.replace(config_lib.MethodsConfig(algorithm=("fedavg",)),
                          **flags)
  assert [x.name for x in m.expand()] == names
  assert all(x.server_momentum == 0.9 for x in m.expand())


def test_validation_errors_name_the_flag():
  for values, message in [
      ({"include_plain": False}, "--noinclude_plain needs --fedir, --fedprox "
       "or --fedvc"),
      ({"experiment_name": "a/b"}, "--experiment_name='a/b': must be a "
       "non-empty name without '/'"),
      ({"dataset": "imagenet"}, "--dataset=imagenet: must be one of digits,"),
      ({"dataset": "synthetic_cifar10", "imbalance_sigma": 1.0},
       "--imbalance_sigma: not used by --dataset=synthetic_cifar10"),
      ({"dataset": "digits", "partition": "iid"},
       "--partition=iid: --dataset=digits supports --partition=dirichlet|"
       "shards|dirichlet_per_class only"),
      ({"partition": "shards", "alpha": 0.1},
       "--alpha: not used by --partition=shards"),
      ({"partition": "shards", "imbalance_sigma": 1.0},
       "--imbalance_sigma: not used by --partition=shards"),
      ({"algorithm": []}, "--algorithm: give at least one"),
      ({"total_rounds": 0}, "--total_rounds=0: must be >= 1"),
      ({"local_workers": -1}, "--local_workers=-1: must be >= 0"),
      ({"local_workers": 0}, "--local_workers=0 needs --workers=host:port"),
      ({"workers": ["h:1", "10.0.0.5"]},
       "--workers=h:1,10.0.0.5: '10.0.0.5' is not host:port"),
      ({"workers": ["h:99999"]}, "--workers=h:99999: 'h:99999' is not"),
      ({"worker_startup_timeout": 0.0},
       "--worker_startup_timeout=0.0: must be > 0"),
      ({"worker_malloc_arena_max": -2}, "--worker_malloc_arena_max=-2"),
  ]:
    with pytest.raises(ConfigError) as e:
      config_lib.from_values(values)
    assert message in str(e.value), values
    assert "\n" not in str(e.value)
  # Remote workers in addition to the default local one are allowed.
  both = config_lib.from_values({"workers": ["h:1"]}).execution
  assert (both.local_workers, both.workers) == (1, ("h:1",))
  # Checked when the mixing scenario is built (before any training).
  from federated_vision import tasks  # pylint: disable=g-import-not-at-top
  config = config_lib.from_values({"partition": "shards", "mixing": ["none"]})
  with pytest.raises(ConfigError, match="--partition=shards and --mixing"):
    tasks.get_task("digits").build_scenario(
        config.data, tasks.DataContext(0, "unused", "unused"))


def test_sweep_points_are_configs_and_flags_are_untouched(parse):
  f = parse("--seed=5")
  base = config_lib.from_flags(f)
  sweep = sweeps.SWEEPS["mcmahan_mnist_grid"]
  point = next(p for p in sweep.points if p.name == "cnn_shards_C0.1_E5_Binf")
  c = sweeps.point_config(base, sweep, point, ["seed"], "/out")
  assert (c.data.dataset, c.data.partition, c.data.examples_per_client) == (
      "mnist", "shards", None)
  assert (c.model.model, c.training.client_fraction, c.methods.client_epochs,
          c.methods.client_batch_size) == ("mnist_cnn", 0.1, 5, 0)
  assert c.training.seed == 5 and c.output_dir == "/out/cnn_shards_C0.1_E5_Binf"
  assert f.dataset == "digits" and f.partition == "dirichlet"


def _imports(path):
  tree = ast.parse(open(path).read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield from (a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom):
      yield node.module or ""
      yield from (f"{node.module}.{a.name}" for a in node.names)


def test_library_imports_no_absl_flags_and_no_experiments():
  offenders = []
  for root, _, files in os.walk(os.path.join(REPO, "federated_vision")):
    for name in files:
      if name.endswith(".py"):
        path = os.path.join(root, name)
        for mod in _imports(path):
          rel = os.path.relpath(path, REPO)
          if mod == "absl.flags" or mod.split(".")[0] == "experiments":
            offenders.append(f"{rel}: {mod}")
  assert not offenders


def test_flags_lib_and_binaries_stay_small():
  def lines(name):
    with open(os.path.join(REPO, "experiments", name)) as f:
      return len(f.read().splitlines())
  assert lines("flags_lib.py") <= 250
  for binary in ("train_main.py", "sweep_main.py", "report_main.py"):
    assert lines(binary) <= 60, binary
