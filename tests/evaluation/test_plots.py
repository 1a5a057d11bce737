"""Loss plot and configuration titles of train_main's plots."""

import os

import pytest

from federated_vision.experiment import config as config_lib
from federated_vision.experiment import outputs
from federated_vision.evaluation import reporting

ROWS = [{"round": 1, "train_loss": 2.0, "test_loss": "", "test_accuracy": ""},
        {"round": 2, "train_loss": 1.5, "test_loss": 1.75, "test_accuracy": 0.4},
        {"round": 3, "train_loss": "1.25", "test_loss": None},
        {"round": 4, "train_loss": 1.0, "test_loss": "1.5", "test_accuracy": 0.6}]


def test_loss_curves_exact():
  (rx, train), (ex, test) = reporting.loss_curves(ROWS)
  assert rx == [1.0, 2.0, 3.0, 4.0] and train == [2.0, 1.5, 1.25, 1.0]
  assert ex == [2.0, 4.0] and test == [1.75, 1.5]


def test_plot_loss_and_titled_accuracy_write_pngs(tmp_path):
  runs = {"fedavg": ROWS, "fedavgm": ROWS[:2]}
  for path in (reporting.plot_loss(runs, str(tmp_path / "loss.png"), "t"),
               reporting.plot_accuracy(runs, str(tmp_path / "a.png"),
                                       title="t\nu")):
    with open(path, "rb") as f:
      assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(path) > 5000


def _settings(algorithm, optimizer, b=10, e=1, **extra):
  """A method's recorded settings, as `methods.build_method` records them."""
  return dict(algorithm=algorithm, variants=[], E=e, B=b or None,
              client_learning_rate=0.05, server_optimizer=optimizer,
              server_learning_rate=1.0, **extra)


@pytest.mark.parametrize("values, methods, want", [
    ({}, {"fedavg": _settings("fedavg", "sgd", server_momentum=0.0),
          "fedavgm": _settings("fedavgm", "sgdm", server_momentum=0.9)},
     "digits (digits_cnn), K=20 dirichlet α=0.5, EMD 1.52\n"
     "10 clients/round, E=1, B=10, client lr 0.05, server lr 1, seed 0\n"
     "fedavg: server sgd\n"
     "fedavgm: server sgdm, server_momentum 0.9"),
    ({"algorithm": ["fedavg"], "partition": "shards", "client_batch_size": 0,
      "client_epochs": 5, "seed": 3, "clients_per_round": 4},
     {"fedavg": _settings("fedavg", "sgd", b=0, e=5)},
     "digits (digits_cnn), K=20 shards, EMD 1.52\n"
     "4 clients/round, E=5, B=∞, client lr 0.05, server sgd, server lr 1, "
     "seed 3"),
])
def test_plot_title_names_the_configuration(values, methods, want):
  # Each method's line shows its own settings (issue 27: a custom method's
  # title used to show FedAvgM's momentum and the shared server lr).
  config = config_lib.from_values(values)
  assert outputs.plot_title(config, config_lib.resolve(config), 1.516,
                           methods) == want
