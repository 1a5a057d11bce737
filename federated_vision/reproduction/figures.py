"""A preset's figures filled from run directories: their data, CSV and links.

`fill(figure, preset, ctx, cell_value)` reads every point a `FigureSpec`
declares -- a curve from its run's files (`figure_curves`: the method's
metrics.csv, a centralized run's SGD, an averaging run's losses), at the
learning rate its table chooses where the preset has grids
(`figure_rates`), a per-run point or a bar as a report cell is read
(`report`'s cell value, so a figure shows exactly the numbers of the
tables) -- and returns a
`FigureResult`: one `Point` per drawn value and, for every (run, method)
that is not finished (missing, running, diverged, another configuration,
a damaged file), one `Point` without a value saying why. The figure is
drawn from the points that have values (`figure_plot`) and the report
names the others under it (`markdown_lines`): never an empty or silently
partial picture. `write` writes `<prefix>.csv` (every point, reference
line and paper value) and `<prefix>.png`.

With `--seeds=N` a figure reads the first seed's runs (the preset's own
run names), as the effective-learning-rate studies do; the report says so.
"""

import csv
import dataclasses
import math
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from federated_vision.evaluation import convergence
from federated_vision.reproduction import figure_curves
from federated_vision.reproduction import figure_plot
from federated_vision.reproduction import figure_rates
from federated_vision.reproduction import figure_spec as fs
from federated_vision.reproduction import results
from federated_vision.reproduction import spec
from federated_vision.training import run_files

OK = "ok"
PAPER = "paper"
# The CSV's `kind` of a row.
POINT, REFERENCE = "point", "reference"
CSV_COLUMNS = ("figure", "panel", "kind", "series", "run", "method", "x",
               "x_label", "y", "unit", "status", "detail")
SHOWN_MISSING = 12  # Not-drawn entries named in the markdown (the CSV: all).


@dataclasses.dataclass(frozen=True)
class Point:
  """A drawn value (status OK) or why a (run, method) has none.

  Attributes:
    panel: the panel's index in the figure.
    series: the series' label.
    run, method: where it was read ('' method: a run-level metric).
    x, y: in the panel's units (accuracies in %); y None unless OK (x
      too, unless it is known without the run: a flag's value, a bar).
    x_label: a bar's category or a categorical x's value as shown.
    status: OK or a `results` / `report` status.
    detail: one line naming the file or run, when not OK.
  """
  panel: int
  series: str
  run: str
  method: str
  x: Optional[float] = None
  y: Optional[float] = None
  x_label: str = ""
  status: str = OK
  detail: str = ""


@dataclasses.dataclass(frozen=True)
class Line:
  """A reference line as drawn: its y, or why it has none."""
  panel: int
  label: str
  y: Optional[float]
  status: str = OK
  detail: str = ""


@dataclasses.dataclass(frozen=True)
class FigureResult:
  """A figure filled from run directories.

  Attributes:
    spec: the declaration.
    points: every series point, drawn or not.
    lines: the reference lines.
    paper: (panel index, value) of every number the paper states that the
      figure shows: the panels' declared ones and those of its table's
      published cells that fall on a series' curve or point
      (`table_paper_values`).
    rates: (panel index, series label, `figure_rates.SeriesRate`) of the
      series drawn at a rate chosen from a grid, or at their own rate in a
      grid preset (`figure_rates`).
    rate_note: `figure_rates.ONE_RATE_NOTE` for a figure the paper draws at
      its best rates, filled from a preset without grids; else ''.
  """
  spec: fs.FigureSpec
  points: Tuple[Point, ...]
  lines: Tuple[Line, ...]
  paper: Tuple[Tuple[int, fs.PaperValue], ...] = ()
  rates: Tuple[Tuple[int, str, figure_rates.SeriesRate], ...] = ()
  rate_note: str = ""

  def not_drawn(self) -> List[str]:
    """'run/method: status (detail)' of every series point or reference
    line without a value, once each, in figure order."""
    out = []
    for p in self.points:
      if p.status != OK:
        where = f"{p.run}/{p.method}" if p.method else p.run
        out.append(f"{where}: {p.status} ({p.detail})")
    out += [f"reference line {l.label!r}: {l.status} ({l.detail})"
            for l in self.lines if l.status != OK]
    return list(dict.fromkeys(out))

  def drawn(self, panel: int, series: str) -> List[Point]:
    return [p for p in self.points if p.panel == panel and p.series == series
            and p.status == OK]

  def legend(self, panel: int, series: str) -> str:
    """The series' legend: its label and, at a chosen rate, the rate."""
    rate = [r.legend for i, label, r in self.rates
            if (i, label) == (panel, series) and r.legend]
    return f"{series}, {rate[0]}" if rate else series


