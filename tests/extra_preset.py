"""A researcher's own preset, for --extra_modules (issue 27, acceptance 1
(d)): one module, no package file touched.

`my_digits_table`: FedAvg and FedAvg with this module's neighbour's
`clipped_sgd` server optimizer (tests/extra_server_optimizer.py) on digits,
2 rounds, Acc@Round 2 in a two-row table (ours: a test preset; no paper
numbers, so every cell is ours alone), and a figure of both methods' test
accuracy against rounds under it.
"""

import extra_server_optimizer  # pylint: disable=unused-import  (clipped_sgd)
from federated_vision.reproduction import figure_spec
from federated_vision.reproduction import presets
from federated_vision.reproduction import spec

RUN = spec.Run("my_digits_table_run", {
    "dataset": "digits", "methods": ("fedavg", "fedavg@clipped_sgd"),
    "server_clip_norm": 2.0, "total_rounds": 2, "rounds_per_eval": 1,
    "rounds_per_checkpoint": 1, "num_clients": 4, "clients_per_round": 2,
    "client_batch_size": 20, "centralized_epochs": 0, "seed": 3})
ROWS = (("FedAvg", "fedavg"), ("FedAvg, clipped server step",
                               "fedavg@clipped_sgd"))
TABLE = spec.TableSpec(
    ("my_lab", "table1"), "My table: Acc@Round 2 on digits",
    tuple(r for r, _ in ROWS), ("Acc@Round 2",),
    tuple(spec.CellSpec(row, "Acc@Round 2", RUN.name,
                        spec.Metric(spec.ACC_AT_ROUND, 2), method)
          for row, method in ROWS))

FIGURE = figure_spec.FigureSpec(
    "curves", "My figure: test accuracy vs rounds", "ours: the curves behind "
    "my table's cells", (figure_spec.Panel(
        "digits, 4 clients", figure_spec.CURVE, tuple(
            figure_spec.curve(row, RUN.name, method) for row, method in ROWS)),),
    table=TABLE.key)

presets.register_preset(spec.Preset(
    "my_digits_table", "my_lab", "FedAvg vs a clipped server step on digits "
    "(ours: a test preset)", (RUN,), (TABLE,),
    sources={"methods": "ours: the comparison this test preset makes"},
    figures=(FIGURE,)))
