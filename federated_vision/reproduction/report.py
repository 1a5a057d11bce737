"""A preset's tables filled from run directories, next to the published ones.

For every cell of a preset's `TableSpec`s: our value (from the run's
summary.json / metrics.csv), the paper's (`published`), their difference in
the paper's unit, our relative accuracy against our own same-pipeline
centralized run, and McMahan's speedup where the cell has a reference. A cell
whose run is missing, running, diverged or from another configuration says so
instead of a number; relative accuracy is never computed from a diverged
method or a missing/running/diverged centralized baseline. Written as
markdown (the paper's layout) and CSV (one row per cell, raw values).

With `--seeds=N` (`seeds.expand`) every cell is read once per repetition and
shows the mean and 95% t-interval over the seeds with a number (`spread`),
n shown, the paper's number beside it and whether it lies inside.
"""

import csv
import dataclasses
import math
import os
from typing import Callable, Dict, List, Mapping, Optional, Sequence


from federated_vision.evaluation import convergence
from federated_vision.evaluation import curves
from federated_vision.reproduction import effective_lr
from federated_vision.reproduction import published as published_lib
from federated_vision.reproduction import results
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.reproduction import spec
from federated_vision.reproduction import spread as spread_lib

OK = "ok"
NOT_REACHED = "not_reached"
UNAVAILABLE = "unavailable"
NOT_TRANSCRIBED = "n/a (not transcribed)"


@dataclasses.dataclass(frozen=True)
class Value:
  """A number or why there is none.

  Attributes:
    value: in the display unit (percent for accuracies), None unless OK.
    status: OK, NOT_REACHED, UNAVAILABLE or a `results` status.
    detail: one line naming the file/run when not OK.
  """
  value: Optional[float]
  status: str
  detail: str = ""


def _ok(value: float) -> Value:
  return Value(float(value), OK)


@dataclasses.dataclass(frozen=True)
class CellResult:
  """A filled cell: ours, the paper's, and what derives from both."""
  table: spec.TableSpec
  cell: spec.CellSpec
  ours: Value
  relative: Optional[Value]
  speedup: Optional[Value]
  paper: Optional[published_lib.PublishedValue]
  unverified: Optional[published_lib.UnverifiedValue]
  ratio: Optional[Value] = None        # ours / ours at `cell.ratio_to`
  paper_ratio: Optional[float] = None  # the paper's, recomputed likewise
  # --seeds: "ours" / "relative" / "speedup" / "ratio" -> its per-seed
  # values (each Value above is then their mean); None: one seed.
  spread: Optional[Mapping[str, spread_lib.Spread]] = None

  @property
  def interval(self):
    """The 95% t-interval of ours over the seeds (None: fewer than 2)."""
    return self.spread["ours"].interval if self.spread else None

  @property
  def paper_inside(self) -> Optional[bool]:
    """Whether the paper's number lies in our interval (None: no interval
    or no paper number)."""
    if self.interval is None or self.paper is None or self.paper.value is None:
      return None
    return self.interval.contains(self.paper.value)

  @property
  def difference(self) -> Optional[float]:
    """ours - paper in the paper's unit; None unless both are numbers."""
    if self.ours.status != OK or self.paper is None or self.paper.value is None:
      return None
    return self.ours.value - self.paper.value


@dataclasses.dataclass(frozen=True)
class Report:
  preset: spec.Preset
  root: str
  cells: Sequence[CellResult]
  studies: Sequence["effective_lr.StudyResult"]


class _Context:
  """Run directories and curves of one report, read once."""

  def __init__(self, preset: spec.Preset, root: str):
    self.runs = results.read_runs(root, preset.runs)
    self._rows = {}

  def method(self, run: str, method: str) -> results.MethodState:
    return results.method_state(self.runs[run], method)

  def rows(self, run: str, method: str):
    key = (run, method)
    if key not in self._rows:
      self._rows[key] = results.read_metrics(self.runs[run], method)
    return self._rows[key]

  def baseline(self, run: Optional[str]) -> Value:
    if run is None:
      return Value(None, UNAVAILABLE, "no centralized baseline")
    acc, status, detail = results.centralized_accuracy(self.runs[run])
    if status != results.FINISHED:
      return Value(None, status, f"baseline {run} is {status}: {detail}")
    return Value(acc, OK)


