"""A report (`report.build_report`) as text: markdown in the papers'
layouts, CSV (one row per cell, raw values) and the files `write_report`
writes.

A cell prints "ours / paper (Δ = ours − paper)" in the paper's unit; over
seeds ours is "mean ± half width (n=..)" of the 95% t-interval and the Δ
says whether the paper's number lies inside it. The paper's number is
printed as the paper prints it; a print that disagrees with the paper's own
numbers (Hsu 2020 Table 5's "420 (6.9)", McMahan Table 1's "18 (3.1x)") is
marked ‡ and a footnote gives the value its printed rounds give (ours are
always recomputed from rounds).
"""

import csv
import json
import os
from typing import Dict, List, Optional, Sequence

from federated_vision.reproduction import comparisons as comparisons_lib
from federated_vision.reproduction import effective_lr
from federated_vision.reproduction import published as published_lib
from federated_vision.reproduction import results
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.training import run_files
from federated_vision.reproduction.report import (
    CellResult, NOT_REACHED, NOT_TRANSCRIBED, OK, PAPER_ONLY, Report,
    UNAVAILABLE, Value)


def _number(v: float, unit: str) -> str:
  if unit == "rounds":
    return f"{v:.0f}"
  if unit == "count":
    return f"{v:,.0f}"
  return f"{v:.2f}" if unit == "%" else f"{v:.3f}"


def _status_text(v: Value) -> str:
  if v.status == PAPER_ONLY:
    return "—"
  if v.status == NOT_REACHED:
    return "not reached"
  if v.status == results.MISSING:
    return "not run"
  return "n/a" if v.status == UNAVAILABLE else v.status


def ours_text(r: CellResult) -> str:
  """Ours: the number, or over seeds 'mean ± half width (n=..)'; then
  McMahan's speedup '(k.k×)' or Table 5's ratio '(k.k)' (their means)."""
  unit = r.cell.metric.unit
  seeds = r.spread.get("ours") if r.spread else None
  if r.ours.status != OK:
    text = _status_text(r.ours) + (f" ({seeds.count_text()})" if seeds else "")
  elif seeds is not None:
    text = seeds.text(lambda v: _number(v, unit))
  else:
    text = _number(r.ours.value, unit)
  if r.speedup is not None and r.speedup.status == OK:
    text += f" ({r.speedup.value:.1f}×)"
  if r.ratio is not None and r.ratio.status == OK:
    text += f" ({r.ratio.value:.1f})"
  if r.ours.choice is not None:  # McMahan 2017 §3's grid: the chosen rate.
    text += f" [{r.ours.choice.text()}]"
  return text


NOT_IN_PAPER = "not in the paper"


def _ours_only(table) -> Optional[str]:
  """Why a table has no published numbers (a paper that prints none, or a
  researcher's own preset), else None."""
  paper = table.key[0]
  if table.key in published_lib.NO_PRINTED_TABLES:
    return published_lib.NO_PRINTED_TABLES[table.key]
  if paper not in published_lib.PAPERS:
    return f"{paper} is not a paper the package carries numbers of"
  return published_lib.NO_PRINTED_NUMBERS.get(paper)


def paper_text(r: CellResult) -> str:
  if r.cell.row in r.table.added_rows:
    return NOT_IN_PAPER
  if r.paper is None:
    return "" if _ours_only(r.table) else NOT_TRANSCRIBED
  if r.paper.not_reached_within is not None:
    return f"not reached within {r.paper.text} rounds"
  text = r.paper.text.replace("x)", "×)")  # As printed.
  return text + (" ‡" if inconsistent_print(r) else "")


def inconsistent_print(r: CellResult) -> Optional[str]:
  """Why the paper's printed "(k.k)" disagrees with its own printed rounds
  (a footnote), or None: Hsu 2020 Table 5's ratio and McMahan Table 1's
  speedup are treated alike (`published.INCONSISTENT_PRINTS`)."""
  key = r.table.key + (r.cell.row, r.cell.column)
  if key not in published_lib.INCONSISTENT_PRINTS or r.paper is None:
    return None
  v = r.paper.value
  if r.cell.ratio_to is not None and r.paper_ratio:
    what = (f"{v:.0f} / {v / r.paper_ratio:.0f} = {r.paper_ratio:.1f} (its "
            f"rounds over its {r.cell.ratio_to} rounds)")
  elif r.paper_speedup is not None:
    what = (f"{r.paper_speedup * v:.0f} / {v:.0f} = {r.paper_speedup:.1f}× "
            "(its reference's rounds over its rounds)")
  else:
    return None
  printed = r.paper.text.replace("x)", "×)")
  return (f"‡ ({r.cell.row}, {r.cell.column}): the paper prints "
          f"\"{printed}\"; its printed rounds give {what}; ours are "
          "recomputed from rounds.")


