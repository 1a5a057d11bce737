"""Shared data path of the in-memory image tasks (CIFAR, MNIST, twins).

Real data come from a prepared tensorflow-datasets directory (--data_dir) or
the canonical archive files (--archive_path); the synthetic twins are random
images with the same element structure. Clients come from
`tasks.partitions.make_partition` (the one dispatcher).
"""

import os
from typing import Callable, NamedTuple

import numpy as np

from federated_vision.errors import ConfigError, bad, one_line
from federated_vision.tasks import base
from federated_vision.tasks import partitions

SYNTHETIC_TEST_EXAMPLES = 40
REAL_READS = frozenset({"data_source", "data_dir", "archive_path", "partition",
                        "num_clients", "examples_per_client", "split_csv",
                        "alpha"})
SYNTHETIC_READS = REAL_READS - {"data_source", "data_dir", "archive_path"}


class ArraySource(NamedTuple):
  """How one family reads its arrays and wraps them as a FederatedDataset.

  Attributes:
    tfds_name: the tensorflow-datasets name (for messages).
    load_tfds: `(data_dir) -> archives.ImageArrays`.
    load_archive: `(archive_path) -> archives.ImageArrays`.
    synthetic: `(num_train, num_test, seed) -> archives.ImageArrays`.
    from_arrays: `(name, arrays, partition, storage_dir, info) ->
      FederatedDataset`.
  """
  tfds_name: str
  load_tfds: Callable
  load_archive: Callable
  synthetic: Callable
  from_arrays: Callable


def check_real(task, data, given) -> None:
  """--data_source / --data_dir / --archive_path of a real array task."""
  if data.data_source not in ("tfds", "archive"):
    raise bad("data_source", data.data_source, "must be one of tfds, archive")
  if data.archive_path is not None and data.data_source != "archive":
    raise bad("archive_path", data.archive_path,
              "only read with --data_source=archive")
  if data.data_source == "archive":
    if not data.archive_path:
      raise ConfigError(f"--data_source=archive needs --archive_path (the "
                        f"canonical {task.name} archive file or directory)",
                        "archive_path")
    if data.data_dir is not None:
      raise bad("data_dir", data.data_dir, "only read with --data_source=tfds "
                "(not with --archive_path)")
    if not os.path.exists(data.archive_path):
      raise bad("archive_path", data.archive_path, "does not exist")
  elif data.data_dir is not None and not os.path.isdir(data.data_dir):
    raise bad("data_dir", data.data_dir, "not a directory (the "
              "tensorflow-datasets data_dir holding a prepared "
              f"{task.name})")
  check_split(task, data, given)


def check_split(task, data, given) -> None:
  """--split_csv replaces --partition and must exist."""
  del task
  if data.split_csv is None:
    return
  if "partition" in given:
    raise ConfigError("--split_csv and --partition: give only one (the CSV "
                      "is the partition)", "split_csv")
  if not os.path.isfile(data.split_csv):
    raise bad("split_csv", data.split_csv, "no such file")


def real_unused(task, data):
  """`Task.unused` of a real array task: the scheme's (`base.scheme_unused`),
  the clients' K and n with a split CSV (its rows are the clients and their
  examples; the twins use them to size their random images), and the source
  --data_source does not read."""
  out = base.scheme_unused(task, data)
  if data.split_csv is not None:
    for name in ("num_clients", "examples_per_client"):
      out[name] = "--split_csv gives the clients and their examples"
  if data.data_source == "archive":
    out["data_dir"] = "--data_source=archive reads --archive_path"
  else:
    out["archive_path"] = f"--data_source={data.data_source} reads --data_dir"
  return out


def _arrays(task, source: ArraySource, data, resolved, seed: int):
  if task.name.startswith("synthetic_"):
    k, n = resolved["num_clients"], task.examples_per_client
    if resolved["partition"] == "shards":
      n_train = 2 * k * max(n // 2, 1)
    else:
      n_train = k * (resolved["examples_per_client"] or n)
    return source.synthetic(n_train, SYNTHETIC_TEST_EXAMPLES, seed)
  from federated_vision.data import archives  # pylint: disable=g-import-not-at-top
  try:
    if data.data_source == "archive":
      return source.load_archive(data.archive_path)
    return source.load_tfds(data.data_dir)
  except (FileNotFoundError, archives.ArchiveError, ValueError) as e:
    if data.data_source == "archive":
      raise bad("archive_path", data.archive_path,
                f"cannot read {task.name} ({one_line(e)})") from None
    raise bad("data_dir", data.data_dir, f"tensorflow-datasets "
              f"{source.tfds_name!r} is not prepared there (nothing is "
              "downloaded; prepare it with tfds or use --data_source=archive "
              "--archive_path=...)") from None


def build(task, source: ArraySource, data, resolved, context):
  """Arrays -> partition (or split CSV) -> FederatedDataset."""
  arrays = _arrays(task, source, data, resolved, context.seed)
  k, n = resolved["num_clients"], resolved["examples_per_client"]
  try:
    part, info = partitions.make_partition(
        arrays.train_y, None if data.split_csv else data.partition,
        split_csv=data.split_csv, num_clients=k, examples_per_client=n,
        alpha=data.alpha, seed=context.seed)
  except (FileNotFoundError, ValueError) as e:
    if data.split_csv:
      raise bad("split_csv", data.split_csv, one_line(e)) from None
    raise ConfigError(
        f"--partition={data.partition} with --num_clients={k}"
        f"{'' if n is None else f' --examples_per_client={n}'}: "
        f"{one_line(e)}", "partition") from None
  # The prior p the partition was drawn around (Hsu et al. 2019): the training
  # labels' class distribution; EMD is also reported against it when the
  # clients' population distribution differs (`partition.emd_stats`).
  prior = np.bincount(np.asarray(arrays.train_y, np.int64))
  info = dict(info, class_prior=[float(v) for v in prior / prior.sum()])
  return source.from_arrays(task.name, arrays, part,
                            os.path.join(context.cache_dir, ".client_data"),
                            info)
