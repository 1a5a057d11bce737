"""federated_vision: federated visual classification on real-world data with TFF.

Reproduces Hsu, Qi & Brown 2020 (FedAvg, FedAvgM, FedIR, FedVC), Hsu et al. 2019
(Dirichlet synthesis, server momentum), McMahan et al. 2017 (FedAvg / FedSGD)
and Augenstein et al. (mixing federated and centralized data). Importing this
package imports nothing else (not TensorFlow); import the subpackages you use.

Layout (docs/layout.md): `experiment/` (the config, `runner.run`, sweeps,
reports), `methods/` (declaring, naming, validating and building methods),
`algorithms/` (one module per method: maths, TFF composition,
declaration), `learning/` (what the algorithms share: the local step, client
groups, FedAvg's composition, the stateful-round research API, numpy
references), `mixing/` (Augenstein et al.'s strategies), `tasks/` (data set
+ model registries), `data/` (ClientData, partitions, split files,
loaders), `models/`, `evaluation/` (metrics, rounds-to-target, reports),
`realworld/` (iNaturalist / Landmarks split builders and loaders),
`reproduction/` (the papers' tables as presets), `runtime/` (the managed
TFF workers and contexts), `training/` and `training_loop.py` (the round
loop), `centralized.py`, `config_fields.py` (declared settings -> flags),
`registry.py`, `errors.py`.
"""

__version__ = "0.1.0"
