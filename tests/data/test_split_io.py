"""Published split CSVs (Hsu, Qi & Brown 2020) and partition reports."""

import json
import os

import numpy as np
import pytest

from federated_vision.data import partition as P
from federated_vision.evaluation import partition_report as R
from federated_vision.data import indexed_splits as IS
from federated_vision.data import split_io as S
from federated_vision.data import split_rows as SR
from conftest import REPO

LABELS = np.repeat(np.arange(10), 100)
np.random.default_rng(0).shuffle(LABELS)


def _partition(alpha=0.5, k=20, n=40, seed=1):
  return P.dirichlet_partition(LABELS, k, n, alpha, seed=seed)


def test_split_filename_and_alpha():
  assert IS.split_filename(0) == "federated_train_alpha_0.00.csv"
  assert IS.split_filename(0.05) == "federated_train_alpha_0.05.csv"
  assert IS.split_filename(100) == "federated_train_alpha_100.00.csv"
  assert IS.alpha_from_filename("/x/federated_train_alpha_0.10.csv") == 0.1
  with pytest.raises(ValueError, match="alpha"):
    IS.split_filename(-1)
  with pytest.raises(ValueError, match="alpha"):
    IS.split_filename(float("inf"))
  with pytest.raises(ValueError, match="federated_train_alpha"):
    IS.alpha_from_filename("train.csv")


def test_written_csv_is_published_format(tmp_path):
  part = {"0": np.array([5, 1]), "1": np.array([2])}
  path = IS.write_split_csv(str(tmp_path / "s.csv"), part, LABELS)
  lines = open(path).read().splitlines()
  assert lines == ["user_id,image_id,class", f"0,1,{LABELS[1]}",
                   f"0,5,{LABELS[5]}", f"1,2,{LABELS[2]}"]


def test_round_trip_same_partition(tmp_path):
  part = _partition()
  path = IS.write_split_csv(str(tmp_path / IS.split_filename(0.5)), part, LABELS)
  split = IS.read_split_csv(path, labels=LABELS)
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
  from federated_vision.data import in_graph_client_data  # pylint: disable=g-import-not-at-top
  arrays = {"x": np.arange(LABELS.size * 2, dtype=np.float32).reshape(-1, 2),
            "y": LABELS.astype(np.int32)}
  part = _partition(alpha=0.1, k=8, n=25)
  path = IS.write_split_csv(str(tmp_path / "a.csv"), part, LABELS)
  ours = in_graph_client_data.ArrayClientData(arrays, part)
  back = in_graph_client_data.ArrayClientData(arrays, IS.read_split_csv(path).partition)
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
  paths = IS.write_splits(str(tmp_path), parts, LABELS)
  assert sorted(os.path.basename(p) for p in paths.values()) == [
      "federated_train_alpha_0.00.csv", "federated_train_alpha_0.10.csv",
      "federated_train_alpha_100.00.csv"]
  back = IS.read_splits(str(tmp_path), labels=LABELS)
  assert list(back) == [0.0, 0.1, 100.0]
  for a, part in parts.items():
    assert all(np.array_equal(back[a].partition[c], part[c]) for c in part)
  with pytest.raises(FileNotFoundError, match="missing' does not exist"):
    IS.read_splits(str(tmp_path / "missing"))
  (tmp_path / "empty").mkdir()
  with pytest.raises(FileNotFoundError, match="no federated_train_alpha"):
    IS.read_splits(str(tmp_path / "empty"))


def test_numeric_user_ids_sort_numerically(tmp_path):
  path = tmp_path / "p.csv"
  path.write_text("user_id,image_id,class\n10,3,1\n2,0,0\n2,7,1\n0,5,0\n")
  split = IS.read_split_csv(str(path))
  assert list(split.partition) == ["0", "2", "10"]
  np.testing.assert_array_equal(split.partition["2"], [0, 7])
  np.testing.assert_array_equal(split.classes["2"], [0, 1])
  assert S.sort_client_ids(["b", "a10", "a2"]) == ["a10", "a2", "b"]


def test_extra_columns_and_order_of_columns(tmp_path):
  path = tmp_path / "p.csv"
  path.write_text("class,label,image_id,user_id\n3,x,4,u\n1,y,2,u\n\n")
  split = IS.read_split_csv(str(path))
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
    IS.read_split_csv(str(path), num_examples=1000)
  assert str(err.value).startswith(f"{path}:{line}:")
  assert message in str(err.value)


def test_class_mismatch_names_line(tmp_path):
  path = tmp_path / "bad.csv"
  wrong = (LABELS[9] + 1) % 10
  path.write_text(f"user_id,image_id,class\n0,3,{LABELS[3]}\n0,9,{wrong}\n")
  with pytest.raises(S.SplitFormatError, match=f"bad.csv:3: class {wrong} of "
                     f"image_id 9 differs from the source label {LABELS[9]}"):
    IS.read_split_csv(str(path), labels=LABELS)


