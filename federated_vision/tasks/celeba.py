"""CelebA smiles (Augenstein et al.): TFF's SQLite, smiling clients only.

`--dataset=celeba --celeba_cache_dir=DIR` reads `DIR/celeba.sqlite` through
`tff.simulation.datasets.celeba.load_data` (`data.celeba.load_scenario`):
the federated clients hold the train celebrities' smiling images, the server
(--mixing) every unsmiling image of the same celebrities, and the test
clients both. Default model `celeba_cnn`; `mobilenet_v2_gn` selectable.
The task owns its config section (`CelebaOptions`, `config_fields`).
"""

import dataclasses
from typing import Optional

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad, one_line
from federated_vision.tasks import base


@dataclasses.dataclass(frozen=True)
class CelebaOptions:
  """CelebA's own data settings (`--dataset=celeba`).

  Attributes:
    celeba_cache_dir: directory holding TFF's celeba.sqlite (ours: TFF's
      loader reads it; nothing is downloaded, so it is required).
  """
  celeba_cache_dir: Optional[str] = config_fields.option(
      None, "the directory holding TFF's celeba.sqlite (read by "
      "tff.simulation.datasets.celeba.load_data; nothing is downloaded).")


def _check(task, data, given):
  del task, given
  if data.celeba_cache_dir is None:
    raise ConfigError("--celeba_cache_dir: required by --dataset=celeba (the "
                      "directory holding TFF's celeba.sqlite)",
                      "celeba_cache_dir")


def _scenario(task, data, resolved, context, missing_classes):
  del task, resolved
  from federated_vision.data import celeba  # pylint: disable=g-import-not-at-top
  if missing_classes is not None:
    raise ConfigError("--missing_classes: not used by --dataset=celeba (the "
                      "clients hold smiling images, the server unsmiling "
                      "ones)", "missing_classes")
  try:
    return celeba.load_scenario(data.celeba_cache_dir,
                                index_dir=context.cache_dir)
  except (FileNotFoundError, ValueError) as e:
    raise bad("celeba_cache_dir", data.celeba_cache_dir, one_line(e)) from None


def _data(task, data, resolved, context):
  return _scenario(task, data, resolved, context, None).federated


base.register_task(base.Task(
    "celeba", "celeba", "celeba_cnn", _data,
    partitions=("celebrity",),
    check=_check, scenario_fn=_scenario, mixing_reads=frozenset(),
    options=CelebaOptions,
    description="TFF's CelebA (celeba.sqlite, split by celebrity): smiling "
                "images on the clients, unsmiling on the server (--mixing)"))
