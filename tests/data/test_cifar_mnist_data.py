"""CIFAR-10/100 and MNIST loaders: canonical archives written here, tfds via
`tfds.testing.mock_data`, McMahan et al. 2017 preprocessing, and the
FederatedDataset contract (also inside a TFF computation)."""

import gzip
import os
import pickle
import struct
import tarfile

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
import tensorflow_federated as tff

from federated_vision.data import client_data
from federated_vision.data import round_keys
from federated_vision.runtime import contexts
from federated_vision.data import partition as P
from federated_vision.data import indexed_splits
from federated_vision.data import archives
from federated_vision.data import cifar
from federated_vision.data import mnist
from federated_vision import tasks
from federated_vision.tasks import partitions
from tests.fixtures.mnist_fixture import write_mnist


def _task_data(cache_dir, seed=0, **data):
  """The real path: a registered task validated and built from DataConfig."""
  config = tasks.DataConfig(**data)
  task = tasks.get_task(config.dataset)
  task.validate(config, tasks.ModelConfig())
  return task.build_data(config, tasks.DataContext(seed, str(cache_dir),
                                                   str(cache_dir)))

PER_BATCH = 4  # CIFAR-10 train: 5 batches of 4 = 20 examples; test 6.


# --- Canonical archive writers (independent of the readers under test). ----

def _cifar_rows(rng, n):
  """uint8 [n, 3072] rows and the [n, 32, 32, 3] images they encode."""
  rows = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
  images = np.zeros((n, 32, 32, 3), np.uint8)
  for ch in range(3):  # Plane ch holds channel ch, row-major 32x32.
    images[..., ch] = rows[:, ch * 1024:(ch + 1) * 1024].reshape(n, 32, 32)
  return rows, images


def _add(tar, name, obj):
  import io
  data = pickle.dumps(obj, protocol=2)  # Like the originals' Python 2 pickles.
  info = tarfile.TarInfo(name)
  info.size = len(data)
  tar.addfile(info, io.BytesIO(data))


def write_cifar10(path, seed=0, skip=None, bad_data_in=None):
  rng = np.random.default_rng(seed)
  train_x, train_y = [], []
  with tarfile.open(path, "w:gz") as tar:
    _add(tar, "cifar-10-batches-py/batches.meta",
         {b"label_names": [f"name{c}".encode() for c in range(10)],
          b"num_cases_per_batch": PER_BATCH})
    for b in list(range(1, 6)) + ["test"]:
      name = f"data_batch_{b}" if b != "test" else "test_batch"
      n = PER_BATCH if b != "test" else 6
      rows, images = _cifar_rows(rng, n)
      labels = [int(v) for v in rng.integers(0, 10, n)]
      if name == bad_data_in:
        rows = rows[:, :100]
      if name != skip:
        _add(tar, f"cifar-10-batches-py/{name}",
             {b"batch_label": name.encode(), b"labels": labels, b"data": rows,
              b"filenames": [b"f.png"] * n})
      if b != "test":
        train_x.append(images)
        train_y += labels
      else:
        test = (images, np.array(labels))
  return np.concatenate(train_x), np.array(train_y), test[0], test[1]


