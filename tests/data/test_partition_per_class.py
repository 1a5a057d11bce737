"""--partition=dirichlet_per_class: the per-class Dirichlet of NIID-Bench /
FedLab / Flower, against a numpy reference written here; its errors; a
2-round train_main run and an alpha sweep on the synthetic CIFAR-10 twin.

Budget: two TFF binary runs (train_main, a 2-point sweep_main) and one
train_main that stops at its flags; the rest is numpy in-process.
"""

import json
import math
import os
import re

import numpy as np
import pytest

from benchmarks import bench_dirichlet_conventions as conventions
from conftest import REPO, run_module
import in_process
from federated_vision.experiment import config as config_lib
from federated_vision.experiment import report_lib
from federated_vision.experiment import sweeps
from federated_vision import tasks
from federated_vision.data import partition as partition_lib
from federated_vision.data import partition_per_class as pc
from federated_vision.errors import ConfigError
from federated_vision.tasks import partitions


def reference(labels, n_parties, beta, seed, min_require_size=10,
              balance=True):
  """NIID-Bench's `partition_data(..., 'noniid-labeldir')` loop, rewritten
  with a seeded `np.random.Generator` (the package's randomness) in place of
  the global `np.random` state, and sorted (not shuffled) client lists."""
  rng = np.random.default_rng(seed)
  labels = np.asarray(labels)
  n = labels.shape[0]
  draws = 0
  while True:  # NIID-Bench: `while min_size < min_require_size` (>= 1 draw).
    draws += 1
    idx_batch = [[] for _ in range(n_parties)]
    for k in range(labels.max() + 1):
      idx_k = np.where(labels == k)[0]
      rng.shuffle(idx_k)
      if math.isinf(beta):
        proportions = np.ones(n_parties) / n_parties
      else:
        proportions = rng.dirichlet(np.repeat(beta, n_parties))
      if balance:
        proportions = np.array([p * (len(idx_j) < n / n_parties)
                                for p, idx_j in zip(proportions, idx_batch)])
      proportions = proportions / proportions.sum()
      proportions = (np.cumsum(proportions) * len(idx_k)).astype(int)[:-1]
      idx_batch = [idx_j + idx.tolist()
                   for idx_j, idx in zip(idx_batch, np.split(idx_k, proportions))]
    if min(len(idx_j) for idx_j in idx_batch) >= min_require_size:
      break
  return [sorted(b) for b in idx_batch], draws


def _shuffled_labels(counts, seed):
  labels = np.repeat(np.arange(len(counts)), counts)
  np.random.default_rng(seed).shuffle(labels)
  return labels


@pytest.mark.parametrize("counts, k, alpha, seed, min_size, balance", [
    ([50] * 10, 5, 0.5, 0, 10, True),            # Balanced classes.
    ([80, 5, 33, 0, 61, 12], 4, 1.0, 3, 10, True),  # Uneven, an empty class.
    ([5000] * 10, 100, 0.1, 0, 10, True),        # CIFAR-10 shapes, re-draws.
    ([40] * 10, 8, 0.3, 7, 10, False),           # Flower's self_balancing=False.
    ([7, 9, 4], 3, math.inf, 2, 0, True),        # alpha = inf: even thirds.
    ([30] * 4, 6, 100.0, 11, 1, True),
])
def test_equals_the_numpy_reference(counts, k, alpha, seed, min_size, balance):
  labels = _shuffled_labels(counts, seed + 1)
  part, info = pc.dirichlet_per_class_partition(
      labels, k, alpha, min_client_size=min_size, balance=balance, seed=seed)
  ref, draws = reference(labels, k, alpha, seed, min_size, balance)
  assert list(part) == partition_lib.client_ids(k)
  assert [v.tolist() for v in part.values()] == ref
  assert info == {"min_client_size": min_size, "balance": balance,
                  "draws": draws}
  assert all(v.dtype == np.int64 for v in part.values())
  # Every example dealt exactly once; every client >= the minimum.
  assert sorted(np.concatenate(list(part.values())).tolist()) == list(
      range(len(labels)))
  assert min(len(v) for v in part.values()) >= min_size