def cell_text(r: CellResult) -> str:
  """'ours / paper (Δ ...)' as the markdown cell shows it."""
  text = f"{ours_text(r)} / {paper_text(r)}"
  diff = r.difference
  if diff is not None:
    delta = (f"Δ {diff:+.2f}" if r.cell.metric.unit == "%" else
             f"Δ {diff:+.0f}")
    if r.paper_inside is not None:  # Over seeds: inside our interval?
      delta += "; paper inside" if r.paper_inside else "; paper outside"
    text += f" ({delta})"
  if r.unverified is not None:
    text += " †"
  return text


def _grid(rows: Sequence[str], columns: Sequence[str], text, groups=(),
          omitted=()) -> List[str]:
  """The markdown grid; a group's label (bold) above its first row; each
  omitted row with its reason in every column."""
  heads = {rs[0]: label for label, rs in groups if rs}
  out = ["| | " + " | ".join(columns) + " |",
         "|---|" + "|".join("---" for _ in columns) + "|"]
  for row in rows:
    if row in heads:
      out.append(f"| **{heads[row]}** |" + " |" * len(columns))
    out.append(f"| {row} | " + " | ".join(text(row, c) for c in columns) + " |")
  for row, why in omitted:
    out.append(f"| {row} | " + " | ".join(why for _ in columns) + " |")
  return out


def format_markdown(report: Report) -> str:
  """The preset's tables in the papers' layouts, then footnotes and studies."""
  p = report.preset
  lines = [f"# {p.name}", "", p.description, "",
           f"Paper: {published_lib.PAPERS.get(p.paper, p.paper)}", "",
           f"Results: `{report.root}`", ""]
  for note in p.notes:
    lines.append(f"- {note}")
  if p.notes:
    lines.append("")
  if p.skipped_runs:
    lines += ["Runs skipped (their method cannot join the compared run):", ""]
    lines += [f"- {name}: {why}" for name, why in p.skipped_runs] + [""]
  for table in p.tables:
    cells = {(r.cell.row, r.cell.column): r for r in report.cells
             if r.table is table}
    ours_only = _ours_only(table)
    lines += [f"## {table.title}", "",
              f"Each cell: ours ({ours_only}). Accuracies in %." if ours_only
              else "Each cell: ours / paper (Δ = ours − paper, in the "
              "paper's unit). Accuracies in %.", ""]
    if seeds_lib.num_seeds(p) > 1:
      lines += [_SEEDS_NOTE.format(n=seeds_lib.num_seeds(p)), ""]
    text = ours_text if ours_only else cell_text
    lines += _grid(table.rows, table.columns,
                   lambda row, col: text(cells[(row, col)])
                   if (row, col) in cells else "", table.groups,
                   table.omitted_rows)
    if any(r.relative is not None for r in cells.values()):
      lines += ["", "Relative accuracy (ours / our centralized run):", ""]
      lines += _grid(table.rows, table.columns, lambda row, col: _rel_text(
          cells.get((row, col))))
    notes = _footnotes(cells.values())
    if notes:
      lines += [""] + notes
    vias = sorted({r.paper.via for r in cells.values() if r.paper})
    if vias:  # Where the paper's numbers beside ours were read.
      lines += [""] + [f"Published numbers read in: {via}." for via in vias]
    lines.append("")
  for study in report.studies:
    lines += effective_lr.format_markdown(study) + [""]
  lines += comparisons_lib.markdown_lines(report.comparisons)
  if p.sources:
    lines += ["## Settings and their sources", ""] + p.source_lines()
  return "\n".join(lines).rstrip() + "\n"


_SEEDS_NOTE = (
    "Over {n} seeds (`--seeds={n}`): ours = mean ± half width of the 95% "
    "t-interval (t_0.975,n-1 · s/√n) over the seeds with a number, n shown "
    "(n of {n}: the footnotes say why the others have none); \"paper "
    "inside\" / \"outside\": the paper's number in / outside that "
    "interval.")


def _rel_text(r: Optional[CellResult]) -> str:
  if r is None or r.relative is None:
    return ""
  if r.relative.status != OK:
    return _status_text(r.relative)
  seeds = r.spread.get("relative") if r.spread else None
  return (seeds.text(lambda v: f"{v:.3f}") if seeds is not None else
          f"{r.relative.value:.3f}")


def _footnotes(cells) -> List[str]:
  out, seen = [], set()
  for r in cells:
    values = [v for v in (r.ours, r.relative, r.speedup) if v is not None]
    for s in (r.spread or {}).values():  # Each seed without a number.
      values += [Value(None, st, d) for st, d in zip(s.statuses, s.details)]
    for v in values:
      if v.status != OK and v.detail and v.detail not in seen:
        seen.add(v.detail)
        out.append(f"- {_status_text(v)}: {v.detail}")
    note = inconsistent_print(r)
    if note:
      out.append(f"- {note}")
    if r.unverified is not None:
      u = r.unverified
      out.append(f"- † ({r.cell.row}, {r.cell.column}): {u.value:g}{u.unit} "
                 f"quoted by {u.claimed_by}; not used.")
  return out