def _curve_value(ctx, cell, x_key: str) -> Value:
  """Acc@Round / Acc@Batch N from metrics.csv (the run must reach N)."""
  n = cell.metric.arg
  rows = ctx.rows(cell.run, cell.method)
  xs, accs = curves.curve(rows, x_key)
  reached = max((float(r[x_key]) for r in rows), default=0.0)
  if reached < n:
    what = "rounds" if x_key == "round" else "cumulative batches"
    return Value(None, UNAVAILABLE, f"{cell.run}/{cell.method}: {reached:g} "
                 f"{what} < {n:g}")
  acc = curves.accuracy_at(xs, accs, n)
  if acc is None:
    return Value(None, UNAVAILABLE, f"{cell.run}/{cell.method}: no evaluation "
                 f"at or before {n:g}")
  if not math.isfinite(acc):
    return Value(None, results.DIVERGED, f"{cell.run}/{cell.method}: accuracy "
                 f"{acc} at {n:g}")
  return _ok(100 * acc)


def _rounds_value(ctx, run: str, method: str, target: float) -> Value:
  rows = ctx.rows(run, method)
  rounds, accs = curves.curve(rows, "round")
  r = convergence.rounds_to_target(rounds, accs, target)
  if r is None:
    last = max((float(x["round"]) for x in rows), default=0.0)
    return Value(None, NOT_REACHED, f"{run}/{method}: {target:.4g} not reached "
                 f"in {last:g} rounds")
  return _ok(r)


def _ours(ctx: _Context, cell: spec.CellSpec) -> Value:
  kind = cell.metric.kind
  run = ctx.runs[cell.run]
  if kind == spec.CENTRALIZED_ACCURACY:
    acc, status, detail = results.centralized_accuracy(run)
    return _ok(100 * acc) if status == results.FINISHED else Value(
        None, status, detail)
  if kind == spec.EMD:
    if run.status != results.FINISHED:
      return Value(None, run.status, run.detail)
    emd = run.summary.get("emd")
    if not isinstance(emd, (int, float)) or not math.isfinite(emd):
      return Value(None, UNAVAILABLE, f"{run.path}/summary.json: emd {emd!r}")
    return _ok(emd)
  state = ctx.method(cell.run, cell.method)
  if state.status != results.FINISHED:
    return Value(None, state.status, state.detail)
  try:
    if kind == spec.FINAL_ACCURACY:
      return _ok(100 * state.entry["final_accuracy"])
    if kind == spec.METHOD_FIELD:
      v = state.entry.get(cell.metric.key)
      if not isinstance(v, (int, float)) or not math.isfinite(v):
        return Value(None, UNAVAILABLE, f"{run.path}/summary.json: method "
                     f"{cell.method} has {cell.metric.key}={v!r}")
      return _ok(100 * v)
    if kind == spec.ACC_AT_ROUND:
      return _curve_value(ctx, cell, "round")
    if kind == spec.ACC_AT_BATCH:
      return _curve_value(ctx, cell, "cumulative_batch_budget")
    if kind == spec.ROUNDS_TO_TARGET:
      return _rounds_value(ctx, cell.run, cell.method, cell.metric.arg)
    # ROUNDS_TO_RELATIVE: the target is a fraction of our centralized accuracy.
    base = ctx.baseline(cell.baseline)
    if base.status != OK:
      return Value(None, UNAVAILABLE, base.detail)
    return _rounds_value(ctx, cell.run, cell.method,
                         cell.metric.arg * base.value)
  except ValueError as e:  # Malformed metrics.csv: name the run and file.
    return Value(None, results.INVALID,
                 f"{cell.run}/{cell.method}: {str(e).splitlines()[0]}")


def _relative(ctx, cell: spec.CellSpec, ours: Value) -> Optional[Value]:
  """ours / our centralized accuracy, for accuracy cells with a baseline."""
  if cell.baseline is None or cell.metric.kind not in spec.ACCURACY_KINDS or \
      cell.metric.kind == spec.CENTRALIZED_ACCURACY:
    return None
  if ours.status != OK:
    return Value(None, ours.status, ours.detail)
  base = ctx.baseline(cell.baseline)
  if base.status != OK:
    return Value(None, base.status, base.detail)
  return _ok(ours.value / 100 / base.value)  # baseline checked > 0


