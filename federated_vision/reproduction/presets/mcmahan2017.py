"""McMahan et al. 2017: Table 1 (effect of C), Table 2 (E x B vs FedSGD, MNIST
CNN) and Table 4 (the same for the MNIST 2NN, Appendix A).

Issue 12 calls the C table "Table 2"; in the paper (AISTATS / arXiv v3) it is
Table 1 and Table 2 is the E x B grid with speedups over FedSGD. Both are
here under the paper's numbering: `mcmahan2017_table1`, `mcmahan2017_table2`
(with its Shakespeare LSTM rows and Figure 2's LSTM panels:
`mcmahan2017_shakespeare`, which also holds Figure 3's preset), and `mcmahan2017_table4` is Table 4 of Appendix A
(the 2NN).

MNIST, K = 100; IID = 600 random examples per client, non-IID = 2 of 200
label-sorted shards of 300. Target test accuracy 97% (2NN) / 99% (CNN);
rounds to target are McMahan's (best-so-far curve, linear interpolation).
FedSGD is E = 1, B = inf (the paper's §2 definition), trained as
--algorithm=fedsgd; every other (E, B) is FedAvg. Each setting's source is in
the preset's `sources` (`MCMAHAN_SOURCES` plus each table's own).
"""

from typing import Optional

from federated_vision.reproduction import claim_spec
from federated_vision.reproduction import lr_grid
from federated_vision.reproduction import published
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import _common as c
from federated_vision.reproduction.presets import mcmahan2017_figures as figs
from federated_vision.reproduction.presets import mcmahan2017_shakespeare as shakespeare

# McMahan et al. 2017: K = 100 clients, IID (600 examples each) or
# pathological non-IID (200 label-sorted shards of 300, 2 per client).
MCMAHAN_TARGETS = {"mnist_2nn": 0.97, "mnist_cnn": 0.99}
# Budgets above the largest published round count (2NN 4278, CNN 1181).
MCMAHAN_ROUNDS = {"mnist_2nn": 5000, "mnist_cnn": 2000}
MCMAHAN_LR = {"mnist_2nn": 0.1, "mnist_cnn": 0.1}
MCMAHAN_PARTITIONS = {"IID": "iid", "non-IID": "shards"}

_MCMAHAN_PARTITION_QUOTE = (
    "McMahan 2017 §3: \"IID, where the data is shuffled, and then "
    "partitioned into 100 clients each receiving 600 examples, and Non-IID, "
    "where we first sort the data by digit label, divide it into 200 shards "
    "of size 300, and assign each of 100 clients 2 shards.\"")
# Sources of McMahan's MNIST runs (`mcmahan_run`); Tables 1-2 add theirs.
MCMAHAN_SOURCES = {
    "dataset": "McMahan 2017 §3: \"The first two are for the MNIST digit "
               "recognition task\"",
    "model": "McMahan 2017 §3: \"A simple multilayer-perceptron with "
             "2-hidden layers with 200 units each using ReLu activations "
             "[...] which we refer to as the MNIST 2NN. 2) A CNN with two 5x5 "
             "convolution layers (the first with 32 channels, the second with "
             "64, each followed with 2x2 max pooling), a fully connected "
             "layer with 512 units and ReLu activation, and a final softmax "
             "output layer\" (mnist_2nn, mnist_cnn)",
    "partition": _MCMAHAN_PARTITION_QUOTE + " (iid, shards)",
    "num_clients": _MCMAHAN_PARTITION_QUOTE,
    "examples_per_client": _MCMAHAN_PARTITION_QUOTE + " (IID runs only; "
                           "shards fix the client size)",
    "algorithm": "McMahan 2017 §2: \"at one endpoint of this algorithm "
                 "family, we can take [...] which corresponds exactly to "
                 "FedSGD\" (B = ∞, E = 1); every other (E, B) is "
                 "FedAvg (\"We term this approach FederatedAveraging (or "
                 "FedAvg)\"); fedsgd for E = 1, B = ∞, else fedavg",
    "client_learning_rate": spec.OURS + "McMahan 2017 §3 tunes it per "
                            "setting (\"training over a sufficiently wide "
                            "grid of learning rates (typically 11-13 values "
                            "[...])\", \"the best performing rate selected "
                            "individually\") and prints no chosen rate; we "
                            "train 0.1 for every (C, E, B), the rate of §2's "
                            "Figure 1 (\"a fixed learning rate of 0.1\")",
    "server_learning_rate": "McMahan 2017 §2: \"the server then takes a "
                            "weighted average of the resulting models\" "
                            "(server learning rate 1.0)",
    "target_accuracy": "McMahan 2017 §3: \"We report the number of "
                       "communication rounds necessary to achieve a target "
                       "test-set accuracy.\" The targets, 97% (2NN) and 99% "
                       "(CNN), as the transcription published.py cites reads "
                       "Tables 1-2 (lost in this extraction)",
    "total_rounds": spec.OURS + "the paper reports rounds to the target, "
                    "not its budget; 2NN 5,000 / CNN 2,000 exceed every "
                    "published count (at most 4,278 / 1,181)",
    "rounds_per_eval": spec.OURS + "§3 interpolates rounds-to-target between "
                       "evaluated points (\"using linear interpolation "
                       "between the discrete points forming the curve\") "
                       "without a cadence; every round",
    "rounds_per_checkpoint": spec.OURS + "operational (resuming); not a "
                             "setting of the paper",
    "centralized_epochs": spec.OURS + "0: Tables 1-2 compare no centralized "
                          "baseline",
    "weight_decay": spec.OURS + "McMahan 2017 states no weight decay; 0",
    "full_train_loss": "McMahan 2017 §3: \"FedAvg is effective at "
                       "optimizing the training loss as well\" [...] "
                       "\"present plots for the MNIST CNN in Figure 6 in "
                       "Appendix A\" (on in the CNN runs at C = 0.1, Table "
                       "2's grid, which Figure 6 draws; ours: which runs)",
}