CSV_COLUMNS = ("preset", "table", "row", "column", "run", "method", "metric",
               "metric_arg", "unit", "ours", "ours_status", "ours_detail",
               "paper", "paper_text", "difference", "relative",
               "relative_status", "speedup", "ratio", "paper_ratio",
               "baseline", "paper_quote",
               "paper_via", "unverified_value", "unverified_source",
               "n", "n_seeds", "ci_low", "ci_high", "paper_in_interval",
               "seed_values", "learning_rate", "learning_rate_grid")


def csv_rows(report: Report) -> List[Dict[str, object]]:
  """One row per cell with raw values ('' = none)."""
  out = []
  for r in report.cells:
    rel, sp = r.relative, r.speedup
    out.append({
        "preset": report.preset.name, "table": "/".join(r.table.key),
        "row": r.cell.row, "column": r.cell.column, "run": r.cell.run,
        "method": r.cell.method or "", "metric": r.cell.metric.kind,
        "metric_arg": r.cell.metric.arg if r.cell.metric.arg is not None
        else (r.cell.metric.key or ""),
        "unit": r.cell.metric.unit, "ours": _raw(r.ours.value),
        "ours_status": r.ours.status, "ours_detail": r.ours.detail,
        "paper": _raw(r.paper.value) if r.paper else "",
        "paper_text": paper_text(r),
        "difference": _raw(r.difference),
        "relative": _raw(rel.value) if rel else "",
        "relative_status": rel.status if rel else "",
        "speedup": _raw(sp.value) if sp else "",
        "ratio": _raw(r.ratio.value) if r.ratio else "",
        "paper_ratio": _raw(r.paper_ratio),
        "baseline": r.cell.baseline or "",
        "paper_quote": r.paper.quote if r.paper else "",
        "paper_via": r.paper.via if r.paper else "",
        "unverified_value": r.unverified.value if r.unverified else "",
        "unverified_source": r.unverified.claimed_by if r.unverified else "",
        **_seed_columns(r), **_grid_columns(r)})
  return out


def _grid_columns(r: CellResult) -> Dict[str, object]:
  """The rate a grid cell was read at ('' = none or no grid) and the grid
  as 'rate:rounds;...' ('' rounds: not reached, diverged)."""
  choice = r.ours.choice
  if choice is None:
    return {"learning_rate": "", "learning_rate_grid": ""}
  return {"learning_rate": _raw(choice.rate),
          "learning_rate_grid": ";".join(
              f"{rate!r}:{'' if rounds is None else repr(rounds)}"
              for rate, rounds in choice.grid)}


def _seed_columns(r: CellResult) -> Dict[str, object]:
  """n (seeds with a number), n_seeds, the 95% interval, whether the
  paper's number is inside, and the per-seed values ('' = none);
  one seed: n = n_seeds = 1 (0 without a number), no interval."""
  seeds = r.spread.get("ours") if r.spread else None
  if seeds is None:
    one = r.ours.status == OK
    return {"n": int(one), "n_seeds": 1, "ci_low": "", "ci_high": "",
            "paper_in_interval": "",
            "seed_values": _raw(r.ours.value) if one else ""}
  interval = seeds.interval
  return {"n": seeds.n, "n_seeds": seeds.total,
          "ci_low": interval.low if interval else "",
          "ci_high": interval.high if interval else "",
          "paper_in_interval": _raw(r.paper_inside),
          "seed_values": ";".join("" if v is None else repr(v)
                                  for v in seeds.values)}


def _raw(v):
  return "" if v is None else v


def write_report(report: Report, output_dir: str) -> Dict[str, str]:
  """Writes <preset>.md, <preset>.csv, <preset>_summary.json (every cell's
  numbers and every comparison, `summary_json`) and each study's CSV and
  PNG.

  Files are written to a temporary name and renamed, so a failure never
  leaves a half-written report. Returns {kind: path}.
  """
  os.makedirs(output_dir, exist_ok=True)
  name = report.preset.name
  paths = {"markdown": os.path.join(output_dir, f"{name}.md"),
           "csv": os.path.join(output_dir, f"{name}.csv")}
  _atomic_write(paths["markdown"], lambda f: f.write(format_markdown(report)))

  def write_csv(f):
    writer = csv.DictWriter(f, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_rows(report))
  _atomic_write(paths["csv"], write_csv)
  paths["summary"] = os.path.join(output_dir, f"{name}_summary.json")
  _atomic_write(paths["summary"], lambda f: json.dump(
      summary_json(report), f, indent=1, allow_nan=False))
  for study in report.studies:
    paths.update(effective_lr.write_study(
        study, os.path.join(output_dir, f"{name}_{study.spec.key}")))
  return paths


def summary_json(report: Report) -> Dict[str, object]:
  """The report as data: the seeds, every cell (`csv_rows`' values, None
  for none) and every paired comparison (`comparisons.to_json`)."""
  def plain(v):
    return None if v == "" else v
  return {"preset": report.preset.name,
          "seeds": seeds_lib.num_seeds(report.preset),
          "cells": [{k: plain(v) for k, v in row.items()}
                    for row in csv_rows(report)],
          "comparisons": [comparisons_lib.to_json(r)
                          for r in report.comparisons]}


def _atomic_write(path: str, write) -> None:
  with run_files.atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
    write(f)