def _speedup(ctx, cell: spec.CellSpec, ours: Value) -> Optional[Value]:
  if cell.speedup_reference is None:
    return None
  ref_run, ref_method = cell.speedup_reference
  ref_state = ctx.method(ref_run, ref_method)
  if ref_state.status != results.FINISHED:
    return Value(None, ref_state.status, ref_state.detail)
  ref = _rounds_value(ctx, ref_run, ref_method, cell.metric.arg)
  if ours.status != OK or ref.status != OK:
    bad = ours if ours.status != OK else ref
    return Value(None, bad.status, bad.detail)
  return _ok(convergence.speedup(ref.value, ours.value))


def fill(table: spec.TableSpec, ctx: _Context,
         lookup: Callable[[tuple], Optional[published_lib.PublishedValue]],
         ) -> List[CellResult]:
  out = {}
  for cell in table.cells:
    ours = _ours(ctx, cell)
    key = table.key + (cell.row, cell.column)
    out[cell.row, cell.column] = CellResult(
        table, cell, ours, _relative(ctx, cell, ours),
        _speedup(ctx, cell, ours), lookup(key),
        published_lib.UNVERIFIED.get(key))
  return [_with_ratio(r, out.get((r.cell.row, r.cell.ratio_to)))
          for r in out.values()]


def _with_ratio(r: CellResult, ref: Optional[CellResult]) -> CellResult:
  """Hsu 2020 Table 5's "(k.k)": rounds / rounds at `ratio_to`, recomputed
  for ours and for the paper's printed rounds (never copied)."""
  if ref is None:
    return r
  ratio = (_ok(r.ours.value / ref.ours.value) if OK == r.ours.status ==
           ref.ours.status and ref.ours.value > 0 else None)
  p, q = r.paper, ref.paper
  paper = (p.value / q.value if p and q and p.value is not None and
           q.value else None)
  return dataclasses.replace(r, ratio=ratio, paper_ratio=paper)


def _replica_table(table: spec.TableSpec, preset: spec.Preset, k: int
                   ) -> spec.TableSpec:
  """`table` with every run (cell, baseline, speedup reference) replaced by
  its k-th repetition: each seed's cells read that seed's runs only."""
  def name(run):
    return seeds_lib.replicas(preset, run)[k]
  cells = tuple(dataclasses.replace(
      c, run=name(c.run), baseline=c.baseline and name(c.baseline),
      speedup_reference=c.speedup_reference and (
          name(c.speedup_reference[0]), c.speedup_reference[1]))
                for c in table.cells)
  return dataclasses.replace(table, cells=cells)


def fill_seeds(table: spec.TableSpec, preset: spec.Preset, ctx: _Context,
               lookup, n: int) -> List[CellResult]:
  """Each cell over the n seeds: per-seed results (`fill` on each seed's
  runs) combined into their means, with the per-seed values (`spread`)."""
  per_seed = [{(r.cell.row, r.cell.column): r for r in
               fill(_replica_table(table, preset, k), ctx, lookup)}
              for k in range(n)]
  return [_combine(table, c, [p[(c.row, c.column)] for p in per_seed])
          for c in table.cells]


def _combine(table, cell, per_seed: Sequence[CellResult]) -> CellResult:
  spreads = {}

  def mean(key, get) -> Optional[Value]:
    values = [get(r) for r in per_seed]
    if all(v is None for v in values):
      return None
    spreads[key] = s = spread_lib.Spread.of(values)
    if s.n:
      return _ok(s.mean)
    return next(v for v in values if v is not None)  # Why none has one.

  first = per_seed[0]
  return CellResult(
      table, cell, mean("ours", lambda r: r.ours),
      mean("relative", lambda r: r.relative),
      mean("speedup", lambda r: r.speedup), first.paper, first.unverified,
      mean("ratio", lambda r: r.ratio), first.paper_ratio, spreads)


