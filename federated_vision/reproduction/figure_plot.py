"""Draws a filled figure (`figures.FigureResult`) as a PNG.

matplotlib's object API on an Agg canvas (no pyplot, so drawing changes no
process-wide state); the PNG carries no metadata that varies (no software
version, no time), so the same runs give byte-identical files. A series
keeps one colour in every panel; the paper's stated numbers are stars in
their series' colour with the printed text beside them; what is not drawn
is named in a line at the bottom (and in the report under the figure).
"""

import math
import textwrap
from typing import Dict, List

from federated_vision.evaluation import reporting
from federated_vision.reproduction import figure_spec as fs

PANEL_SIZE = (5.2, 3.9)  # inches per panel
MAX_COLUMNS = 3
DPI = 100
MAX_PAPER_TEXTS = 4  # a panel with more paper values shows stars only
CHARACTERS_PER_INCH = 17  # of the not-drawn note (6.5 pt) and the title


def _colours(result) -> Dict[str, object]:
  """Series label -> colour, in first-appearance order over the figure."""
  from matplotlib import colormaps  # pylint: disable=g-import-not-at-top
  labels = list(dict.fromkeys(s.label for p in result.spec.panels
                              for s in p.series))
  cmap = colormaps["tab10" if len(labels) <= 10 else "tab20"]
  return {label: cmap(i % cmap.N) for i, label in enumerate(labels)}


def _categorical(points) -> List[float]:
  """The distinct x values of a categorical axis, in the order the series
  declare them (drawn or not)."""
  return list(dict.fromkeys(p.x for p in points if p.x is not None))


def _draw_panel(ax, i: int, panel: fs.Panel, result, colours) -> None:
  points = [p for p in result.points if p.panel == i]
  drawn = [p for p in points if p.y is not None]  # Not drawn: no y.
  order = _categorical(points) if panel.categorical_x else []
  position = (lambda x: float(order.index(x))) if order else (lambda x: x)
  width = 0.8 / len(panel.series)
  for k, series in enumerate(panel.series):
    pts = result.drawn(i, series.label)
    colour = colours[series.label]
    if panel.kind == fs.BARS:  # Each bar's value on it (a 0 is visible).
      bars = ax.bar([p.x - 0.4 + width * (k + 0.5) for p in pts],
                    [p.y for p in pts], width, label=series.label,
                    color=colour)
      ax.bar_label(bars, fmt="%.4g", fontsize=6)
      continue
    if panel.kind == fs.PER_RUN:
      pts = sorted(pts, key=lambda p: position(p.x))
    ax.plot([position(p.x) for p in pts], [p.y for p in pts],
            label=result.legend(i, series.label), color=colour, lw=1.3,
            marker="o" if panel.kind == fs.PER_RUN else None, ms=4)
  lines = [l for l in result.lines if l.panel == i]
  for declared, line in zip(panel.lines, lines):
    if line.y is not None:  # A run's accuracy: its value in the legend.
      ax.axhline(line.y, color="0.45", ls="--", lw=1.0, label=(
          f"{line.label} ({line.y:.4g})" if declared.baseline else
          line.label))
  for label, x in panel.x_lines:  # E.g. Figure 1's parents at 0 and 1.
    ax.axvline(x, color="0.6", ls=":", lw=1.0)
    ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"),
                xytext=(2, -10), textcoords="offset points", fontsize=6.5,
                color="0.4")
  paper = [v for j, v in result.paper if j == i]
  for k, v in enumerate(paper):  # Stars in their series' colour.
    x = position(v.x) if order and v.x in order else v.x
    few = len(paper) <= MAX_PAPER_TEXTS
    ax.scatter([x], [v.y], marker="*", s=150 if few else 70,
               color=colours[v.series], edgecolors="k", linewidths=0.6,
               zorder=5, label=(f"paper: {v.series} {v.text}" if few else
                                "paper (stars: its printed numbers)"
                                if k == 0 else None))
    if few:
      ax.annotate(f"paper {v.text}", (x, v.y), textcoords="offset points",
                  xytext=(6, -10), fontsize=7)
  if panel.kind == fs.BARS:
    ax.set_xticks(range(len(panel.categories)))
    ax.set_xticklabels(panel.categories, rotation=20, fontsize=8)
  elif order:
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([next(p.x_label for p in points if p.x == x)
                        for x in order], fontsize=8)
  if panel.log_x:
    ax.set_xscale("log")
  if panel.log_y:
    ax.set_yscale("log")
  ax.set_xlabel(panel.x_label if panel.kind != fs.BARS else "")
  ax.set_ylabel(panel.y_label, fontsize=8)
  ax.set_title(panel.title, fontsize=9)
  ax.grid(alpha=0.3)
  if ax.get_legend_handles_labels()[0]:
    ax.legend(fontsize=6.5)
  if not drawn:
    ax.text(0.5, 0.5, "nothing finished to draw", transform=ax.transAxes,
            ha="center", va="center", color="firebrick")


def draw(result, path: str) -> str:
  """`result` as a PNG at `path` (atomically); returns `path`."""
  # pylint: disable=g-import-not-at-top
  from matplotlib.backends.backend_agg import FigureCanvasAgg
  from matplotlib.figure import Figure
  # pylint: enable=g-import-not-at-top
  panels = result.spec.panels
  cols = min(len(panels), MAX_COLUMNS)
  rows = math.ceil(len(panels) / cols)
  width = PANEL_SIZE[0] * cols
  missing = result.not_drawn()
  note = ""
  if missing:
    note = textwrap.fill(f"not drawn ({len(missing)}): " + "; ".join(missing),
                         int(width * CHARACTERS_PER_INCH), max_lines=4,
                         placeholder=" ... (the report lists them)")
  extra = 0.16 * (note.count("\n") + 1) if note else 0.0
  title = textwrap.fill(result.spec.title + (
      " (one rate, not optimised)" if result.rate_note else ""),
                        int(width * CHARACTERS_PER_INCH * 0.65))
  top = 0.2 * (title.count("\n") + 1)
  fig = Figure(figsize=(width, PANEL_SIZE[1] * rows + top + extra), dpi=DPI)
  FigureCanvasAgg(fig)
  colours = _colours(result)
  for i, panel in enumerate(panels):
    _draw_panel(fig.add_subplot(rows, cols, i + 1), i, panel, result, colours)
  fig.suptitle(title, fontsize=10)
  if note:
    fig.text(0.01, 0.005, note, fontsize=6.5, color="firebrick", va="bottom")
  fig.tight_layout(rect=(0, extra / fig.get_figheight(), 1,
                         1 - 0.05 / fig.get_figheight()))
  return reporting.save_figure(fig, path, dpi=DPI)