def mcmahan_run(model: str, partition: str, fraction: float, e: int,
                b: Optional[int]) -> spec.Run:
  """McMahan's (C = fraction, E, B) on MNIST; b=None is B = inf. E = 1, B = inf is
  FedSGD (McMahan 2017 §2), trained as --algorithm=fedsgd; else FedAvg.
  No server momentum: neither algorithm reads it."""
  fedsgd = e == 1 and b is None
  flags = {"dataset": "mnist", "model": model, "partition": partition,
           "num_clients": 100,
           "algorithm": ("fedsgd",) if fedsgd else ("fedavg",),
           "client_fraction": fraction,
           "client_learning_rate": MCMAHAN_LR[model],
           "server_learning_rate": 1.0,
           "target_accuracy": MCMAHAN_TARGETS[model],
           "total_rounds": MCMAHAN_ROUNDS[model], "rounds_per_eval": 1,
           "rounds_per_checkpoint": 50}
  if not fedsgd:  # FedSGD is E = 1, B = inf by definition: it reads neither.
    flags.update(client_epochs=e, client_batch_size=0 if b is None else b)
  if model == "mnist_cnn":  # The 2NN has no weight decay to set.
    flags.update(c.NO_WEIGHT_DECAY)
  if model == "mnist_cnn" and fraction == 0.1:  # Figure 6's runs.
    flags["full_train_loss"] = True
  if partition == "iid":  # Shards fix the client size (2 x 300).
    flags["examples_per_client"] = 600
  name = (f"mnist_{model.split('_')[1]}_{partition}_C{c.number(fraction)}_E{e}_"
          f"B{'inf' if b is None else b}")
  return c.federated(name, c.TFDS_DATA, **flags)


def mcmahan_cell(row: str, column: str, run: spec.Run,
                 reference: spec.Run) -> spec.CellSpec:
  """Rounds to the target of the run's one method (fedavg or fedsgd), with
  the speedup over `reference`'s."""
  target = run.flags["target_accuracy"]
  (method,) = run.methods()
  (reference_method,) = reference.methods()
  return spec.CellSpec(row, column, run.name,
                       spec.Metric(spec.ROUNDS_TO_TARGET, target), method,
                       speedup_reference=(reference.name, reference_method))



PAPER = "mcmahan2017"
C_VALUES = (0.0, 0.1, 0.2, 0.5, 1.0)
# The paper's Table 2 rows for the MNIST CNN: (E, B), B None = inf.
EB_ROWS = ((1, None), (5, None), (1, 50), (20, None), (1, 10), (5, 50),
           (20, 50), (5, 10), (20, 10))
_TRANSCRIBED = ("as the transcription published.py cites reads Table {} (the "
                "tables are lost in this extraction)")
