"""McMahan et al. 2017's MNIST CNN figures as `mcmahan2017_table2` draws them.

Figure 2 (test accuracy against rounds, each curve made monotone, the
target as a line), Figure 6 (the loss on the full training set, the runs'
`--full_train_loss` column) and Figure 8 (many local epochs, curves not
made monotone), all from Table 2's C = 0.1 grid. Each `source` quotes the
paper's sentence that names the figure (the appendix's captions were lost
in the text extraction); what we chose is in the notes.
"""

from typing import Callable, Optional

from federated_vision.reproduction import figure_spec as fs
from federated_vision.reproduction import published
from federated_vision.reproduction import spec

PAPER = "mcmahan2017"
M = "McMahan 2017 "
RunOf = Callable[[str, int, Optional[int]], spec.Run]  # (partition, E, B)
_LOST = ("the caption was lost in the text extraction; the panels and "
         "series are ours")


def _grid_series(run_of: RunOf, partition: str, eb_rows):
  """One curve per (E, B) row of Table 2, labelled as the table's row."""
  out = []
  for (e, b), label in zip(eb_rows, published.MCMAHAN_EB_ROWS):
    run = run_of(partition, e, b)
    (method,) = run.methods()
    out.append(fs.curve(label, run.name, method))
  return tuple(out)


def _target(target: float) -> fs.ReferenceLine:
  return fs.ReferenceLine(f"target {100 * target:g} % (Table 2)",
                          value=100 * target)


def figure2(run_of: RunOf, partitions, eb_rows, target: float
            ) -> fs.FigureSpec:
  """Best-so-far test accuracy against rounds, IID and non-IID."""
  return fs.FigureSpec(
      "figure2", "Figure 2: MNIST CNN test accuracy vs rounds (best so far), "
      "C = 0.1", M + "§3: \"we construct a learning curve for each "
      "combination of parameter settings\" [...] \"making each curve "
      "monotonically improving by taking the best value of test-set accuracy "
      "achieved over all prior rounds.\" ... \"This is perhaps best "
      "understood by reference to Figure 2, where the gray lines show the "
      "targets.\"", tuple(
          fs.Panel(label, fs.CURVE, _grid_series(run_of, p, eb_rows),
                   best_so_far=True, lines=(_target(target),))
          for label, p in partitions.items()),
      table=(PAPER, "table2_cnn"),
      notes=("Ours: every (E, B) of Table 2 at one learning rate (see the "
             "preset's sources), one panel per partition; " + _LOST + ".",))


def figure6(run_of: RunOf, partitions, eb_rows) -> fs.FigureSpec:
  """The training-set loss against rounds (log scale), IID and non-IID."""
  return fs.FigureSpec(
      "figure6", "Figure 6: MNIST CNN loss on the full training set vs "
      "rounds, C = 0.1", M + "§3: \"We are primarily concerned with "
      "generalization performance, but FedAvg is effective at optimizing the "
      "training loss as well, even beyond the point where test-set accuracy "
      "plateaus. We observed similar behavior for all three model classes, "
      "and present plots for the MNIST CNN in Figure 6 in Appendix A.\"",
      tuple(fs.Panel(label, fs.CURVE, _grid_series(run_of, p, eb_rows),
                     y=fs.FULL_TRAIN_LOSS, log_y=True)
            for label, p in partitions.items()),
      table=(PAPER, "table2_cnn"),
      notes=("Ours: the server model's loss on the pooled training data "
             "(every client's 600 examples) at every evaluated round "
             "(--full_train_loss), y on a log scale; " + _LOST + ".",))


def figure8(run_of: RunOf, partitions, epochs, batch_sizes, target: float
            ) -> fs.FigureSpec:
  """Test accuracy (not made monotone) against rounds for each E, one
  panel per (partition, B)."""
  panels = []
  for label, p in partitions.items():
    for b in batch_sizes:
      series = []
      for e in epochs:
        run = run_of(p, e, b)
        (method,) = run.methods()
        series.append(fs.curve(f"E = {e}" + (" (FedSGD)" if method ==
                                             "fedsgd" else ""),
                               run.name, method))
      panels.append(fs.Panel(
          f"{label}, B = {'∞' if b is None else b}", fs.CURVE,
          tuple(series), lines=(_target(target),)))
  return fs.FigureSpec(
      "figure8", "Figure 8: MNIST CNN, many local epochs: test accuracy vs "
      "rounds (not made monotone), C = 0.1", M + "§3: \"we report results "
      "for a fixed learning rate\" [...] \"and without forcing the lines to "
      "be monotonic.\" ... \"Figure 8 in Appendix A gives the analogous "
      "experiment for the MNIST CNN.\"", tuple(panels),
      table=(PAPER, "table2_cnn"),
      notes=("Ours: E in {1, 5, 20} per (partition, B) of Table 2's grid, "
             "the largest E the table trains (the paper's Figure 3 for the "
             "LSTM goes further); " + _LOST + ".",))