CellValue = Callable[[object, spec.CellSpec], object]  # report's cell value.
# (paper, table, row, column) -> `published.PublishedValue` or None.
Lookup = Callable[[tuple], object]


def _on_panel(panel: fs.Panel, metric: spec.Metric, value: float,
              x_of_run: Optional[float]) -> Optional[Tuple[float, float]]:
  """Where a published cell's number lies on `panel` ((x, y) in its
  units), or None when the panel does not show that metric: Acc@Round N
  at (N, %) on a test-accuracy curve against rounds, Acc@Batch N against
  the batch budget, rounds to a target accuracy at (rounds, target %) on a
  best-so-far curve (McMahan's definition), rounds to a fraction of the
  centralized accuracy at (rounds, fraction) on a relative-accuracy curve,
  a final accuracy at the run's x on a per-run panel of final accuracy."""
  kind = metric.kind
  if panel.kind == fs.CURVE and panel.y == fs.TEST_ACCURACY:
    if (kind, panel.x) in ((spec.ACC_AT_ROUND, fs.ROUND),
                           (spec.ACC_AT_BATCH, fs.BATCHES)):
      return metric.arg, value
    if kind == spec.ROUNDS_TO_TARGET and panel.best_so_far:
      return value, 100 * metric.arg
  if (panel.kind == fs.CURVE and panel.y == fs.RELATIVE_ACCURACY and
      kind == spec.ROUNDS_TO_RELATIVE and panel.x == fs.ROUND):
    return value, metric.arg
  if (panel.kind == fs.PER_RUN and x_of_run is not None and
      kind == spec.FINAL_ACCURACY):
    return x_of_run, value
  return None


def table_paper_values(figure: fs.FigureSpec, preset: spec.Preset,
                       lookup: Lookup) -> List[Tuple[int, fs.PaperValue]]:
  """The numbers the paper prints in the figure's table (`figure.table`)
  for a (run, method) a series draws, where the panel shows that metric
  (`_on_panel`; a per-run panel over a flag: at the run's value of it),
  each labelled with its series and quoted from `published`."""
  tables = [t for t in preset.tables if t.key == figure.table]
  out = []
  for i, panel in enumerate(figure.panels):
    for series in panel.series:
      for run, method in series.points:
        x_of_run = (float(preset.run(run).flags[panel.x])
                    if panel.kind == fs.PER_RUN and panel.x != fs.EMD_X
                    else None)
        for table in tables:
          for cell in table.cells:
            if (cell.run, cell.method) != (run, method):
              continue
            printed = lookup(table.key + (cell.row, cell.column))
            if printed is None or printed.value is None:
              continue
            at = _on_panel(panel, cell.metric, printed.value, x_of_run)
            if at is not None:
              unit = " %" if printed.unit == "%" else ""
              out.append((i, fs.PaperValue(
                  series.label, at[0], at[1], printed.text + unit,
                  f"{cell.row}, {cell.column}: {printed.quote}")))
  return out


def _missing(i, series, run, method, status, detail) -> List[Point]:
  return [Point(i, series.label, run, method or "", status=status,
                detail=detail)]


def _curve(i: int, panel: fs.Panel, series: fs.Series, ctx,
           chosen: figure_rates.SeriesRate) -> List[Point]:
  """One curve series' points (`figure_curves`) from the run `chosen`
  (its own, or the grid member its table chose): made monotone, in percent
  or relative to its baseline as the panel says."""
  (run, method), = series.points
  if chosen.status != OK:
    return _missing(i, series, run, method, chosen.status, chosen.detail)
  run = chosen.run
  curve = figure_curves.read(panel.x, panel.y, run, method, ctx)
  if curve.status != results.FINISHED:
    return _missing(i, series, run, method, curve.status, curve.detail)
  ys = list(curve.ys)
  if panel.best_so_far:
    ys = [float(v) for v in convergence.best_so_far(ys)]
  if panel.y == fs.TEST_ACCURACY:
    ys = [100.0 * v for v in ys]
  elif panel.y == fs.RELATIVE_ACCURACY:
    base = ctx.baseline(series.baseline)
    if base.status != OK:
      return _missing(i, series, run, method, base.status, base.detail)
    ys = [v / base.value for v in ys]
  return [Point(i, series.label, run, method or "", x, y, detail=chosen.text)
          for x, y in zip(curve.xs, ys)]


