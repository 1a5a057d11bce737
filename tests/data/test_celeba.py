"""CelebA smile scenario: a SQLite fixture in TFF's schema, read by TFF's loader."""

import os
import sqlite3

import numpy as np
import pytest
import tensorflow as tf

from federated_vision.mixing import central_data as mixing_data
from federated_vision.data import celeba
from federated_vision.data import round_keys
from federated_vision.models import celeba as celeba_models

from celeba_fixture import write_celeba_archive, write_celeba_sqlite


def _values(ds):
  return sorted(int(e["x"][0, 0, 0]) for e in ds.as_numpy_iterator())


@pytest.fixture
def cache(tmp_path):
  truth = write_celeba_sqlite(str(tmp_path))
  return str(tmp_path), truth


def test_missing_file_is_one_clear_line(tmp_path):
  with pytest.raises(FileNotFoundError) as e:
    celeba.load_scenario(str(tmp_path / "nowhere"))
  message = str(e.value)
  assert "\n" not in message
  assert os.path.join(str(tmp_path / "nowhere"), "celeba.sqlite") in message
  assert "nothing is downloaded" in message
  assert "--format=lzma" not in message and "xz -d" in message
  assert not (tmp_path / "nowhere").exists()  # TFF never ran (no download).


@pytest.mark.parametrize("suffix", [".lzma", ".xz"])
def test_both_archive_forms_are_read(tmp_path, suffix):
  """TFF's published .lzma (LZMA-alone) and an .xz of it, as TFF's own
  loader reads either (its LZMADecompressor auto-detects the container)."""
  plain = tmp_path / "plain"
  packed = tmp_path / "packed"
  plain.mkdir()
  packed.mkdir()
  write_celeba_sqlite(str(plain))
  truth = write_celeba_archive(str(packed), suffix)
  assert sorted(os.listdir(packed)) == [celeba.SQLITE_FILE + suffix]
  with open(packed / (celeba.SQLITE_FILE + suffix), "rb") as f:
    magic = f.read(6)
  assert magic == (b"\xfd7zXZ\x00" if suffix == ".xz" else b"]\x00\x00\x80\x00\xff")
  want = celeba.load_scenario(str(plain))
  got = celeba.load_scenario(str(packed))
  with open(plain / celeba.SQLITE_FILE, "rb") as a, open(
      packed / celeba.SQLITE_FILE, "rb") as b:
    assert a.read() == b.read()  # decompressed beside the archive, exactly
  assert got.federated.client_sizes == want.federated.client_sizes
  cid = got.federated.client_data.client_ids[0]
  assert _values(got.federated.client_data.serializable_dataset_fn(
      tf.constant(cid))) == sorted(v for v, (s, c, smile) in truth.items()
                                   if s == celeba.TRAIN_SPLIT and c == cid
                                   and smile)


def test_corrupt_archive_is_one_clear_line(tmp_path):
  (tmp_path / (celeba.SQLITE_FILE + ".lzma")).write_bytes(b"not lzma" * 10)
  with pytest.raises(ValueError, match="not an .lzma/.xz archive") as e:
    celeba.load_scenario(str(tmp_path))
  assert "\n" not in str(e.value)
  assert sorted(os.listdir(tmp_path)) == [celeba.SQLITE_FILE + ".lzma"]


def test_not_tff_format_is_one_clear_line(tmp_path):
  connection = sqlite3.connect(str(tmp_path / celeba.SQLITE_FILE))
  connection.execute("CREATE TABLE other (a TEXT)")
  connection.close()
  with pytest.raises(ValueError, match="not a CelebA SQLite file") as e:
    celeba.load_scenario(str(tmp_path))
  assert "\n" not in str(e.value)