def test_redraws_are_counted_and_seeded():
  labels = _shuffled_labels([5000] * 10, 1)
  _, info = pc.dirichlet_per_class_partition(labels, 100, 0.1, seed=0)
  assert info["draws"] == reference(labels, 100, 0.1, 0)[1] > 1
  a, _ = pc.dirichlet_per_class_partition(labels, 100, 0.5, seed=4)
  b, _ = pc.dirichlet_per_class_partition(labels, 100, 0.5, seed=4)
  c, _ = pc.dirichlet_per_class_partition(labels, 100, 0.5, seed=5)
  assert all(np.array_equal(a[i], b[i]) for i in a)
  assert any(not np.array_equal(a[i], c[i]) for i in a)


def test_alpha_inf_divides_every_class_evenly():
  # 2 classes of 6 over 3 clients: int(cumsum(1/3) * 6) = [2, 4] cuts.
  labels = np.array([0, 1] * 6)
  part, info = pc.dirichlet_per_class_partition(labels, 3, math.inf,
                                                min_client_size=4)
  counts = partition_lib.class_counts(labels, part)
  np.testing.assert_array_equal(counts, [[2, 2], [2, 2], [2, 2]])
  assert info["draws"] == 1
  assert partition_lib.emd_noniidness(counts) == 0.0


def test_no_mass_on_open_clients_divides_by_the_unbalanced_draw():
  """Ours (the references divide 0 by 0): at alpha = 1e-6 numpy's draws are
  exactly one-hot; with seed 0 both classes' draws are [1, 0], so when class 1
  comes client 0 is full (6 >= 12 / 2) and the open client 1 has no mass."""
  labels = np.array([0] * 6 + [1] * 6)
  rng = np.random.default_rng(0)
  rng.shuffle(np.arange(6))
  first = rng.dirichlet([1e-6, 1e-6])
  rng.shuffle(np.arange(6))
  second = rng.dirichlet([1e-6, 1e-6])
  assert first.tolist() == second.tolist() == [1.0, 0.0]
  part, _ = pc.dirichlet_per_class_partition(labels, 2, 1e-6,
                                             min_client_size=0, seed=0)
  unbalanced, _ = pc.dirichlet_per_class_partition(
      labels, 2, 1e-6, min_client_size=0, balance=False, seed=0)
  assert part["0"].tolist() == unbalanced["0"].tolist() == list(range(12))
  assert part["1"].tolist() == unbalanced["1"].tolist() == []


@pytest.mark.parametrize("kwargs, message", [
    ({"alpha": 0.0}, "alpha must be > 0 (or inf)"),
    ({"alpha": -1.0}, "alpha must be > 0 (or inf)"),
    ({"alpha": math.nan}, "alpha must be > 0 (or inf)"),
    ({"num_clients": 0}, "num_clients must be > 0, got 0"),
    ({"num_clients": 3}, "3 clients of at least 10 examples need 30 examples, "
     "only 20 are available"),
    ({"min_client_size": -1}, "min_client_size must be >= 0"),
    ({"max_draws": 0}, "max_draws >= 1"),
    # One class of 20 over two clients of >= 10: only q_0 in [0.5, 0.55)
    # passes, (almost) never at alpha = 0.01.
    ({"labels": np.zeros(20, int), "alpha": 0.01, "max_draws": 5},
     "no per-class Dirichlet draw "
     "(alpha=0.01) in 5 gave each of the 2 clients at least 10 examples"),
])
def test_bad_arguments_raise_one_line(kwargs, message):
  args = dict({"labels": np.arange(20) % 4, "num_clients": 2, "alpha": 1.0},
              **kwargs)
  with pytest.raises(ValueError) as e:
    pc.dirichlet_per_class_partition(**args)
  assert message in str(e.value)
  assert "\n" not in str(e.value)


