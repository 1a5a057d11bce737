"""Task registry: `get_task(name)`, `register_task(Task(...))`, `task_names()`.

Importing this package registers the built-in tasks (digits, cifar10/100,
mnist, inaturalist, landmarks and their synthetic_* twins, celeba,
shakespeare and its twin) without importing
TensorFlow; a task imports its loaders when it builds data.
"""

from federated_vision.tasks.base import DataConfig
from federated_vision.tasks.base import DataContext
from federated_vision.tasks.base import data_fields
from federated_vision.tasks.base import Task
from federated_vision.tasks.base import get_task
from federated_vision.tasks.base import register_task
from federated_vision.tasks.base import scenario_task_names
from federated_vision.tasks.base import task_names
from federated_vision.tasks.models import ModelConfig
from federated_vision.tasks.models import ModelSpec
from federated_vision.tasks.models import register_model
from federated_vision.tasks import digits as _digits  # pylint: disable=unused-import
from federated_vision.tasks import cifar as _cifar  # pylint: disable=unused-import
from federated_vision.tasks import mnist as _mnist  # pylint: disable=unused-import
from federated_vision.tasks import realworld as _realworld  # pylint: disable=unused-import
from federated_vision.tasks import celeba as _celeba  # pylint: disable=unused-import
from federated_vision.tasks import shakespeare as _shakespeare  # pylint: disable=unused-import
