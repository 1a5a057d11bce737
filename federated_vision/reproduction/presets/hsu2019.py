"""Hsu, Qi & Brown 2019 (poster): the CIFAR-10 alpha sweep and FedAvgM's
hyper-parameter sensitivity.

The alpha sweep is sweeps.py's hsu2019_cifar10 grid (FedAvg and FedAvgM share
one run per alpha, so both see the same partition and EMD). The sensitivity
grid (client learning rate x server momentum at alpha = 1, E = 1, 5 of 100
clients a round) follows the grid of Flower's FedAvgM baseline, which
reproduces the paper's sensitivity figure; it is not read from the paper.
"""

from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import _common as c

PAPER = "hsu2019"
SENSITIVITY_LRS = (0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3)
SENSITIVITY_MOMENTA = (0.7, 0.9, 0.97, 0.99, 0.997)


def cifar10_alpha() -> spec.Preset:
  runs = tuple(c.cifar_alpha_run("cifar10", a) for a in c.CIFAR10_ALPHAS)
  table = c.alpha_table(
      (PAPER, "cifar10_alpha"), "CIFAR-10 accuracy over alpha, FedAvg vs "
      "FedAvgM", (("cifar10", "", c.CIFAR10_ALPHAS, "central_cifar10"),))
  return spec.Preset(
      "hsu2019_cifar10_alpha", PAPER,
      "CIFAR-10 over K = 100 clients of 500 examples with Dirichlet(alpha) "
      "class distributions, FedAvg vs FedAvgM (server momentum 0.9).",
      runs + (c.cifar_centralized("cifar10"),), (table,),
      notes=("Client learning rate 0.05 and momentum 0.9 for every alpha "
             "(ours); the paper's 30.1% / 76.9% at alpha = 0 come from tuned "
             "hyper-parameters.",))


def sensitivity() -> spec.Preset:
  runs = []
  for lr, beta in c.product(SENSITIVITY_LRS, SENSITIVITY_MOMENTA):
    flags = dict(c.CIFAR_BASE, dataset="cifar10", alpha=1.0,
                 algorithm=("fedavgm",), clients_per_round=5,
                 client_learning_rate=lr, server_momentum=beta)
    runs.append(c.federated(
        f"cifar10_sensitivity_alpha_1_lr{c.number(lr)}_m{c.number(beta)}",
        c.TFDS_DATA, **flags))
  baseline = c.cifar_centralized("cifar10")
  study = spec.StudySpec(
      "sensitivity", "FedAvgM sensitivity: relative accuracy vs the effective "
      "learning rate eta/(1 - beta), one line per beta (alpha = 1)",
      spec.SENSITIVITY, tuple(r.name for r in runs), "fedavgm",
      "client_learning_rate", (), baseline.name)
  return spec.Preset(
      "hsu2019_sensitivity", PAPER,
      "FedAvgM over client learning rate x server momentum on CIFAR-10, "
      "alpha = 1, E = 1, 5 clients a round (C = 0.05), 10,000 rounds.",
      tuple(runs) + (baseline,), studies=(study,),
      notes=("Grid from Flower's FedAvgM baseline (a reproduction of the "
             "paper's figure), not from the paper's text.",))


PRESETS = (cifar10_alpha, sensitivity)