def test_dispatcher_gives_the_same_partition_and_records_it():
  labels = _shuffled_labels([30] * 10, 0)
  part, info = partitions.make_partition(labels, "dirichlet_per_class",
                                         num_clients=6, alpha=0.5, seed=9)
  direct, draw_info = pc.dirichlet_per_class_partition(labels, 6, 0.5, seed=9)
  assert all(np.array_equal(part[c], direct[c]) for c in direct)
  assert info == dict(draw_info, partition="dirichlet_per_class",
                      partition_seed=9, num_clients=6, alpha=0.5)


@pytest.mark.parametrize("values, message", [
    ({"dataset": "synthetic_cifar10", "partition": "dirichlet_per_class",
      "alpha": 0.0}, "--alpha=0.0: must be > 0 (or inf) for "
     "--partition=dirichlet_per_class"),
    ({"dataset": "cifar10", "partition": "dirichlet_per_class",
      "examples_per_client": 500}, "--examples_per_client=500: not used by "
     "--partition=dirichlet_per_class"),
    ({"partition": "dirichlet_per_class", "imbalance_sigma": 1.0},
     "--imbalance_sigma: not used by --partition=dirichlet_per_class"),
    ({"dataset": "synthetic_inaturalist", "partition": "dirichlet_per_class"},
     "--partition"),
])
def test_config_errors_name_the_flag(values, message):
  with pytest.raises(ConfigError) as e:
    config_lib.from_values(values)
  assert message in str(e.value)
  assert "\n" not in str(e.value)


def test_train_main_bad_alpha_exits_2_with_one_line(tmp_path):
  proc = run_module("experiments.train_main", "--dataset=synthetic_cifar10",
                    "--partition=dirichlet_per_class", "--alpha=0",
                    f"--root_output_dir={tmp_path}", "--experiment_name=x",
                    timeout=120)
  assert proc.returncode == 2
  assert "Traceback" not in proc.stderr
  errors = [l for l in proc.stderr.splitlines() if "error:" in l]
  assert errors == ["train_main.py: error: --alpha=0.0: must be > 0 (or inf) "
                    "for --partition=dirichlet_per_class (Dir(alpha 1_K) over "
                    "the clients, per class)"]
  assert not (tmp_path / "x").exists()


def test_too_many_clients_for_the_minimum_names_num_clients():
  # digits: 1,438 training examples; 200 clients cannot each hold 10.
  config = config_lib.from_values({"partition": "dirichlet_per_class",
                                   "num_clients": 200})
  with pytest.raises(ConfigError) as e:
    tasks.get_task("digits").build_data(config.data,
                                        tasks.DataContext(0, "u", "u"))
  assert str(e.value).startswith("--num_clients=200: 200 clients of at least "
                                 "10 examples need 2000 examples, only 1438")


def test_digits_uses_every_example_and_the_reference():
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  config = config_lib.from_values({"partition": "dirichlet_per_class",
                                   "alpha": 0.3})
  fed = tasks.get_task("digits").build_data(config.data,
                                            tasks.DataContext(4, "u", "u"))
  y = digits.load_arrays()[1]
  ref, draws = reference(y, 20, 0.3, 4)
  np.testing.assert_array_equal(
      fed.class_counts, [np.bincount(y[r], minlength=10) for r in ref])
  assert fed.info["draws"] == draws and fed.info["alpha"] == 0.3
  assert fed.class_counts.sum() == len(y) == 1438


def _synthetic_cifar10_labels(num_train, seed):
  from federated_vision.data import cifar  # pylint: disable=g-import-not-at-top
  return cifar.synthetic_arrays(num_train, 40, 10, seed).train_y


