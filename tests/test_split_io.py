"""Published split CSVs (Hsu, Qi & Brown 2020) and partition reports."""

import json
import os

import numpy as np
import pytest

from federated_vision.data import partition as P
from federated_vision.evaluation import partition_report as R
from federated_vision.data import split_io as S

LABELS = np.repeat(np.arange(10), 100)
np.random.default_rng(0).shuffle(LABELS)


def _partition(alpha=0.5, k=20, n=40, seed=1):
  return P.dirichlet_partition(LABELS, k, n, alpha, seed=seed)


def test_split_filename_and_alpha():
  assert S.split_filename(0) == "federated_train_alpha_0.00.csv"
  assert S.split_filename(0.05) == "federated_train_alpha_0.05.csv"
  assert S.split_filename(100) == "federated_train_alpha_100.00.csv"
  assert S.alpha_from_filename("/x/federated_train_alpha_0.10.csv") == 0.1
  with pytest.raises(ValueError, match="alpha"):
    S.split_filename(-1)
  with pytest.raises(ValueError, match="alpha"):
    S.split_filename(float("inf"))
  with pytest.raises(ValueError, match="federated_train_alpha"):
    S.alpha_from_filename("train.csv")


def test_written_csv_is_published_format(tmp_path):
  part = {"0": np.array([5, 1]), "1": np.array([2])}
  path = S.write_split_csv(str(tmp_path / "s.csv"), part, LABELS)
  lines = open(path).read().splitlines()
  assert lines == ["user_id,image_id,class", f"0,1,{LABELS[1]}",
                   f"0,5,{LABELS[5]}", f"1,2,{LABELS[2]}"]


def test_round_trip_same_partition(tmp_path):
  part = _partition()
  path = S.write_split_csv(str(tmp_path / S.split_filename(0.5)), part, LABELS)
  split = S.read_split_csv(path, labels=LABELS)
  assert list(split.partition) == list(part) == P.client_ids(20)
  for cid in part:
    assert split.partition[cid].dtype == np.int64
    np.testing.assert_array_equal(split.partition[cid], part[cid])
    np.testing.assert_array_equal(split.classes[cid], LABELS[part[cid]])
  labels = split.labels(LABELS.size)
  used = np.concatenate(list(part.values()))
  np.testing.assert_array_equal(labels[used], LABELS[used])
  assert (labels == -1).sum() == LABELS.size - used.size


def test_round_trip_same_client_data(tmp_path):
  from federated_vision.data import client_data
  from federated_vision import execution  # pylint: disable=unused-import  # TFF context retired at exit.
  arrays = {"x": np.arange(LABELS.size * 2, dtype=np.float32).reshape(-1, 2),
            "y": LABELS.astype(np.int32)}
  part = _partition(alpha=0.1, k=8, n=25)
  path = S.write_split_csv(str(tmp_path / "a.csv"), part, LABELS)
  ours = client_data.ArrayClientData(arrays, part)
  back = client_data.ArrayClientData(arrays, S.read_split_csv(path).partition)
  assert back.client_ids == ours.client_ids
  for cid in ours.client_ids:
    a = list(ours.create_tf_dataset_for_client(cid).as_numpy_iterator())
    b = list(back.create_tf_dataset_for_client(cid).as_numpy_iterator())
    assert len(a) == len(b) == 25
    for ea, eb in zip(a, b):
      np.testing.assert_array_equal(ea["x"], eb["x"])
      assert ea["y"] == eb["y"]


def test_write_and_read_one_file_per_alpha(tmp_path):
  parts = {a: _partition(alpha=a, seed=2) for a in (0.0, 0.1, 100.0)}
  paths = S.write_splits(str(tmp_path), parts, LABELS)
  assert sorted(os.path.basename(p) for p in paths.values()) == [
      "federated_train_alpha_0.00.csv", "federated_train_alpha_0.10.csv",
      "federated_train_alpha_100.00.csv"]
  back = S.read_splits(str(tmp_path), labels=LABELS)
  assert list(back) == [0.0, 0.1, 100.0]
  for a, part in parts.items():
    assert all(np.array_equal(back[a].partition[c], part[c]) for c in part)
  with pytest.raises(FileNotFoundError, match="missing' does not exist"):
    S.read_splits(str(tmp_path / "missing"))
  (tmp_path / "empty").mkdir()
  with pytest.raises(FileNotFoundError, match="no federated_train_alpha"):
    S.read_splits(str(tmp_path / "empty"))


