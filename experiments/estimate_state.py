"""`--estimate` for a method with per-client state: the client-state store.

A method whose algorithm keeps values per client across rounds (SCAFFOLD's
control variate c_k, FedDyn's gradient: as many model-sized values as its
built process's store holds, `stateful.TrainingProcess.client_state_copies`,
read by the calibration) writes them under <method dir>/client_states/ (`federated_vision.training.
client_states`): `projected_bytes` = min(K, R x C) clients seen x values per
client x P trainable weights x 4 bytes, where P is the run's model's for its
number of classes (a scaled calibration's twin has other classes, so the
model is built again here for the real ones).
"""

import dataclasses
import os
from typing import Callable, List, Optional, Sequence, Tuple

from federated_vision.experiment import config as config_lib
from federated_vision import tasks
from federated_vision.training import client_states

# Classes of the real data when no --split_csv is given. Hsu, Qi & Brown
# 2020 §4.1: "a balanced training set consisting of 1,203 classes"; §4.2:
# "164,172 images of 2,028 landmarks".
PUBLISHED_CLASSES = {"inaturalist": 1_203, "landmarks": 2_028}


def state_methods(config: config_lib.ExperimentConfig,
                  copies_of: Callable[[str], int]) -> List[Tuple[str, int]]:
  """(name, model-sized values kept per client) of the run's methods with
  client state (`copies_of`: a method name -> what its calibrated process
  keeps)."""
  out = []
  for m in config.methods.expand():
    copies = copies_of(m.name)
    if copies:
      out.append((m.name, copies))
  return out


def real_classes(config: config_lib.ExperimentConfig) -> Optional[int]:
  """Classes of a real-world run's data: its --split_csv's, else published."""
  path = config.data.split_csv
  if path and os.path.isfile(path):
    with open(path) as f:
      return len({line.rstrip("\n").split(",")[2] for line in f.readlines()[1:]})
  return PUBLISHED_CLASSES.get(config.data.dataset)


def model_weights(config: config_lib.ExperimentConfig, num_classes: int,
                  input_shape: Sequence[int]) -> int:
  """P: the trainable weights of the run's Keras model (built, not trained;
  no pretrained weights are read)."""
  task = tasks.get_task(config.data.dataset)
  model = task.build_keras_model_fn(
      dataclasses.replace(config.model, pretrained_weights=None), num_classes,
      tuple(input_shape), config.training.seed)()
  return sum(int(w.shape.num_elements()) for w in model.trainable_weights)


def store_lines(config: config_lib.ExperimentConfig, population: int,
                weights_fn: Callable[[], int],
                copies_of: Callable[[str], int]) -> List[str]:
  """The projection lines of the run's client-state stores (none without
  a method with client state; `weights_fn` is called only then)."""
  methods = state_methods(config, copies_of)
  if not methods:
    return []
  p = weights_fn()
  t = config.training
  per_round = config_lib.clients_per_round(config, population)
  lines = []
  for name, copies in methods:
    size = client_states.projected_bytes(population, t.total_rounds,
                                         per_round, p, copies)
    lines.append(
        f"    {name}: client-state store min(K={population}, R x C="
        f"{t.total_rounds} x {per_round}) clients x {copies} x {p} weights x "
        f"4 bytes = {size} bytes ({size / 1e9:.2f} GB) on disk in "
        f"{name}/{client_states.DIRECTORY}/, read {per_round} clients a round")
  return lines
