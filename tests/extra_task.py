"""A task with its own config field, for --extra_modules (issue 17, item 3;
acceptance check 4 (c)).

`toy_synth`: random 4x4 images of --toy_num_classes classes (ours: a test
data set), made learnable by shifting one pixel by 2 x the class; 5 clients
of 12 examples from a Dirichlet(--alpha) partition, 30 test examples. The
task declares --toy_num_classes as its config section
(`federated_vision.config_fields`): the flag, its --help line and its check
come from that declaration alone.
"""

import dataclasses

import numpy as np

from federated_vision import config_fields
from federated_vision import tasks
from federated_vision.errors import bad

NAME = "toy_synth"
NUM_TEST = 30


@dataclasses.dataclass(frozen=True)
class ToyOptions:
  """toy_synth's own data settings.

  Attributes:
    toy_num_classes: classes C of the synthetic labels (ours: test data).
  """
  toy_num_classes: int = config_fields.option(
      3, "classes of the synthetic labels, in [2, 10].", lower_bound=2)

  def validate(self) -> None:
    if not 2 <= self.toy_num_classes <= 10:
      raise bad("toy_num_classes", self.toy_num_classes, "must be in [2, 10]")


def labels(num_classes, k, n, seed):
  """The task's labels (train k*n, then NUM_TEST test) and images."""
  rng = np.random.default_rng(seed)
  y = rng.integers(0, num_classes, k * n + NUM_TEST)
  x = rng.normal(size=(len(y), 4, 4, 1)).astype(np.float32)
  x[:, 0, 0, 0] += 2 * y
  return x, y


def _data(task, data, resolved, context):
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  from federated_vision.data import partition  # pylint: disable=g-import-not-at-top
  c = data.options.section(task.name).toy_num_classes
  k, n = resolved["num_clients"], resolved["examples_per_client"]
  x, y = labels(c, k, n, context.seed)
  part = partition.dirichlet_partition(y[:k * n], k, n, data.alpha,
                                       seed=context.seed)
  return digits.from_arrays(task.name, x[:k * n], y[:k * n], x[k * n:],
                            y[k * n:], part, c,
                            info={"partition": "dirichlet",
                                  "alpha": data.alpha})


def _model(config, resolved, num_classes, input_shape, seed):
  del config, resolved
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=input_shape),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(num_classes, kernel_initializer=
                            tf.keras.initializers.GlorotUniform(seed=seed))])


tasks.register_model(tasks.ModelSpec("toy_synth_dense", (NAME,), _model))
tasks.register_task(tasks.Task(
    NAME, NAME, "toy_synth_dense", _data,
    reads=frozenset({"num_clients", "examples_per_client", "alpha",
                     "partition"}),
    num_clients=5, examples_per_client=12, partitions=("dirichlet",),
    options=ToyOptions, description="synthetic 4x4 test images"))