def test_numeric_user_ids_sort_numerically(tmp_path):
  path = tmp_path / "p.csv"
  path.write_text("user_id,image_id,class\n10,3,1\n2,0,0\n2,7,1\n0,5,0\n")
  split = S.read_split_csv(str(path))
  assert list(split.partition) == ["0", "2", "10"]
  np.testing.assert_array_equal(split.partition["2"], [0, 7])
  np.testing.assert_array_equal(split.classes["2"], [0, 1])
  assert S.sort_client_ids(["b", "a10", "a2"]) == ["a10", "a2", "b"]


def test_extra_columns_and_order_of_columns(tmp_path):
  path = tmp_path / "p.csv"
  path.write_text("class,label,image_id,user_id\n3,x,4,u\n1,y,2,u\n\n")
  split = S.read_split_csv(str(path))
  np.testing.assert_array_equal(split.partition["u"], [2, 4])
  np.testing.assert_array_equal(split.classes["u"], [1, 3])


@pytest.mark.parametrize("body,line,message", [
    ("", 1, "empty file"),
    ("user,image_id,class\n", 1, "lacks column"),
    ("user_id,image_id,class\n", 2, "no rows"),
    ("user_id,image_id,class\n0,1,2\n0,2\n", 3, "expected 3 fields"),
    ("user_id,image_id,class\n0,1,2\n0,x,2\n", 3, "image_id must be"),
    ("user_id,image_id,class\n0,1,2\n0,-4,2\n", 3, "image_id must be"),
    ("user_id,image_id,class\n0,1,2\n0,2,1.5\n", 3, "class must be"),
    ("user_id,image_id,class\n0,1,2\n,2,1\n", 3, "empty user_id"),
    ("user_id,image_id,class\n0,1,2\n1,3,2\n1,1,2\n", 4,
     "image_id 1 already assigned on line 2"),
    ("user_id,image_id,class\n0,1,2\n0,1000,2\n", 3, "outside the source set"),
])
def test_malformed_rows_name_file_and_line(tmp_path, body, line, message):
  path = tmp_path / "bad.csv"
  path.write_text(body)
  with pytest.raises(S.SplitFormatError) as err:
    S.read_split_csv(str(path), num_examples=1000)
  assert str(err.value).startswith(f"{path}:{line}:")
  assert message in str(err.value)


def test_class_mismatch_names_line(tmp_path):
  path = tmp_path / "bad.csv"
  wrong = (LABELS[9] + 1) % 10
  path.write_text(f"user_id,image_id,class\n0,3,{LABELS[3]}\n0,9,{wrong}\n")
  with pytest.raises(S.SplitFormatError, match=f"bad.csv:3: class {wrong} of "
                     f"image_id 9 differs from the source label {LABELS[9]}"):
    S.read_split_csv(str(path), labels=LABELS)


def test_missing_file_and_bad_partitions(tmp_path):
  with pytest.raises(FileNotFoundError, match="nope.csv"):
    S.read_split_csv(str(tmp_path / "nope.csv"))
  out = str(tmp_path / "o.csv")
  with pytest.raises(ValueError, match="shares images"):
    S.write_split_csv(out, {"a": [1, 2], "b": [2]}, LABELS)
  with pytest.raises(ValueError, match="outside"):
    S.write_split_csv(out, {"a": [1, 5000]}, LABELS)
  with pytest.raises(ValueError, match="client id"):
    S.write_split_csv(out, {"a,b": [1]}, LABELS)
  assert not os.path.exists(out)


