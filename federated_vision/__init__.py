"""federated_vision: federated visual classification on real-world data with TFF.

Reproduces Hsu, Qi & Brown 2020 (FedAvg, FedAvgM, FedIR, FedVC), Hsu et al. 2019
(Dirichlet synthesis, server momentum) and McMahan et al. 2017 (FedAvg / FedSGD).
Modules are imported lazily by users; importing this package does not import
TensorFlow.
"""

__version__ = "0.1.0"