def test_smiling_split_through_tffs_loader(cache):
  cache_dir, truth = cache
  scenario = celeba.load_scenario(cache_dir)
  fed, central = scenario.federated, scenario.central
  # Federated: the train clients' smiling images only; c2 has none.
  assert fed.client_data.client_ids == ["c0", "c1", "c3"]
  assert fed.client_sizes == {"c0": 3, "c1": 2, "c3": 1}
  for cid in fed.client_data.client_ids:
    expected = sorted(v for v, (s, c, smile) in truth.items()
                      if s == celeba.TRAIN_SPLIT and c == cid and smile)
    for key in (cid, round_keys.round_key(cid, 4)):
      ds = fed.client_data.serializable_dataset_fn(tf.constant(key))
      assert _values(ds) == expected
      assert all(e["y"] == 1 for e in ds.as_numpy_iterator())
  np.testing.assert_array_equal(fed.class_counts, [[0, 3], [0, 2], [0, 1]])
  # Centralized: every unsmiling train image, tagged with its celebrity.
  unsmiling = {v: c for v, (s, c, smile) in truth.items()
               if s == celeba.TRAIN_SPLIT and not smile}
  assert central.num_examples == len(unsmiling) == 5
  rows = central.gather_fn(tf.range(central.num_examples, dtype=tf.int64))
  got = rows["x"].numpy()[:, 0, 0, 0].astype(int).tolist()
  assert sorted(got) == sorted(unsmiling)
  assert [unsmiling[v] for v in got] == list(central.source_clients)
  assert (rows["y"].numpy() == 0).all() and (central.labels == 0).all()
  assert rows["x"].dtype == tf.uint8
  np.testing.assert_array_equal(rows["x"].numpy()[:, 0, 0, 1], 255 - np.array(got))
  # Gathering follows the requested order, repeats included.
  again = central.gather_fn(tf.constant([3, 0, 3], tf.int64))["x"].numpy()
  assert again[:, 0, 0, 0].tolist() == [got[3], got[0], got[3]]
  empty = central.gather_fn(tf.zeros([0], tf.int64))
  assert empty["x"].shape == (0, 84, 84, 3) and empty["y"].shape == (0,)
  # Test clients: both labels.
  test = list(fed.test_data.as_numpy_iterator())
  assert sorted(int(e["x"][0, 0, 0]) for e in test) == sorted(
      v for v, (s, _, _) in truth.items() if s == celeba.TEST_SPLIT)
  assert sorted(int(e["y"]) for e in test) == [0, 0, 0, 1, 1, 1]
  assert scenario.groups == {"smiling": [1], "unsmiling": [0]}
  x = celeba.eval_map_fn(test[0])["x"]
  assert x.dtype == tf.float32 and float(tf.reduce_max(x)) <= 1.0
  # Exactly the stored uint8 pixels / 255 (a scaling bug keeps them <= 1).
  np.testing.assert_allclose(x.numpy(), test[0]["x"].astype(np.float32) / 255,
                             rtol=1e-7)
  # The index is cached beside the file and reused.
  assert os.path.exists(os.path.join(cache_dir, "celeba.sqlite.smile_index.npz"))


def test_unknown_client_is_an_error(cache):
  scenario = celeba.load_scenario(cache[0])
  with pytest.raises(tf.errors.InvalidArgumentError, match="unknown client id"):
    list(scenario.federated.client_data.serializable_dataset_fn(
        tf.constant("c9@1")))


def test_celeba_cnn_shape():
  model = celeba_models.create_celeba_cnn()
  assert model.output_shape == (None, 2)
  assert model.count_params() == 30_242
  with pytest.raises(ValueError, match="celeba model must be one of"):
    celeba_models.create_celeba_model("resnet")


def test_oracle_recombines_the_server_examples(tmp_path):
  """Training each strategy on this fixture is tested through train_main
  (test_mixing_train_main.test_celeba_fixture_two_rounds_of_each_strategy)."""
  write_celeba_sqlite(str(tmp_path))
  scenario = celeba.load_scenario(str(tmp_path))
  fed, central = scenario.federated, scenario.central
  # The oracle brings c2 (only unsmiling images) back as a client.
  oracle = mixing_data.recombined_data(fed, central)
  assert oracle.client_data.client_ids == ["c0", "c1", "c3", "c2"]
  assert oracle.client_sizes == {"c0": 5, "c1": 2, "c3": 2, "c2": 2}