def test_class_count_report_exact_numbers(tmp_path):
  labels = np.array([0, 0, 1, 2, 2, 2])
  part = {"a": np.array([0, 2]), "b": np.array([1, 3, 4, 5])}
  report = R.class_count_report(labels, part, class_names=["x", "y", "z"],
                                metadata={"alpha": 0.1})
  assert report["metadata"] == {"alpha": 0.1}
  assert report["class_totals"] == [2, 1, 3]
  assert report["clients"] == [
      {"client_id": "a", "num_examples": 2, "num_classes": 2,
       "class_counts": [1, 1, 0]},
      {"client_id": "b", "num_examples": 4, "num_classes": 2,
       "class_counts": [1, 0, 3]}]
  assert report["summary"]["emd"] == pytest.approx(2 / 3)
  np.testing.assert_array_equal(R.counts_from_report(report),
                                [[1, 1, 0], [1, 0, 3]])
  with pytest.raises(ValueError, match="class_names"):
    R.class_count_report(labels, part, class_names=["x"])


def test_write_partition_report_json_and_png(tmp_path):
  import matplotlib.image
  part = P.dirichlet_partition(LABELS, 10, 100, 0.0, seed=0)
  paths = R.write_partition_report(str(tmp_path), "cifar10", LABELS, part,
                                   alpha=0.0, metadata={"seed": 0})
  assert os.path.basename(paths["json"]) == "cifar10_alpha_0.00_class_counts.json"
  assert os.path.basename(paths["png"]) == "cifar10_alpha_0.00_class_counts.png"
  with open(paths["json"]) as f:
    report = json.load(f)
  assert report["metadata"] == {"name": "cifar10", "alpha": 0.0, "seed": 0}
  assert report["summary"]["emd"] == pytest.approx(1.8)
  assert all(c["num_classes"] == 1 and c["num_examples"] == 100
             for c in report["clients"])
  with open(paths["png"], "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
  image = matplotlib.image.imread(paths["png"])
  assert image.shape[:2] == (400, 1000)  # 10 x 4 inches at 100 dpi.
  assert R.report_basename("c", float("inf")) == "c_alpha_inf"
  with pytest.raises(ValueError, match="counts"):
    R.plot_class_counts(np.zeros((0, 3)), str(tmp_path / "e.png"))
  with pytest.raises(ValueError, match="client_ids"):
    R.plot_class_counts(np.ones((2, 3)), str(tmp_path / "e.png"),
                        client_ids=["a"])


def test_dirichlet_sweep_writes_everything(tmp_path):
  summary = R.dirichlet_sweep(str(tmp_path), "c10", LABELS, [100.0, 0.0,
                                                            float("inf")],
                              num_clients=10, examples_per_client=100, seed=1)
  assert [r["alpha"] for r in summary["alphas"]] == [100.0, 0.0, "inf"]
  by_alpha = {r["alpha"]: r for r in summary["alphas"]}
  assert by_alpha[0.0]["emd"] == pytest.approx(1.8)
  assert by_alpha[0.0]["classes_per_client"]["max"] == 1
  assert by_alpha[100.0]["emd"] < 0.5
  assert by_alpha["inf"]["csv"] is None
  back = S.read_split_csv(by_alpha[0.0]["csv"], labels=LABELS)
  np.testing.assert_array_equal(
      back.partition["3"], P.dirichlet_partition(LABELS, 10, 100, 0.0, seed=1)["3"])
  assert sorted(os.listdir(tmp_path)) == sorted([
      "c10_alpha_0.00_class_counts.json", "c10_alpha_0.00_class_counts.png",
      "c10_alpha_100.00_class_counts.json", "c10_alpha_100.00_class_counts.png",
      "c10_alpha_inf_class_counts.json", "c10_alpha_inf_class_counts.png",
      "c10_dirichlet_sweep.json", "federated_train_alpha_0.00.csv",
      "federated_train_alpha_100.00.csv"])
  with open(tmp_path / "c10_dirichlet_sweep.json") as f:
    assert json.load(f)["alphas"][1]["emd"] == pytest.approx(1.8)