_TABLE1_SOURCES = {
    "client_fraction": "McMahan 2017 §3: \"Table 1 shows the impact of "
                       "varying [...] for both MNIST models\"; rows C in {0.0, "
                       "0.1, 0.2, 0.5, 1.0} " + _TRANSCRIBED.format(1),
    "client_epochs": "McMahan 2017 §3: \"Table 1 shows the impact of "
                     "varying [...] for both MNIST models\"; 2NN E = 1, CNN "
                     "E = 5 " + _TRANSCRIBED.format(1),
    "client_batch_size": "McMahan 2017 §3: \"Comparing the number of rounds "
                         "for the [...] columns in Table 1\" (B = ∞ and "
                         "B = 10; 0 = B = ∞)",
}
_TABLE4_SOURCES = {
    "client_fraction": "McMahan 2017 §3: \"Based on these results, for most "
                       "of the remainder of our experiments we fix C=0.1\"",
    "client_epochs": spec.OURS + "Table 4's rows were lost in the extraction "
                     "(§3: \"see Table 4 in Appendix A for details for the "
                     "2NN\"); Table 2's grid, E in {1, 5, 20}",
    "client_batch_size": spec.OURS + "Table 4's rows were lost in the "
                         "extraction; Table 2's grid, B in {∞, 50, 10} "
                         "(0 = B = ∞)",
}
_TABLE2_SOURCES = {
    "client_fraction": "McMahan 2017 §3: \"Based on these results, for most "
                       "of the remainder of our experiments we fix C=0.1\"",
    "client_epochs": "McMahan 2017 §3 (\"Increasing computation per "
                     "client\"): \"using more computation per client "
                     "decreases the number of rounds to reach the target "
                     "accuracy by [...] for the CNN\" (35x); rows E in "
                     "{1, 5, 20} "
                     + _TRANSCRIBED.format(2),
    "client_batch_size": "McMahan 2017 §3: \"for the CNN the [...] FedSGD "
                         "model eventually reaches 99.22% accuracy after "
                         "1200 rounds [...] FedAvg model reaches an accuracy "
                         "of 99.44% after 300 rounds\" (B = ∞, E = 1 vs "
                         "B = 10, E = 20); "
                         "rows B in {∞, 50, 10} (0 = B = ∞) "
                         + _TRANSCRIBED.format(2),
}


def _sources(table_sources) -> dict:
  return {**c.COMMON_SOURCES, **MCMAHAN_SOURCES, **table_sources}


def _column(partition_label: str, b) -> str:
  return f"{partition_label}, B = {'∞' if b is None else b}"


def table1() -> spec.Preset:
  tables, runs = [], []
  for model, e, key, title in (
      ("mnist_2nn", 1, "table1_2nn", "Table 1: 2NN, E = 1, rounds to 97%"),
      ("mnist_cnn", 5, "table1_cnn", "Table 1: CNN, E = 5, rounds to 99%")):
    cells = []
    for label, partition in MCMAHAN_PARTITIONS.items():
      for b in (None, 10):
        column = _column(label, b)
        reference = mcmahan_run(model, partition, 0.0, e, b)
        for cc, row in zip(C_VALUES, published.MCMAHAN_C_ROWS):
          run = mcmahan_run(model, partition, cc, e, b)
          runs.append(run)
          cells.append(mcmahan_cell(row, column, run, reference))
    tables.append(spec.TableSpec((PAPER, key), title, published.MCMAHAN_C_ROWS,
                                 published.MCMAHAN_C_COLUMNS, tuple(cells)))
  return spec.Preset(
      "mcmahan2017_table1", PAPER,
      "Effect of the client fraction C: rounds to target accuracy of FedAvg "
      "(2NN E = 1, CNN E = 5), IID and pathological non-IID, B in {inf, 10}, "
      "with the speedup over C = 0.",
      c.unique_runs(runs), tuple(tables),
      notes=("Rounds are read from one learning rate per setting, not the "
             "best of the paper's grid (see sources: client_learning_rate; "
             "mcmahan2017_table1_lr_grid runs the grid).",),
      sources=_sources(_TABLE1_SOURCES))


def _eb_table(model: str, key: str, title: str, omitted=()):
  """(runs, table) of an E x B grid: rounds of FedAvg to the model's target
  at C = 0.1 with the speedup over FedSGD, IID and non-IID."""
  runs, cells = [], []
  for label, partition in MCMAHAN_PARTITIONS.items():
    reference = mcmahan_run(model, partition, 0.1, 1, None)
    for (e, b), row in zip(EB_ROWS, published.MCMAHAN_EB_ROWS):
      run = mcmahan_run(model, partition, 0.1, e, b)
      runs.append(run)
      cells.append(mcmahan_cell(row, label, run, reference))
  return runs, spec.TableSpec(
      (PAPER, key), title, published.MCMAHAN_EB_ROWS,
      published.MCMAHAN_EB_COLUMNS, tuple(cells), omitted_rows=omitted)


def _more_computation_comparisons(model: str):
  """§3's claim per partition: FedAvg (E = 20, B = 10) needs fewer rounds
  to the target than FedSGD (E = 1, B = inf)."""
  target = spec.Metric(spec.ROUNDS_TO_TARGET, MCMAHAN_TARGETS[model])
  out = []
  for label, partition in MCMAHAN_PARTITIONS.items():
    fedavg = mcmahan_run(model, partition, 0.1, 20, 10)
    fedsgd = mcmahan_run(model, partition, 0.1, 1, None)
    out.append(claim_spec.Comparison(
        f"fedavg_e20_b10_vs_fedsgd_{partition}", "McMahan 2017 §3: \"using "
        "more computation per client decreases the number of rounds to reach "
        f"the target accuracy\" ({label}, rounds)",
        claim_spec.Side(fedavg.name, target, "fedavg", "FedAvg E=20 B=10"),
        claim_spec.Side(fedsgd.name, target, "fedsgd", "FedSGD"), claim_spec.LOWER))
  return tuple(out)


