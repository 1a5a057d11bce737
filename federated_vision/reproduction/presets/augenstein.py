"""Augenstein et al. 2021, Figure 1: the five CelebA scenarios.

Federated clients hold only their smiling portraits, the server holds the
unsmiling ones; a smiling classifier is trained with no mixing, parallel
training, example transfer, gradient transfer, or the oracle (all data
federated): --dataset=celeba --celeba_cache_dir=DIR and
--mixing=none|parallel|example_transfer|gradient_transfer|oracle, one run per
scenario (each its own summary.json, method `fedavg+<strategy>`).
"""

from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import _common as c

PAPER = "augenstein2021"
# --mixing value -> the figure's label.
SCENARIOS = (("none", "no mixing"), ("parallel", "parallel training"),
             ("example_transfer", "example transfer"),
             ("gradient_transfer", "gradient transfer"), ("oracle", "oracle"))
# Per-label test accuracies each mixing method's summary.json entry holds
# (`experiments.runner.mixing_summary`).
LABEL_ACCURACY_FIELDS = (("smiling", "accuracy_smiling"),
                         ("unsmiling", "accuracy_unsmiling"))
CELEBA_DATA = ("celeba_cache_dir",)


def figure1() -> spec.Preset:
  runs, cells = [], []
  columns = ("overall",) + tuple(label for label, _ in LABEL_ACCURACY_FIELDS)
  for mixing, row in SCENARIOS:
    method = f"fedavg+{mixing}"
    run = c.federated(
        f"celeba_mixing_{mixing}", CELEBA_DATA, (CELEBA_DATA,),
        dataset="celeba", mixing=(mixing,),
        algorithm=("fedavg",), clients_per_round=10, client_epochs=1,
        client_batch_size=16, client_learning_rate=0.05,
        server_learning_rate=1.0, server_momentum=0.9, total_rounds=1000,
        rounds_per_eval=50, rounds_per_checkpoint=50)
    runs.append(run)
    cells.append(spec.CellSpec(row, "overall", run.name,
                               spec.Metric(spec.FINAL_ACCURACY), method))
    cells += [spec.CellSpec(row, label, run.name,
                            spec.Metric(spec.METHOD_FIELD, key=field), method)
              for label, field in LABEL_ACCURACY_FIELDS]
  table = spec.TableSpec(
      (PAPER, "figure1"), "Figure 1: CelebA smiling classifier, test accuracy "
      "overall and per label", tuple(r for _, r in SCENARIOS), columns,
      tuple(cells))
  return spec.Preset(
      "augenstein_figure1", PAPER,
      "The five CelebA scenarios of the mixing paper: federated clients hold "
      "only smiling portraits, the server only unsmiling ones.",
      tuple(runs), (table,),
      notes=("All hyper-parameters are ours (FedAvg, 10 clients a round, "
             "E = 1, B = 16, lr 0.05, 1,000 rounds); the strategies' own "
             "settings (K, merge weight, M, lambda) are train_main's "
             "defaults. The figure is a plot: no published numbers.",))


PRESETS = (figure1,)
