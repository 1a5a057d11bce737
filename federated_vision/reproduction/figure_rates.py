"""Which learning rate a figure's curve is drawn at (McMahan 2017 §3).

McMahan et al. 2017 §3: "Unless otherwise noted, we plot metrics for the
best performing rate selected individually for each x-axis value", each
learning curve "optimizing eta as described above and then making each
curve monotonically improving". A figure that follows it
(`FigureSpec.best_rate`) in a preset with learning-rate grids
(`lr_grid.expand`) draws each curve of a tuned run at the rate its table's
cell chooses (`report`'s cell value: the rate whose monotone curve reaches
the target first, `lr_grid.choose`), so the figure and the table agree:

  * several cells of the figure's table read the run (McMahan Table 3's
    80 / 82 / 85 %): the rate chosen for the highest target any rate
    reaches (ours: one curve per setting);
  * no rate reaches any target: the rate whose curve reaches the highest
    test accuracy (ours: §3's "best performing rate" where the table has
    no choice; a tie goes to the smaller rate, as `lr_grid.choose`);
  * a rate still missing or running: the curve is not drawn and the figure
    says which (a chosen rate never changes under a finished figure).

The legend names the rate and its grid. Without grids (the one-rate
presets) every curve is its run's own rate and the report says "one rate,
not optimised" (`ONE_RATE_NOTE`).

Plain Python (numpy): reports read finished runs without TensorFlow.
"""

import dataclasses
import math
from typing import Callable, Mapping, Optional, Sequence

from federated_vision.reproduction import figure_curves
from federated_vision.reproduction import figure_spec as fs
from federated_vision.reproduction import lr_grid
from federated_vision.reproduction import results
from federated_vision.reproduction import spec

OK = "ok"
NOT_REACHED = "not_reached"  # report's status of a target no rate reaches.
ONE_RATE_NOTE = (
    "One rate, not optimised: each curve is its run's own learning rate; "
    "McMahan 2017 §3 plots the best rate of a grid per setting, which a "
    "preset expanded over learning-rate grids draws (`lr_grid.expand`; "
    "registered: the `mcmahan2017_table*_lr_grid` presets).")


@dataclasses.dataclass(frozen=True)
class SeriesRate:
  """The run a series draws and the legend's words for its rate.

  Attributes:
    run: the grid member drawn (the series' own run without a grid); None
      when none can be drawn yet.
    rate: its learning rate when chosen from a grid (None otherwise).
    text: the chosen rate with its grid and why ('' for a run's own rate).
    status, detail: why nothing is drawn (status OK otherwise).
  """
  run: Optional[str]
  rate: Optional[float] = None
  text: str = ""
  status: str = OK
  detail: str = ""

  @property
  def legend(self) -> str:
    """The legend's words for the rate ('' for a run's own rate)."""
    return "" if self.rate is None else f"η = {lr_grid.rate_text(self.rate)}"


def highest_accuracy(best_by_rate: Mapping[float, Optional[float]]
                     ) -> Optional[float]:
  """The rate whose curve reached the highest test accuracy (None: no rate
  has one); a tie goes to the smaller rate."""
  reached = [(-acc, rate) for rate, acc in best_by_rate.items()
             if acc is not None and math.isfinite(acc)]
  return min(reached)[1] if reached else None


def _best_accuracy(ctx, run: str, method: Optional[str]) -> Optional[float]:
  """The highest test accuracy a finished run's curve reached (None: not
  finished, diverged or no evaluation)."""
  if method is not None and ctx.method(run, method).status != \
      results.FINISHED:
    return None
  curve = figure_curves.read(fs.GRADIENTS if method is None else fs.ROUND,
                             fs.TEST_ACCURACY, run, method, ctx)
  finite = [y for y in curve.ys if math.isfinite(y)]
  return max(finite) if curve.status == results.FINISHED and finite else None


def _span(rates: Sequence[float]) -> str:
  return (f"of {lr_grid.rate_text(min(rates))}–{lr_grid.rate_text(max(rates))}"
          f", {len(rates)} rates")


def series_rate(figure: fs.FigureSpec, preset: spec.Preset, run: str,
                method: Optional[str], ctx,
                cell_value: Callable[[object, spec.CellSpec], object]
                ) -> SeriesRate:
  """The grid member a series of `figure` draws (module docstring).

  Args:
    figure, preset: the declaration and its preset.
    run, method: the series' (run, method) as declared (a base run).
    ctx: the report's reader of run directories.
    cell_value: the report's cell reader (its `Value`s carry the choice).
  """
  members = lr_grid.members(preset, run)
  if not figure.best_rate or len(members) == 1:
    return SeriesRate(run)
  cells = [c for t in preset.tables if t.key == figure.table
           for c in t.cells if (c.run, c.method) == (run, method)
           and c.metric.kind in spec.ROUNDS_KINDS]
  rates = [preset.run(m).flags[lr_grid.LR_FLAG] for m in members]
  if not cells:  # The figure's table does not tune it: its own rate.
    own = lr_grid.rate_text(preset.run(run).flags[lr_grid.LR_FLAG])
    return SeriesRate(run, None, f"its own η = {own} (no cell of the "
                      "figure's table chooses one)")
  values = [(c.metric.arg, cell_value(ctx, c)) for c in cells]
  pending = [v for _, v in values if v.status not in (OK, NOT_REACHED)]
  if pending:
    return SeriesRate(None, None, "", pending[0].status, pending[0].detail)
  chosen = [(arg, v.choice) for arg, v in values if v.status == OK]
  if chosen:
    target, choice = max(chosen, key=lambda t: t[0])
    return SeriesRate(choice.run, choice.rate,
                      f"η = {lr_grid.rate_text(choice.rate)} {_span(rates)}:"
                      f" first to {100 * target:g} %")
  best = {preset.run(m).flags[lr_grid.LR_FLAG]: _best_accuracy(ctx, m, method)
          for m in members}
  rate = highest_accuracy(best)
  if rate is None:
    return SeriesRate(None, None, "", results.DIVERGED, f"learning-rate grid "
                      f"of {run}: no rate has a finite test accuracy")
  lowest = min(arg for arg, _ in values)
  return SeriesRate(members[rates.index(rate)], rate,
                    f"η = {lr_grid.rate_text(rate)} {_span(rates)}: none "
                    f"reaches {100 * lowest:g} %, the highest accuracy")
