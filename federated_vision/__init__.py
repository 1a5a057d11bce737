"""federated_vision: federated visual classification on real-world data with TFF.

Reproduces Hsu, Qi & Brown 2020 (FedAvg, FedAvgM, FedIR, FedVC), Hsu et al. 2019
(Dirichlet synthesis, server momentum) and McMahan et al. 2017 (FedAvg / FedSGD).
Modules are imported lazily by users; importing this package does not import
TensorFlow.

Layout: `algorithms/` (learning processes, client samplers), `data/` (ClientData,
partitions, split files, data set loaders), `evaluation/` (metrics,
rounds-to-target, reports), `models/`, `realworld/` (iNaturalist / Landmarks
split builders and loaders), `tasks/` (data set + model registry),
`methods.py` (algorithm / client-work / data-side variant registry),
`errors.py`, `registry.py`, `runtime/` (the managed TFF workers and contexts;
`runtime.install()`),
`training_loop.py` (its parts in `training/`), `centralized.py`.
"""

import importlib

__version__ = "0.1.0"

# Modules that moved into subpackages stay importable by their old names
# (`from federated_vision import client_data`), loaded on first use.
_MOVED = {
    "client_data": "federated_vision.data.client_data",
    "partition": "federated_vision.data.partition",
    "split_io": "federated_vision.data.split_io",
    "sampling": "federated_vision.algorithms.sampling",
    "metrics": "federated_vision.evaluation.metrics",
    "convergence": "federated_vision.evaluation.convergence",
    "reporting": "federated_vision.evaluation.reporting",
    "partition_report": "federated_vision.evaluation.partition_report",
}


def __getattr__(name):
  if name in _MOVED:
    return importlib.import_module(_MOVED[name])
  raise AttributeError(f"module 'federated_vision' has no attribute {name!r}")