def table2() -> spec.Preset:
  runs, table = _eb_table(
      "mnist_cnn", "table2_cnn", "Table 2: MNIST CNN, C = 0.1, rounds to 99% "
      "(speedup over FedSGD)")
  lstm_runs, lstm_table = shakespeare.table()
  return spec.Preset(
      "mcmahan2017_table2", PAPER,
      "More local computation: rounds of FedAvg to 99% on the MNIST CNN for "
      "E in {1, 5, 20} x B in {inf, 50, 10}, and to 54% on the Shakespeare "
      "LSTM for Table 2's (E, B) rows, C = 0.1, IID and non-IID, with the "
      "speedup over FedSGD (E = 1, B = inf).",
      c.unique_runs(runs + lstm_runs),
      (table, lstm_table),
      notes=("Rounds are read from one learning rate per setting, not the "
             "best of the paper's grid (see sources: client_learning_rate; "
             "mcmahan2017_table2_lr_grid runs the grid).",),
      sources=shakespeare.merge_sources(_sources(_TABLE2_SOURCES)),
      comparisons=_more_computation_comparisons("mnist_cnn"),
      figures=_cnn_figures() + shakespeare.figures())


def _cnn_figures():
  """Figures 2, 6 and 8: Table 2's CNN runs (`mcmahan2017_figures`)."""
  def run_of(partition, e, b):
    return mcmahan_run("mnist_cnn", partition, 0.1, e, b)
  return (figs.accuracy_figure(2, "MNIST CNN", run_of, MCMAHAN_PARTITIONS,
                               EB_ROWS, MCMAHAN_TARGETS["mnist_cnn"],
                               "table2_cnn", "Table 2"),
          figs.figure6(run_of, MCMAHAN_PARTITIONS, EB_ROWS),
          figs.figure8(run_of, MCMAHAN_PARTITIONS, (1, 5, 20)))


def _figure7():
  """Figure 7: Figure 2's layout for Table 4's 2NN runs."""
  def run_of(partition, e, b):
    return mcmahan_run("mnist_2nn", partition, 0.1, e, b)
  return figs.accuracy_figure(7, "MNIST 2NN", run_of, MCMAHAN_PARTITIONS,
                              EB_ROWS, MCMAHAN_TARGETS["mnist_2nn"],
                              "table4_2nn", "Table 4")


def table4() -> spec.Preset:
  runs, table = _eb_table(
      "mnist_2nn", "table4_2nn", "Table 4 (Appendix A): MNIST 2NN, C = 0.1, "
      "rounds to 97% (speedup over FedSGD)")
  return spec.Preset(
      "mcmahan2017_table4", PAPER,
      "More local computation for the 2NN: rounds of FedAvg to 97% on the "
      "MNIST 2NN for E in {1, 5, 20} x B in {inf, 50, 10} (Table 2's grid: "
      "Table 4's rows were lost in the extraction), C = 0.1, IID and non-IID, "
      "with the speedup over FedSGD (E = 1, B = inf).",
      c.unique_runs(runs), (table,),
      notes=("Rounds are read from one learning rate per setting, not the "
             "best of the paper's grid (see sources: client_learning_rate; "
             "mcmahan2017_table4_lr_grid runs the grid).",
             "Table 4's numbers were not transcribed (the tables are lost in "
             "the text; §3 states its IID speedup, \"46×\" for the 2NN)."),
      sources={k: v for k, v in _sources(_TABLE4_SOURCES).items()
               # The 2NN has no weight decay to set; Figure 6 is the CNN's.
               if k not in ("weight_decay", "full_train_loss")},
      comparisons=_more_computation_comparisons("mnist_2nn"),
      figures=(_figure7(),))


def table1_lr_grid() -> spec.Preset:
  """Table 1 under McMahan 2017 §3's learning-rate protocol (`lr_grid`)."""
  return lr_grid.expand(table1())


def table2_lr_grid() -> spec.Preset:
  """Table 2 under McMahan 2017 §3's learning-rate protocol."""
  return lr_grid.expand(table2())


def table4_lr_grid() -> spec.Preset:
  """Table 4 under McMahan 2017 §3's learning-rate protocol."""
  return lr_grid.expand(table4())


PRESETS = (table1, table2, table4, table1_lr_grid, table2_lr_grid,
           table4_lr_grid)