def write_cifar100(path, seed=0):
  rng = np.random.default_rng(seed)
  out = {}
  with tarfile.open(path, "w:gz") as tar:
    _add(tar, "cifar-100-python/meta",
         {b"fine_label_names": [f"f{c}".encode() for c in range(100)],
          b"coarse_label_names": [f"c{c}".encode() for c in range(20)]})
    for split, n in (("train", 12), ("test", 5)):
      rows, images = _cifar_rows(rng, n)
      fine = [int(v) for v in rng.integers(0, 100, n)]
      coarse = [f // 5 for f in fine]
      _add(tar, f"cifar-100-python/{split}",
           {b"data": rows, b"fine_labels": fine, b"coarse_labels": coarse})
      out[split] = (images, np.array(fine), np.array(coarse))
  return out


# --- Archive readers. -------------------------------------------------------

def test_cifar10_archive_order_layout_and_labels(tmp_path):
  path = str(tmp_path / "cifar-10-python.tar.gz")
  tx, ty, ex, ey = write_cifar10(path)
  arrays = cifar.load_arrays_archive(path, "cifar10")
  assert arrays.train_x.shape == (20, 32, 32, 3) and arrays.train_x.dtype == np.uint8
  assert arrays.test_x.shape == (6, 32, 32, 3)
  assert arrays.train_y.dtype == np.int64
  np.testing.assert_array_equal(arrays.train_x, tx)  # Batches 1..5 in order.
  np.testing.assert_array_equal(arrays.train_y, ty)
  np.testing.assert_array_equal(arrays.test_x, ex)
  np.testing.assert_array_equal(arrays.test_y, ey)
  assert arrays.label_names == [f"name{c}" for c in range(10)]
  # The directory holding the archive, and the extracted folder, work too.
  again = cifar.load_arrays_archive(str(tmp_path), "cifar10")
  np.testing.assert_array_equal(again.train_x, tx)
  with tarfile.open(path) as tar:
    tar.extractall(tmp_path / "x")
  extracted = cifar.load_arrays_archive(str(tmp_path / "x"), "cifar10")
  np.testing.assert_array_equal(extracted.test_x, ex)


def test_cifar100_archive_fine_and_coarse(tmp_path):
  path = str(tmp_path / "cifar-100-python.tar.gz")
  ref = write_cifar100(path)
  fine = cifar.load_arrays_archive(path, "cifar100")
  coarse = cifar.load_arrays_archive(path, "cifar100", label_mode="coarse")
  np.testing.assert_array_equal(fine.train_x, ref["train"][0])
  np.testing.assert_array_equal(fine.train_y, ref["train"][1])
  np.testing.assert_array_equal(coarse.train_y, ref["train"][2])
  np.testing.assert_array_equal(fine.test_y, ref["test"][1])
  assert len(fine.label_names) == 100 and len(coarse.label_names) == 20
  assert cifar.num_classes_of("cifar100", "coarse") == 20


def test_cifar_archive_errors_name_the_member(tmp_path):
  with pytest.raises(FileNotFoundError, match="nothing.tar.gz"):
    cifar.load_arrays_archive(str(tmp_path / "nothing.tar.gz"))
  with pytest.raises(FileNotFoundError, match="cifar-10-python.tar.gz"):
    cifar.load_arrays_archive(str(tmp_path))
  missing = str(tmp_path / "m.tar.gz")
  write_cifar10(missing, skip="data_batch_3")
  with pytest.raises(archives.ArchiveError,
                     match="cifar-10-batches-py/data_batch_3 is missing"):
    cifar.load_arrays_archive(missing)
  bad = str(tmp_path / "b.tar.gz")
  write_cifar10(bad, bad_data_in="test_batch")
  with pytest.raises(archives.ArchiveError, match=r"test_batch: b'data' must "
                     r"be uint8 \[N, 3072\]"):
    cifar.load_arrays_archive(bad)
  with pytest.raises(ValueError, match="name"):
    cifar.load_arrays_archive(bad, "cifar11")


def test_pickles_with_arbitrary_globals_are_refused(tmp_path):
  import io
  path = str(tmp_path / "evil.tar.gz")
  data = pickle.dumps({b"label_names": [os.getcwd]}, protocol=2)
  with tarfile.open(path, "w:gz") as tar:
    info = tarfile.TarInfo("cifar-10-batches-py/batches.meta")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
  with pytest.raises(archives.ArchiveError, match="is not allowed"):
    cifar.load_arrays_archive(path)


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_idx_files(tmp_path, gz):
  ref = write_mnist(str(tmp_path), gz=gz)
  arrays = mnist.load_arrays_archive(str(tmp_path))
  assert arrays.train_x.shape == (30, 28, 28, 1) and arrays.train_x.dtype == np.uint8
  assert arrays.test_x.shape == (7, 28, 28, 1)
  np.testing.assert_array_equal(arrays.train_x[..., 0], ref["train"][0])
  np.testing.assert_array_equal(arrays.train_y, ref["train"][1])
  np.testing.assert_array_equal(arrays.test_y, ref["t10k"][1])


def test_mnist_idx_errors(tmp_path):
  write_mnist(str(tmp_path / "bad"), bad_magic=True)
  with pytest.raises(archives.ArchiveError,
                     match="train-images-idx3-ubyte.gz: IDX magic number 2049, "
                     "expected 2051"):
    mnist.load_arrays_archive(str(tmp_path / "bad"))
  with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.gz"):
    mnist.load_arrays_archive(str(tmp_path))
  d = str(tmp_path / "trunc")
  write_mnist(d)
  with gzip.open(os.path.join(d, "t10k-labels-idx1-ubyte.gz"), "wb") as f:
    f.write(struct.pack(">ii", 2049, 9) + b"\x00" * 3)
  with pytest.raises(archives.ArchiveError, match="t10k-labels-idx1-ubyte.gz: "
                     "3 data bytes"):
    mnist.load_arrays_archive(d)


# --- tensorflow-datasets path. ---------------------------------------------

def test_tfds_cifar_and_mnist_with_mock_data(tmp_path):
  with tfds.testing.mock_data(num_examples=12):
    c10 = cifar.load_arrays_tfds("cifar10", data_dir=str(tmp_path))
    c100 = cifar.load_arrays_tfds("cifar100", data_dir=str(tmp_path),
                                  label_mode="coarse")
    mn = mnist.load_arrays_tfds(data_dir=str(tmp_path))
    fd = _task_data(tmp_path, dataset="cifar10", data_dir=str(tmp_path),
                    alpha=1.0, num_clients=3, examples_per_client=4)
  assert c10.train_x.shape == (12, 32, 32, 3) and c10.train_x.dtype == np.uint8
  assert c10.test_y.shape == (12,) and c10.train_y.dtype == np.int64
  assert c10.train_y.max() < 10 and c100.train_y.max() < 20
  assert c10.source.startswith("tfds:cifar10@")
  # Names come from the prepared data's info; the mock has none, so indices.
  assert len(c10.label_names) == 10 and all(isinstance(n, str)
                                            for n in c10.label_names)
  assert len(c100.label_names) == 20
  assert mn.train_x.shape == (12, 28, 28, 1) and mn.test_x.shape == (12, 28, 28, 1)
  assert mn.train_y.max() < 10
  assert fd.client_sizes == {"0": 4, "1": 4, "2": 4}
  assert fd.class_counts.sum() == 12


def test_tfds_id_feature_restores_file_order():
  ids = np.array([b"train_00002", b"train_00000", b"train_00001"])
  np.testing.assert_array_equal(cifar._id_order(ids, "train"), [1, 2, 0])
  assert cifar._id_order(np.array([b"zz", b"train_00000"]), "train") is None
  assert cifar._id_order(np.array([b"train_00000", b"train_00005"]), "train") is None


def test_tfds_absent_names_data_dir(tmp_path):
  empty = str(tmp_path / "no_tfds_here")
  with pytest.raises(FileNotFoundError, match="data_dir='.*no_tfds_here'"):
    cifar.load_arrays_tfds("cifar10", data_dir=empty)
  with pytest.raises(FileNotFoundError, match="data_dir='.*no_tfds_here'"):
    mnist.load_arrays_tfds(data_dir=empty)
  with pytest.raises(ValueError, match="either data_dir"):
    cifar.load_arrays("cifar10", data_dir=empty, archive=empty)


# --- Preprocessing (McMahan et al. 2017). ----------------------------------

def _grey_element(seed=0):
  """Equal channels, so contrast is a global affine map (cancelled by
  standardisation) and the output is a standardised crop, maybe flipped."""
  grey = np.random.default_rng(seed).integers(0, 256, (32, 32, 1), np.uint8)
  return {"x": tf.constant(np.repeat(grey, 3, axis=2)),
          "y": tf.constant(7, tf.int32)}


def _standardise(window):
  return tf.image.per_image_standardization(
      tf.constant(window, tf.float32) / 255.0).numpy()


def test_cifar_eval_is_centre_crop_standardised():
  element = _grey_element()
  out = cifar.eval_map_fn(element)
  assert out["x"].shape == (24, 24, 3) and out["x"].dtype == tf.float32
  assert out["y"].dtype == tf.int32 and int(out["y"]) == 7
  np.testing.assert_allclose(out["x"].numpy(),
                             _standardise(element["x"].numpy()[4:28, 4:28]),
                             atol=1e-5)


def _windows(img):
  """{(row, col, flipped): standardised 24x24 window} for all 162 crops."""
  out = {}
  for i in range(9):
    for j in range(9):
      w = img[i:i + 24, j:j + 24].astype(np.float64) / 255.0
      for f in (0, 1):
        v = w[:, ::-1] if f else w
        out[(i, j, f)] = (v - v.mean()) / max(v.std(), 1 / np.sqrt(v.size))
  return out


def _which_windows(x, windows):
  return {k for k, w in windows.items() if np.allclose(x, w, atol=1e-3)}


def test_cifar_train_augmentation_is_stateless_and_a_crop():
  element = _grey_element(1)
  seed = tf.constant([3, 4], tf.int64)
  a = cifar.train_map_fn(element, seed)["x"].numpy()
  b = cifar.train_map_fn(element, seed)["x"].numpy()
  np.testing.assert_array_equal(a, b)  # Same seed, same output.
  others = [cifar.train_map_fn(element, tf.constant([s, 4], tf.int64))["x"].numpy()
            for s in range(5, 13)]
  assert all(not np.array_equal(a, o) for o in others)
  assert a.shape == (24, 24, 3)
  assert abs(a.mean()) < 1e-4 and a.std() == pytest.approx(1.0, abs=1e-3)
  # a equals the standardised 24x24 window at exactly one offset/flip.
  windows = _windows(element["x"].numpy())
  np.testing.assert_allclose(
      windows[(0, 0, 0)], _standardise(element["x"].numpy()[:24, :24]), atol=1e-5)
  assert len(_which_windows(a, windows)) == 1
  # Across seeds, crops and flips vary.
  found = set()
  for s in range(40):
    x = cifar.train_map_fn(element, tf.constant([s, 0], tf.int64))["x"].numpy()
    hits = _which_windows(x, windows)
    assert len(hits) == 1
    found |= hits
  assert len(found) > 10 and {f for _, _, f in found} == {0, 1}


def test_cifar_train_colour_jitter_changes_colour_images():
  rgb = np.random.default_rng(2).integers(0, 256, (32, 32, 3), np.uint8)
  element = {"x": tf.constant(rgb), "y": tf.constant(1, tf.int32)}
  outs = [cifar.train_map_fn(element, tf.constant([s, 9], tf.int64))["x"].numpy()
          for s in range(6)]
  assert len({o.tobytes() for o in outs}) == 6


def test_cifar_train_pipeline_is_the_tf_tutorials_on_its_0_255_scale():
  """McMahan 2017 §3's preprocessing is the TF CIFAR-10 tutorial's
  (tensorflow/models tutorials/image/cifar10/cifar10_input.py,
  distorted_inputs): random 24x24 crop, random_flip_left_right,
  random_brightness(max_delta=63), random_contrast(lower=0.2, upper=1.8),
  per_image_standardization, on float pixels in [0, 255]. Ours works on
  [0, 1] with max_delta 63/255: the same image for the same draws."""
  rgb = np.random.default_rng(5).integers(0, 256, (32, 32, 3), np.uint8)
  element = {"x": tf.constant(rgb), "y": tf.constant(1, tf.int32)}
  for s in range(4):
    seed = tf.constant([s, 7], tf.int64)
    seeds = tf.random.experimental.stateless_split(seed, 4)
    image = tf.constant(rgb.astype(np.float32))  # The tutorial's 0..255.
    image = tf.image.stateless_random_crop(image, (24, 24, 3), seed=seeds[0])
    image = tf.image.stateless_random_flip_left_right(image, seed=seeds[1])
    image = tf.image.stateless_random_brightness(image, 63, seed=seeds[2])
    image = tf.image.stateless_random_contrast(image, 0.2, 1.8, seed=seeds[3])
    tutorial = tf.image.per_image_standardization(image).numpy()
    ours = cifar.train_map_fn(element, seed)["x"].numpy()
    np.testing.assert_allclose(ours, tutorial, atol=1e-4)
  centre = tf.image.per_image_standardization(tf.image.resize_with_crop_or_pad(
      tf.constant(rgb.astype(np.float32)), 24, 24)).numpy()
  np.testing.assert_allclose(cifar.eval_map_fn(element)["x"].numpy(), centre,
                             atol=1e-4)


def test_mnist_maps_to_unit_float():
  x = np.arange(784, dtype=np.int64).reshape(28, 28, 1) % 256
  element = {"x": tf.constant(x.astype(np.uint8)), "y": tf.constant(3, tf.int32)}
  out = mnist.train_map_fn(element, tf.constant([1, 2], tf.int64))
  assert out["x"].shape == (28, 28, 1) and out["x"].dtype == tf.float32
  np.testing.assert_allclose(out["x"].numpy(), x / 255.0, atol=1e-7)
  assert float(tf.reduce_max(out["x"])) == 1.0
  np.testing.assert_array_equal(mnist.eval_map_fn(element)["x"], out["x"])


# --- FederatedDataset contract. ---------------------------------------------

def test_cifar_federated_from_archive_and_split_csv(tmp_path):
  path = str(tmp_path / "cifar-10-python.tar.gz")
  tx, ty, _, _ = write_cifar10(path)
  fd = _task_data(tmp_path, seed=3, dataset="cifar10", data_source="archive",
                  archive_path=path, alpha=1.0, num_clients=4,
                  examples_per_client=5)
  assert fd.name == "cifar10" and fd.num_classes == 10
  assert fd.input_shape == (24, 24, 3)
  assert fd.client_sizes == {"0": 5, "1": 5, "2": 5, "3": 5}
  part = P.dirichlet_partition(ty, 4, 5, 1.0, seed=3)
  np.testing.assert_array_equal(fd.class_counts, P.class_counts(ty, part, 10))
  assert fd.info["partition"] == "dirichlet" and fd.info["train_examples"] == 20
  spec = fd.client_data.element_type_structure
  assert spec["x"] == tf.TensorSpec([32, 32, 3], tf.uint8)
  assert spec["y"] == tf.TensorSpec([], tf.int32)
  got = list(fd.client_data.create_tf_dataset_for_client("2").as_numpy_iterator())
  np.testing.assert_array_equal(np.stack([e["x"] for e in got]), tx[part["2"]])
  # The same partition via a published-format CSV.
  csv_path = indexed_splits.write_split_csv(str(tmp_path / "s.csv"), part, ty)
  from_csv = _task_data(tmp_path, dataset="cifar10", data_source="archive",
                        archive_path=path, split_csv=csv_path)
  assert from_csv.client_data.client_ids == fd.client_data.client_ids
  np.testing.assert_array_equal(from_csv.class_counts, fd.class_counts)
  test = list(fd.test_data.map(fd.eval_map_fn).batch(10).as_numpy_iterator())
  assert test[0]["x"].shape == (6, 24, 24, 3)
  with pytest.raises(ValueError, match="exactly one of"):
    partitions.make_partition(ty)  # Neither a scheme nor a split CSV.


def test_storage_dir_gives_same_client_data(tmp_path):
  arrays = cifar.synthetic_arrays(40, 5, seed=1)
  part = P.iid_partition(40, 4, seed=0)
  inline = cifar.from_arrays("c", arrays, part, 10)
  stored = cifar.from_arrays("c", arrays, part, 10, storage_dir=str(tmp_path),
                             max_inline_bytes=1)
  assert len(list(tmp_path.rglob("*.tensor"))) == 8  # 4 clients x {x, y}.
  for cid in part:
    a = list(inline.client_data.create_tf_dataset_for_client(cid).as_numpy_iterator())
    b = list(stored.client_data.create_tf_dataset_for_client(cid).as_numpy_iterator())
    assert len(a) == len(b) == 10
    for ea, eb in zip(a, b):
      np.testing.assert_array_equal(ea["x"], eb["x"])
  with pytest.raises(ValueError, match="storage_dir"):
    cifar.from_arrays("c", arrays, part, 10, max_inline_bytes=1)


def test_mnist_federated_schemes(tmp_path):
  write_mnist(str(tmp_path), n_train=40)
  mnist_data = dict(dataset="mnist", data_source="archive",
                    archive_path=str(tmp_path))
  iid = _task_data(tmp_path, **mnist_data, partition="iid", num_clients=4,
                   examples_per_client=10)
  assert iid.client_sizes == {c: 10 for c in "0123"}
  shards = _task_data(tmp_path, **mnist_data, partition="shards",
                      num_clients=4)  # 2 x 4 = 8 shards, 2 per client.
  assert len(shards.client_sizes) == 4
  # 40 labels 0..9 x 4, sorted into 8 shards of 5: each shard spans <= 2
  # classes, each client <= 4.
  assert np.all((shards.class_counts > 0).sum(axis=1) <= 4)
  assert shards.class_counts.sum() == 40
  diri = _task_data(tmp_path, **mnist_data, partition="dirichlet", alpha=0.0,
                    num_clients=4, examples_per_client=4)
  assert np.all((diri.class_counts > 0).sum(axis=1) == 1)
  assert diri.input_shape == (28, 28, 1)
  labels = mnist.load_arrays_archive(str(tmp_path)).train_y
  with pytest.raises(ValueError, match="alpha is required"):
    partitions.make_partition(labels, "dirichlet", num_clients=4,
                              examples_per_client=4)
  with pytest.raises(ValueError, match="scheme"):
    partitions.make_partition(labels, "bogus", num_clients=4)


@pytest.mark.parametrize("twin,raw_shape,input_shape", [
    (lambda d: _task_data(d, dataset="synthetic_cifar10", num_clients=4,
                          examples_per_client=10, alpha=1.0),
     (32, 32, 3), (24, 24, 3)),
    (lambda d: _task_data(d, dataset="synthetic_cifar100", num_clients=4,
                          examples_per_client=30, alpha=1.0),
     (32, 32, 3), (24, 24, 3)),
    (lambda d: _task_data(d, dataset="synthetic_mnist", partition="iid",
                          num_clients=4, examples_per_client=10),
     (28, 28, 1), (28, 28, 1)),
    (lambda d: _task_data(d, dataset="synthetic_mnist", partition="shards",
                          num_clients=4),
     (28, 28, 1), (28, 28, 1)),
])
def test_synthetic_twins_have_the_real_structure(twin, raw_shape, input_shape,
                                                 tmp_path):
  fd = twin(tmp_path)
  spec = fd.client_data.element_type_structure
  assert spec == {"x": tf.TensorSpec(raw_shape, tf.uint8),
                  "y": tf.TensorSpec([], tf.int32)}
  assert fd.input_shape == input_shape
  assert fd.test_data.element_spec == spec
  assert fd.class_counts.shape == (len(fd.client_sizes), fd.num_classes)
  assert fd.class_counts.sum() == sum(fd.client_sizes.values())


def test_training_batches_eager_and_inside_tff_computation(tmp_path):
  fds = {"cifar": _task_data(tmp_path, dataset="synthetic_cifar10",
                             num_clients=4, examples_per_client=7, alpha=1.0),
         "mnist": _task_data(tmp_path, dataset="synthetic_mnist",
                             partition="iid", num_clients=4,
                             examples_per_client=7)}
  spec = client_data.TrainingSpec(batch_size=3, epochs=2, seed=5)
  fns = {k: client_data.build_training_dataset_fn(
      fd.client_data.serializable_dataset_fn, spec, fd.train_map_fn)
         for k, fd in fds.items()}
  key = round_keys.round_key("1", 4)
  eager = {}
  for k, fn in fns.items():
    batches = list(fn(tf.constant(key)).as_numpy_iterator())
    # 7 examples, 2 epochs, each cut into batches of 3, 3, 1.
    assert [len(b["y"]) for b in batches] == [3, 3, 1, 3, 3, 1]
    assert batches[0]["x"].shape[1:] == fds[k].input_shape
    assert batches[0]["x"].dtype == np.float32 and batches[0]["y"].dtype == np.int32
    eager[k] = batches

  def first_batch_computation(fn):
    @tff.tensorflow.computation(tf.string)
    def first_batch(round_key):
      return fn(round_key).take(1).get_single_element()
    return first_batch

  comps = {k: first_batch_computation(fn) for k, fn in fns.items()}
  with contexts.managed_execution_context():
    results = {k: comp(key) for k, comp in comps.items()}
  for k, result in results.items():
    assert str(comps[k].type_signature.result.x.dtype) == "float32"
    assert np.asarray(result["x"]).shape == (3,) + fds[k].input_shape
    # Stateless: the worker computes exactly the eager batch.
    np.testing.assert_allclose(result["x"], eager[k][0]["x"], atol=1e-6)
    np.testing.assert_array_equal(result["y"], eager[k][0]["y"])
