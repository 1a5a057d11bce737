"""CIFAR-10 / CIFAR-100 (Hsu, Qi & Brown 2019) and their synthetic twins."""

import functools

from federated_vision.tasks import arrays
from federated_vision.tasks import base
from federated_vision.tasks import presence


def _source(name: str) -> arrays.ArraySource:
  from federated_vision.data import cifar  # pylint: disable=g-import-not-at-top
  num_classes = cifar.NUM_CLASSES[name]
  return arrays.ArraySource(
      name, functools.partial(cifar.load_arrays_tfds, name),
      lambda path: cifar.load_arrays_archive(path, name),
      lambda n_train, n_test, seed: cifar.synthetic_arrays(
          max(n_train, num_classes), n_test, num_classes, seed),
      lambda task_name, a, part, storage, info: cifar.from_arrays(
          task_name, a, part, num_classes, storage_dir=storage, info=info))


def _data(name):
  return lambda task, data, resolved, context: arrays.build(
      task, _source(name), data, resolved, context)


for _name in ("cifar10", "cifar100"):
  base.register_task(base.Task(
      _name, "cifar", "cifar_cnn", _data(_name), reads=arrays.REAL_READS,
      num_clients=100, examples_per_client=500, check=arrays.check_real,
      unused=arrays.real_unused,
      description=f"{_name.upper()}, 24x24 crops; Hsu et al. 2019: K = 100 "
                  "clients of 500",
      presence=presence.missing_tfds))
  base.register_task(base.Task(
      f"synthetic_{_name}", "cifar", "cifar_cnn", _data(_name),
      reads=arrays.SYNTHETIC_READS, num_clients=10, examples_per_client=20,
      check=arrays.check_split,
      description=f"random-image twin of {_name} (same elements and model)"))