def build_report(preset: spec.Preset, root: str,
                 published: Optional[Mapping[tuple,
                                             published_lib.PublishedValue]] = None,
                 ) -> Report:
  """Fills every table and study of `preset` from `<root>/<run>/`.

  Args:
    preset: the preset.
    root: the results root holding one directory per run name.
    published: published values by (paper, table, row, column); default
      `published.PUBLISHED`.

  Returns:
    The `Report` (nothing is written).
  """
  table = published_lib.PUBLISHED if published is None else published
  ctx = _Context(preset, root)
  cells = []
  n = seeds_lib.num_seeds(preset)
  for t in preset.tables:
    cells += (fill(t, ctx, table.get) if n == 1 else
              fill_seeds(t, preset, ctx, table.get, n))
  studies = [effective_lr.run_study(study, preset, ctx.runs)
             for study in preset.studies]
  return Report(preset, root, tuple(cells), tuple(studies))


# ------------------------------------------------------------------ formatting
def _number(v: float, unit: str) -> str:
  if unit == "rounds":
    return f"{v:.0f}"
  return f"{v:.2f}" if unit == "%" else f"{v:.3f}"


def _status_text(v: Value) -> str:
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
  return text


def paper_text(r: CellResult) -> str:
  if r.paper is None:
    return ("" if r.table.key[0] in published_lib.NO_PRINTED_NUMBERS
            else NOT_TRANSCRIBED)
  if r.paper.not_reached_within is not None:
    return f"not reached within {r.paper.text} rounds"
  if r.cell.ratio_to is not None and r.paper.value is not None:
    ratio = "" if r.paper_ratio is None else f" ({r.paper_ratio:.1f})"
    return f"{r.paper.value:.0f}{ratio}"
  return r.paper.text.replace("x)", "×)")


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


def _grid(rows: Sequence[str], columns: Sequence[str], text) -> List[str]:
  out = ["| | " + " | ".join(columns) + " |",
         "|---|" + "|".join("---" for _ in columns) + "|"]
  for row in rows:
    out.append(f"| {row} | " + " | ".join(text(row, c) for c in columns) + " |")
  return out


def format_markdown(report: Report) -> str:
  """The preset's tables in the papers' layouts, then footnotes and studies."""
  p = report.preset
  lines = [f"# {p.name}", "", p.description, "",
           f"Paper: {published_lib.PAPERS[p.paper]}", "",
           f"Results: `{report.root}`", ""]
  for note in p.notes:
    lines.append(f"- {note}")
  if p.notes:
    lines.append("")
  for table in p.tables:
    cells = {(r.cell.row, r.cell.column): r for r in report.cells
             if r.table is table}
    ours_only = published_lib.NO_PRINTED_NUMBERS.get(table.key[0])
    lines += [f"## {table.title}", "",
              f"Each cell: ours ({ours_only}). Accuracies in %." if ours_only
              else "Each cell: ours / paper (Δ = ours − paper, in the "
              "paper's unit). Accuracies in %.", ""]
    if seeds_lib.num_seeds(p) > 1:
      lines += [_SEEDS_NOTE.format(n=seeds_lib.num_seeds(p)), ""]
    text = ours_text if ours_only else cell_text
    lines += _grid(table.rows, table.columns,
                   lambda row, col: text(cells[(row, col)])
                   if (row, col) in cells else "")
    if any(r.relative is not None for r in cells.values()):
      lines += ["", "Relative accuracy (ours / our centralized run):", ""]
      lines += _grid(table.rows, table.columns, lambda row, col: _rel_text(
          cells.get((row, col))))
    notes = _footnotes(cells.values())
    if notes:
      lines += [""] + notes
    lines.append("")
  for study in report.studies:
    lines += effective_lr.format_markdown(study) + [""]
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
               "seed_values")


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
        **_seed_columns(r)})
  return out


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
  """Writes <preset>.md, <preset>.csv and each study's CSV and PNG.

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
  for study in report.studies:
    paths.update(effective_lr.write_study(
        study, os.path.join(output_dir, f"{name}_{study.spec.key}")))
  return paths


def _atomic_write(path: str, write) -> None:
  tmp = path + ".tmp"
  try:
    with open(tmp, "w", newline="") as f:
      write(f)
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)