def test_missing_file_and_bad_partitions(tmp_path):
  with pytest.raises(FileNotFoundError, match="nope.csv"):
    IS.read_split_csv(str(tmp_path / "nope.csv"))
  out = str(tmp_path / "o.csv")
  with pytest.raises(ValueError, match="shares images"):
    IS.write_split_csv(out, {"a": [1, 2], "b": [2]}, LABELS)
  with pytest.raises(ValueError, match="outside"):
    IS.write_split_csv(out, {"a": [1, 5000]}, LABELS)
  with pytest.raises(ValueError, match="client id"):
    IS.write_split_csv(out, {"a,b": [1]}, LABELS)
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
  back = IS.read_split_csv(by_alpha[0.0]["csv"], labels=LABELS)
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


# ----------------------------------------------------------------------------
# The published files of every data set, through the one reader.


def test_reads_published_inaturalist_landmarks_and_cifar_files(tmp_path):
  import realworld_fixtures  # pylint: disable=g-import-not-at-top
  files = realworld_fixtures.write_published_splits(str(tmp_path))
  for name in ("inat_train", "landmarks_train"):
    rows = SR.read_split_rows(files[name]["path"])
    want = files[name]["rows"]
    assert rows.client_ids == [r[0] for r in want]
    assert rows.image_ids == [r[1] for r in want]  # Strings, kept as written.
    assert rows.classes.tolist() == [int(r[2]) for r in want]
    assert rows.lines.tolist() == list(range(2, 2 + len(want)))
  inat = SR.read_split_rows(files["inat_train"]["path"])
  assert inat.labels.tolist() == [17, 5088, 2033, 17]
  assert inat.num_classes == 3  # class 0..2, never the source labels.
  assert SR.read_split_rows(files["landmarks_train"]["path"]).labels is None
  assert SR.read_split_rows(
      files["landmarks_train"]["path"]).client_ids == ["0", "1", "1"]
  assert os.path.basename(files["inat_train"]["path"]) == (
      "federated_train_user_120k.csv")
  test = SR.read_test_rows(files["inat_test"]["path"])
  assert test.client_ids is None
  assert test.image_ids == ["aaaabbbbccccddddeeeeffff00001111",
                            "22223333444455556666777788889999"]
  assert test.classes.tolist() == [2, 1] and test.labels.tolist() == [5088, 2033]
  SR.check_test_rows(inat, test)
  lm_test = SR.read_test_rows(files["landmarks_test"]["path"])
  assert lm_test.classes.tolist() == [0, 1] and lm_test.labels is None
  # CIFAR: integer ids indexing the source sets, checked against their labels.
  train_labels = np.zeros(20, np.int64)
  train_labels[[3, 10, 7]] = [6, 4, 7]
  split = IS.read_split_csv(files["cifar_train"]["path"], labels=train_labels)
  assert IS.alpha_from_filename(files["cifar_train"]["path"]) == 0.0
  np.testing.assert_array_equal(split.partition["0"], [3, 10])
  np.testing.assert_array_equal(split.classes["0"], [6, 4])
  test_labels = np.array([3, 0, 0, 0, 0, 6])
  cifar_test = IS.read_test_csv(files["cifar_test"]["path"], labels=test_labels)
  assert cifar_test.image_ids.tolist() == [0, 5]
  assert cifar_test.classes.tolist() == [3, 6]
  with pytest.raises(S.SplitFormatError, match=r"test.csv:3: class 6 of "
                     "image_id 5 differs from the source label 0"):
    IS.read_test_csv(files["cifar_test"]["path"], labels=[3, 0, 0, 0, 0, 0])
  # The TFF layout: a client column per split, NA where absent.
  tff = tmp_path / "iNaturalist_train.csv"
  tff.write_text(",".join(S.TFF_INAT_COLUMNS) + "\n"
                 "12,NA,NA,NA,NA,NA,NA,a1,1\n"
                 "NA,NA,NA,NA,NA,NA,NA,a2,0\n"
                 "9,NA,NA,NA,NA,8bb1,3,a3,0\n")
  rows = SR.read_split_rows(str(tff), "user_120k")
  assert rows.client_ids == ["12", "9"] and rows.image_ids == ["a1", "a3"]
  assert rows.classes.tolist() == [1, 0] and rows.lines.tolist() == [2, 4]
  assert SR.read_split_rows(str(tff), "geo_10k").client_ids == ["8bb1"]
  with pytest.raises(S.SplitFormatError, match="no rows .* 'geo_100'"):
    SR.read_split_rows(str(tff), "geo_100")