def _x_of_run(panel: fs.Panel, preset: spec.Preset, run: str, ctx,
              cell_value: CellValue):
  """(x, shown label, None) of a per-run point, or (None, '', the Value
  saying why there is none)."""
  if panel.x == fs.EMD_X:
    v = cell_value(ctx, spec.CellSpec("x", panel.x, run,
                                      spec.Metric(spec.EMD)))
    return (v.value, "", None) if v.status == OK else (None, "", v)
  value = float(preset.run(run).flags[panel.x])
  return value, f"{value:g}", None


def _values(i: int, panel: fs.Panel, series: fs.Series, preset, ctx,
            cell_value: CellValue) -> List[Point]:
  """A per-run series' points or a bar series' bars, read as cells."""
  out = []
  for k, (run, method) in enumerate(series.points):
    v = cell_value(ctx, spec.CellSpec(series.label, panel.title, run,
                                      series.y_metric, method))
    if panel.kind == fs.BARS:
      x, label, why = float(k), panel.categories[k], None
    else:
      x, label, why = _x_of_run(panel, preset, run, ctx, cell_value)
    bad = v if v.status != OK else why
    if bad is not None:  # Its x (a flag's value, a bar) where known.
      out.append(Point(i, series.label, run, method or "", x, None, label,
                       bad.status, bad.detail))
    else:
      out.append(Point(i, series.label, run, method or "", x, v.value, label))
  return out


def _line(i: int, line: fs.ReferenceLine, ctx) -> Line:
  if line.value is not None:
    return Line(i, line.label, float(line.value))
  if line.recorded is not None:  # A number the run wrote (summary.json).
    run, path = line.recorded
    value, status, detail = figure_curves.recorded_number(ctx.runs[run], path)
    return (Line(i, line.label, value) if status == results.FINISHED else
            Line(i, line.label, None, status, detail))
  base = ctx.baseline(line.baseline)
  if base.status != OK:
    return Line(i, line.label, None, base.status, base.detail)
  return Line(i, line.label, 100.0 * base.value)


def fill(figure: fs.FigureSpec, preset: spec.Preset, ctx,
         cell_value: CellValue, lookup: Lookup) -> FigureResult:
  """Every point, reference line and paper value of `figure` from `ctx`
  (`report`'s run directories, read once), `cell_value` (`report`'s cell
  reader) and `lookup` (the published numbers)."""
  points, lines, rates = [], [], []
  for i, panel in enumerate(figure.panels):
    for series in panel.series:
      if panel.kind != fs.CURVE:
        points += _values(i, panel, series, preset, ctx, cell_value)
        continue
      chosen = figure_rates.series_rate(figure, preset, *series.points[0],
                                        ctx, cell_value)
      points += _curve(i, panel, series, ctx, chosen)
      if chosen.text:
        rates.append((i, series.label, chosen))
    lines += [_line(i, line, ctx) for line in panel.lines]
  paper = [(i, v) for i, panel in enumerate(figure.panels)
           for v in panel.paper]
  paper += table_paper_values(figure, preset, lookup)
  note = (figure_rates.ONE_RATE_NOTE if figure.best_rate and
          not any(len(preset.lr_grids.get(run, ())) > 1
                  for run in figure.runs()) else "")
  return FigureResult(figure, tuple(points), tuple(lines), tuple(paper),
                      tuple(rates), note)


def file_prefix(preset_name: str, figure: fs.FigureSpec) -> str:
  """`<preset>_<key>`: the figure's PNG and CSV names without extension."""
  return f"{preset_name}_{figure.key}"


def _raw(v) -> object:
  if v is None:
    return ""
  return repr(float(v)) if isinstance(v, float) and math.isfinite(v) else v