def test_train_main_two_rounds(tmp_path):
  in_process.run_train_main(  # In this process: the test reads files.
      "--dataset=synthetic_cifar10", "--partition=dirichlet_per_class",
      "--alpha=0.5", "--num_clients=3", "--clients_per_round=2",
      "--total_rounds=2", "--rounds_per_eval=1", "--seed=3",
      "--algorithm=fedavg", "--centralized_epochs=0",
      f"--root_output_dir={tmp_path}", "--experiment_name=pc")
  out = tmp_path / "pc"
  summary = json.loads((out / "summary.json").read_text())
  assert summary["methods"]["fedavg"]["rounds"] == 2
  assert summary["config"]["data"]["partition"] == "dirichlet_per_class"
  assert summary["resolved"]["examples_per_client"] is None
  # The clients are exactly the reference's split of the twin's 60 labels.
  labels = _synthetic_cifar10_labels(60, 3)
  ref, draws = reference(labels, 3, 0.5, 3)
  counts = np.array([np.bincount(labels[r], minlength=10) for r in ref])
  report = json.loads(
      (out / "partition_per_class_alpha_0.50_class_counts.json").read_text())
  assert [c["class_counts"] for c in report["clients"]] == counts.tolist()
  assert report["metadata"]["partition"] == "dirichlet_per_class"
  assert report["metadata"]["draws"] == draws
  assert summary["emd"] == pytest.approx(partition_lib.emd_noniidness(counts),
                                         abs=1e-12)
  hparams = json.loads((out / "hparams.json").read_text())
  assert hparams["partition_stats"]["examples_per_client_min"] == min(
      len(r) for r in ref)


def test_sweep_over_alpha(tmp_path):
  sweep = sweeps.SWEEPS["dirichlet_per_class_cifar10"]
  assert [p.flags["alpha"] for p in sweep.points] == [10.0, 1.0, 0.5, 0.1] * 2
  assert sweep.base["partition"] == "dirichlet_per_class"
  assert "examples_per_client" not in sweep.base
  only = ("fedavg_alpha_10", "fedavg_alpha_0.1")
  in_process.run_sweep_main(  # In this process: the test reads files.
      "--sweep=dirichlet_per_class_cifar10", "--dataset=synthetic_cifar10",
      "--num_clients=4", "--clients_per_round=2", "--total_rounds=1",
      "--rounds_per_eval=1", "--seed=2", f"--only={','.join(only)}",
      f"--root_output_dir={tmp_path}")
  root = tmp_path / "dirichlet_per_class_cifar10"
  labels = _synthetic_cifar10_labels(80, 2)
  emds = {}
  for name, alpha in zip(only, (10.0, 0.1)):
    summary = json.loads((root / name / "summary.json").read_text())
    assert summary["config"]["data"]["alpha"] == alpha
    ref, _ = reference(labels, 4, alpha, 2)
    counts = np.array([np.bincount(labels[r], minlength=10) for r in ref])
    emds[alpha] = partition_lib.emd_noniidness(counts)
    assert summary["emd"] == pytest.approx(emds[alpha], abs=1e-12)
  assert emds[0.1] > emds[10.0]
  rows = report_lib.gather(str(root))
  assert sorted((r["point"], r["partition"], r["alpha"]) for r in rows) == [
      ("fedavg_alpha_0.1", "dirichlet_per_class", 0.1),
      ("fedavg_alpha_10", "dirichlet_per_class", 10.0)]


@pytest.mark.parametrize("doc", ["README.md", os.path.join("docs",
                                                            "datasets.md")])
def test_readme_table_is_the_packages_numbers(doc):
  """The EMD table of the README and docs/datasets.md, recomputed at its
  shapes (CIFAR-10: 10 x 5,000, K = 100, seed 0; about 0.1 s)."""
  with open(os.path.join(REPO, doc), encoding="utf-8") as f:
    text = f.read()
  section = text.split("### Two Dirichlet conventions", 1)[1].split("\n#", 1)[0]
  rows = [line for line in section.splitlines()
          if re.match(r"\| [0-9.]+ \|", line)]
  expected = conventions.markdown(conventions.table(seed=0)).splitlines()
  assert section.count("| α | EMD, `dirichlet`") == 1
  assert expected[0] in section
  assert rows == expected[2:]
  numbers = conventions.table(seed=0)
  assert [r["alpha"] for r in numbers] == [0.1, 0.5, 1.0, 10.0]
  # Same alpha, less skew per class than per client, at every alpha.
  assert all(r["emd_per_class"] < r["emd_dirichlet"] for r in numbers)
  assert all(r["per_class_min_size"] >= 10 for r in numbers)