def test_only_split_io_parses_the_split_format():
  """No other library module reads `image_id` CSVs (one parser, one error)."""
  root = os.path.join(REPO, "federated_vision")
  readers = []
  for dirpath, _, names in os.walk(root):
    for name in names:
      if name.endswith(".py"):
        path = os.path.join(dirpath, name)
        text = open(path).read()
        if ("csv.reader" in text or "csv.DictReader" in text) and (
            "image_id" in text):
          readers.append(os.path.relpath(path, root))
  assert readers == [os.path.join("data", "split_io.py")]
  assert not os.path.exists(os.path.join(root, "realworld", "split_csv.py"))


@pytest.mark.parametrize("body,line,message", [
    # The same image twice, even with conflicting classes.
    ("user_id,image_id,class\nu,a,0\nv,b,1\nv,a,1\n", 4,
     "image_id a already assigned on line 2"),
    ("user_id,image_id,class\nu,a,0\nu,b,abc\n", 3,
     "class must be a non-negative integer, got 'abc'"),
    ("user_id,image_id,class,label\nu,a,0,17\nu,b,0,18\n", 3,
     "class 0 has label 18, but line 2 gives it label 17"),
    ("user_id,image_id,class,label\nu,a,0,17\nu,b,1,17\n", 3,
     "label 17 has class 1, but line 2 gives it class 0"),
    ("user_id,image_id,class,label\nu,a,0,x\n", 2,
     "label must be an integer, got 'x'"),
    ("user_id,image_id,class\nu@1,a,0\n", 2, "contains '@'"),
    ("user_id,image_id,class,class\nu,a,0,0\n", 1, "repeats column(s) class"),
])
def test_bad_rows_of_string_id_splits(tmp_path, body, line, message):
  path = tmp_path / "split.csv"
  path.write_text(body)
  with pytest.raises(S.SplitFormatError) as err:
    SR.read_split_rows(str(path))
  assert str(err.value).startswith(f"{path}:{line}: ")
  assert message in str(err.value)


def test_not_utf8_names_file_line_and_byte(tmp_path):
  path = tmp_path / "split.csv"
  path.write_bytes(b"user_id,image_id,class\n" + b"u,a,0\n" * 900 +
                   b"u,caf\xe9,1\n")
  with pytest.raises(S.SplitFormatError, match=rf"split.csv:902: not UTF-8 "
                     r"text \(byte 0xe9 at column 6\)"):
    SR.read_split_rows(str(path))


def test_non_contiguous_classes_and_unknown_test_classes(tmp_path):
  path = tmp_path / "split.csv"
  # iNaturalist ids in `class`: the 5089-way model the reader refuses.
  path.write_text("user_id,image_id,class\nu,a,17\nu,b,2033\nv,c,5088\n")
  rows = SR.read_split_rows(str(path))
  with pytest.raises(S.SplitFormatError, match=r"split.csv: the class column "
                     r"is not contiguous from 0: 3 distinct classes up to "
                     r"5088, 5086 missing \(e.g. 0\)"):
    rows.num_classes  # pylint: disable=pointless-statement
  path.write_text("user_id,image_id,class,label\nu,a,0,17\nu,b,1,20\n")
  train = SR.read_split_rows(str(path))
  test = tmp_path / "test.csv"
  test.write_text("image_id,class,label\nt1,1,20\nt2,2,30\n")
  with pytest.raises(S.SplitFormatError,
                     match=rf"test.csv:3: class 2 never occurs in {path}"):
    SR.check_test_rows(train, SR.read_test_rows(str(test)))
  test.write_text("image_id,class,label\nt1,1,21\n")
  with pytest.raises(S.SplitFormatError, match=r"test.csv:2: class 1 has "
                     r"label 21, but .*split.csv gives it label 20"):
    SR.check_test_rows(train, SR.read_test_rows(str(test)))
  test.write_text("image_id,class\nt1,0\nb,1\n")
  with pytest.raises(S.SplitFormatError, match=r"test.csv:3: image_id b is "
                     "also a training image"):
    SR.check_test_rows(train, SR.read_test_rows(str(test)))
  test.write_text("image_id,class\n")  # An empty test set is a valid file.
  assert SR.read_test_rows(str(test)).classes.size == 0


def test_image_paths_and_atomic_write(tmp_path):
  path = tmp_path / "image_paths.csv"
  path.write_text("image_id,path\na,x/a.jpg\nb,y/b.jpg\na,x/a.jpg\n")
  with pytest.raises(S.SplitFormatError, match="image_paths.csv:4: image_id a "
                     "already listed on line 2"):
    S.read_image_paths(str(path))

  def rows():
    yield ("a", "1")
    raise RuntimeError("generator failed")
  with pytest.raises(RuntimeError):
    S.write_csv(str(tmp_path / "out.csv"), ("image_id", "class"), rows())
  assert os.listdir(tmp_path) == ["image_paths.csv"]  # Nothing half-written.