def csv_rows(result: FigureResult) -> List[Dict[str, object]]:
  """Every point (drawn or not), reference line and paper value."""
  key, panels = result.spec.key, result.spec.panels
  out = []
  for p in result.points:
    out.append({"figure": key, "panel": panels[p.panel].title, "kind": POINT,
                "series": p.series, "run": p.run, "method": p.method,
                "x": _raw(p.x), "x_label": p.x_label, "y": _raw(p.y),
                "unit": panels[p.panel].y_unit, "status": p.status,
                "detail": p.detail})
  for l in result.lines:
    out.append({"figure": key, "panel": panels[l.panel].title,
                "kind": REFERENCE, "series": l.label, "run": "", "method": "",
                "x": "", "x_label": "", "y": _raw(l.y),
                "unit": panels[l.panel].y_unit, "status": l.status,
                "detail": l.detail})
  for i, panel in enumerate(panels):  # Vertical lines: an x, no y.
    out += [{"figure": key, "panel": panel.title, "kind": REFERENCE,
             "series": label, "run": "", "method": "", "x": _raw(float(x)),
             "x_label": "", "y": "", "unit": "", "status": OK,
             "detail": "vertical line"} for label, x in panel.x_lines]
  for i, v in result.paper:
    out.append({"figure": key, "panel": panels[i].title, "kind": PAPER,
                "series": v.series, "run": "", "method": "",
                "x": _raw(float(v.x)), "x_label": v.text,
                "y": _raw(float(v.y)), "unit": panels[i].y_unit,
                "status": PAPER, "detail": v.source})
  return out


def markdown_lines(result: FigureResult, prefix: str,
                   seeds: int = 1) -> List[str]:
  """The figure under its table: title, image, source, data link, notes and
  which runs it lacks."""
  figure = result.spec
  name = os.path.basename(prefix)
  lines = [f"### {figure.title}", "", f"![{figure.title}]({name}.png)", "",
           f"Source: {figure.source}", "",
           f"Data: [{name}.csv]({name}.csv) (every point, reference line "
           "and paper value).", ""]
  lines += [f"- {note}" for note in figure.notes]
  if result.rate_note:
    lines.append(f"- {result.rate_note}")
  lines += [f"- {figure.panels[i].title}, {label}: drawn at {rate.text}."
            for i, label, rate in result.rates]
  if result.paper:
    lines.append(f"- Stars: the paper's {len(result.paper)} printed "
                 "number(s) on these axes, as the paper's (the CSV's "
                 "`paper` rows quote each).")
  if seeds > 1:
    lines.append(f"- Drawn from the first of the {seeds} seeds' runs.")
  missing = result.not_drawn()
  if missing:
    shown = missing[:SHOWN_MISSING]
    more = len(missing) - len(shown)
    lines.append(f"- Not drawn ({len(missing)}; the rest is drawn): "
                 + "; ".join(shown) + (f"; and {more} more (the CSV lists "
                                       "them)" if more else ""))
  if figure.notes or result.paper or seeds > 1 or missing or \
      result.rate_note or result.rates:
    lines.append("")
  return lines


def write(result: FigureResult, prefix: str) -> Dict[str, str]:
  """`<prefix>.csv` and `<prefix>.png` (deterministic bytes: the same runs
  give the same files); returns {"figure_<key>_csv": path,
  "figure_<key>_png": path}."""
  csv_path, png_path = prefix + ".csv", prefix + ".png"
  with run_files.atomic_path(csv_path) as tmp, \
      open(tmp, "w", newline="") as f:
    writer = csv.DictWriter(f, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_rows(result))
  figure_plot.draw(result, png_path)
  key = result.spec.key
  return {f"figure_{key}_csv": csv_path, f"figure_{key}_png": png_path}


def fill_all(preset: spec.Preset, ctx, cell_value: CellValue, lookup: Lookup
             ) -> Tuple[FigureResult, ...]:
  return tuple(fill(f, preset, ctx, cell_value, lookup)
               for f in preset.figures)


def by_table(results_: Sequence[FigureResult], key: Optional[Tuple[str, str]]
             ) -> List[FigureResult]:
  """The figures shown under the table `key` (None: after the tables)."""
  return [r for r in results_ if r.spec.table == key]
