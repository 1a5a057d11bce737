"""A researcher's sweep over their own hyper-parameter, for --extra_modules
(issue 27: "sweeps register from --extra_modules like presets, with custom
hyper-parameters as axes and report columns").

`my_scale_sweep`: FedAvg with tests/extra_client_variant.py's `scaled`
client work on digits, 1 round, --update_scale in {0.5, 1} (ours: a test
sweep).
"""

import extra_client_variant  # pylint: disable=unused-import  (scaled)
from federated_vision.experiment import sweeps

sweeps.register_sweep(sweeps.Sweep(
    "my_scale_sweep", ("digits",),
    base={"methods": ["fedavg+scaled"], "total_rounds": 1,
          "rounds_per_eval": 1, "num_clients": 4, "clients_per_round": 2,
          "client_batch_size": 20, "centralized_epochs": 0, "seed": 2},
    points=tuple(sweeps.Point(f"scale_{s:g}", {"update_scale": s})
                 for s in (0.5, 1.0))))
