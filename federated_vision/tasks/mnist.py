"""MNIST (McMahan et al. 2017) and its synthetic twin."""

from federated_vision.tasks import arrays
from federated_vision.tasks import base
from federated_vision.tasks import presence


def _source() -> arrays.ArraySource:
  from federated_vision.data import mnist  # pylint: disable=g-import-not-at-top
  return arrays.ArraySource(
      "mnist", mnist.load_arrays_tfds, mnist.load_arrays_archive,
      lambda n_train, n_test, seed: mnist.synthetic_arrays(
          max(n_train, mnist.NUM_CLASSES), n_test, seed),
      lambda task_name, a, part, storage, info: mnist.from_arrays(
          task_name, a, part, storage_dir=storage, info=info))


def _data(task, data, resolved, context):
  return arrays.build(task, _source(), data, resolved, context)


base.register_task(base.Task(
    "mnist", "mnist", "mnist_cnn", _data, reads=arrays.REAL_READS,
    num_clients=100, examples_per_client=600, check=arrays.check_real,
    unused=arrays.real_unused,
    description="MNIST 28x28x1; McMahan et al. 2017: K = 100 (iid 600 each, "
                "or 200 shards of 300)",
    presence=presence.missing_tfds))
base.register_task(base.Task(
    "synthetic_mnist", "mnist", "mnist_cnn", _data,
    reads=arrays.SYNTHETIC_READS, num_clients=10, examples_per_client=20,
    check=arrays.check_split,
    description="random-image twin of mnist (same elements and model)"))
