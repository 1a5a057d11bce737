"""A preset's tables filled from run directories, next to the published ones.

For every cell of a preset's `TableSpec`s: our value (from the run's
summary.json / metrics.csv), the paper's (`published`), their difference in
the paper's unit, our relative accuracy against our own same-pipeline
centralized run, and McMahan's speedup where the cell has a reference. A cell
whose run is missing, running, diverged or from another configuration says so
instead of a number; relative accuracy is never computed from a diverged
method or a missing/running/diverged centralized baseline. Written as
markdown (the paper's layout) and CSV (one row per cell, raw values) by
`report_text`.

With `--seeds=N` (`seeds.expand`) every cell is read once per repetition and
shows the mean and 95% t-interval over the seeds with a number (`spread`),
n shown, the paper's number beside it and whether it lies inside.
"""

import dataclasses
import math
from typing import Callable, List, Mapping, Optional, Sequence


from federated_vision.evaluation import convergence
from federated_vision.evaluation import curves
from federated_vision.reproduction import comparisons as comparisons_lib
from federated_vision.reproduction import effective_lr
from federated_vision.reproduction import figures as figures_lib
from federated_vision.reproduction import lr_grid
from federated_vision.reproduction import published as published_lib
from federated_vision.reproduction import results
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.reproduction import claim_spec
from federated_vision.reproduction import spec
from federated_vision.reproduction import spread as spread_lib
from federated_vision.training import run_files

OK = "ok"
NOT_REACHED = "not_reached"
UNAVAILABLE = results.UNAVAILABLE
NOT_TRANSCRIBED = "n/a (not transcribed)"
PAPER_ONLY = "paper only"  # A column that shows the paper's text alone.


@dataclasses.dataclass(frozen=True)
class Value:
  """A number or why there is none.

  Attributes:
    value: in the display unit (percent for accuracies), None unless OK.
    status: OK, NOT_REACHED, UNAVAILABLE or a `results` status.
    detail: one line naming the file/run when not OK.
    choice: for a rounds value over a learning-rate grid (`lr_grid`), the
      rate it was read at and the grid; None otherwise.
  """
  value: Optional[float]
  status: str
  detail: str = ""
  choice: Optional[lr_grid.Choice] = None


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
  # The paper's speedup recomputed from its printed rounds (McMahan).
  paper_speedup: Optional[float] = None
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
  comparisons: Sequence[comparisons_lib.Result] = ()
  figures: Sequence[figures_lib.FigureResult] = ()


class _Context:
  """Run directories and curves of one report, read once."""

  def __init__(self, preset: spec.Preset, root: str):
    self.preset = preset
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


def _curve_value(ctx, cell, x_key: str, n: Optional[float] = None) -> Value:
  """Acc@Round / Acc@Batch N (the metric's argument, or `n`) from
  metrics.csv (the run must reach N)."""
  n = cell.metric.arg if n is None else n
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


def _one_rounds(ctx, run: str, method: Optional[str], target: float) -> Value:
  """Rounds of one run's method to `target` (McMahan's monotone,
  interpolated curve); method None: a centralized run's minibatch updates
  (`UPDATES_TO_TARGET`). The method (or baseline) must be finished."""
  if method is None:
    return _updates_value(ctx.runs[run], target)
  state = ctx.method(run, method)
  if state.status != results.FINISHED:
    return Value(None, state.status, state.detail)
  try:
    rows = ctx.rows(run, method)
    rounds, accs = curves.curve(rows, "round")
    r = convergence.rounds_to_target(rounds, accs, target)
  except (ValueError, run_files.RunFileError) as e:  # Damaged metrics.csv.
    return Value(None, results.INVALID,
                 f"{run}/{method}: {str(e).splitlines()[0]}")
  if r is None:
    last = max((float(x["round"]) for x in rows), default=0.0)
    return Value(None, NOT_REACHED, f"{run}/{method}: {target:.4g} not reached "
                 f"in {last:g} rounds")
  return _ok(r)


def _updates_value(run: results.RunDir, target: float) -> Value:
  """Minibatch updates of a centralized run's SGD to `target`: its
  per-epoch test accuracies (summary.json "centralized": "history") at
  "minibatch_updates", monotone and interpolated as McMahan's rounds."""
  updates, history, status, detail = results.sgd_curve(run)
  if status != results.FINISHED:
    return Value(None, status, detail)
  try:
    r = convergence.rounds_to_target(updates, history, target)
  except ValueError as e:
    return Value(None, results.INVALID, f"{run.path}/summary.json: {e}")
  if r is None:
    return Value(None, NOT_REACHED, f"{run.name}: {target:.4g} not reached "
                 f"in {updates[-1]:g} minibatch updates")
  return _ok(r)


def _rounds_value(ctx, run: str, method: Optional[str], target: float
                  ) -> Value:
  """`_one_rounds` of `run`, or over its learning-rate grid the member
  whose monotone curve reaches `target` first (`lr_grid.choose`): a number
  only once every rate of the grid has finished (or diverged)."""
  names = lr_grid.members(ctx.preset, run)
  if len(names) == 1:
    return _one_rounds(ctx, run, method, target)
  values, by_rate, runs = {}, {}, {}
  for name in names:
    rate = ctx.preset.run(name).flags[lr_grid.LR_FLAG]
    v = _one_rounds(ctx, name, method, target)
    values[name] = v
    by_rate[rate] = v.value if v.status == OK else None
    runs[rate] = name
  pending = [(n, v) for n, v in values.items()
             if v.status not in (OK, NOT_REACHED, results.DIVERGED)]
  if pending:
    name, v = pending[0]
    return Value(None, v.status, f"learning-rate grid of {run}: "
                 f"{len(names) - len(pending)} of {len(names)} rates "
                 f"finished; {v.detail}")
  choice = lr_grid.choose(by_rate, runs)
  if choice.rate is None:
    return Value(None, NOT_REACHED, f"{run}: no rate of its grid reaches "
                 f"{target:.4g} ({choice.text()})", choice)
  return Value(choice.rounds, OK, "", choice)


def _ours(ctx: _Context, cell: spec.CellSpec) -> Value:
  kind = cell.metric.kind
  run = ctx.runs[cell.run]
  if kind == spec.CENTRALIZED_ACCURACY:
    acc, status, detail = results.centralized_accuracy(run)
    return _ok(100 * acc) if status == results.FINISHED else Value(
        None, status, detail)
  if kind == spec.PAPER_ONLY:
    return Value(None, PAPER_ONLY)
  if kind == spec.UPDATES_TO_TARGET:
    return _rounds_value(ctx, cell.run, None, cell.metric.arg)
  if kind == spec.RUN_FIELD:
    return _run_field(run, cell.metric.key)
  if kind == spec.EMD:
    if run.status != results.FINISHED:
      return Value(None, run.status, run.detail)
    emd = run.summary.get("emd")
    if not isinstance(emd, (int, float)) or not math.isfinite(emd):
      return Value(None, UNAVAILABLE, f"{run.path}/summary.json: emd {emd!r}")
    return _ok(emd)
  if kind in spec.ROUNDS_KINDS:  # Each run's own state (grids: every rate).
    if len(lr_grid.members(ctx.preset, cell.run)) == 1:
      state = ctx.method(cell.run, cell.method)
      if state.status != results.FINISHED:
        return Value(None, state.status, state.detail)
    target = cell.metric.arg
    if kind == spec.ROUNDS_TO_RELATIVE:  # A fraction of our centralized acc.
      base = ctx.baseline(cell.baseline)
      if base.status != OK:
        return Value(None, UNAVAILABLE, base.detail)
      target = cell.metric.arg * base.value
    return _rounds_value(ctx, cell.run, cell.method, target)
  state = ctx.method(cell.run, cell.method)
  if state.status != results.FINISHED:
    return Value(None, state.status, state.detail)
  try:
    if kind == spec.FINAL_ACCURACY:
      return _ok(100 * state.entry["final_accuracy"])
    if kind == spec.METHOD_FIELD and cell.compared_run is not None and \
        cell.metric.key in _COMPARED_REFERENCES:
      return _at_compared_reference(ctx, cell)
    if kind == spec.METHOD_FIELD:
      v = state.entry.get(cell.metric.key)
      if not isinstance(v, (int, float)) or not math.isfinite(v):
        return Value(None, UNAVAILABLE, f"{run.path}/summary.json: method "
                     f"{cell.method} has {cell.metric.key}={v!r}")
      return _ok(100 * v)
    if kind == spec.ACC_AT_ROUND:
      return _curve_value(ctx, cell, "round")
    return _curve_value(ctx, cell, "cumulative_batch_budget")  # ACC_AT_BATCH
  except (ValueError, run_files.RunFileError) as e:  # Damaged metrics.csv.
    return Value(None, results.INVALID,
                 f"{cell.run}/{cell.method}: {str(e).splitlines()[0]}")


# summary.json's per-method fields read at a reference common to the run's
# methods: (the run's summary.json key of that reference, the metrics.csv
# column it counts). A row added beside a run reads them at that run's.
_COMPARED_REFERENCES = {
    "acc_at_batch": ("acc_at_batch_ref", "cumulative_batch_budget"),
    "acc_at_round": ("acc_at_round_ref", "round")}


def _at_compared_reference(ctx, cell: spec.CellSpec) -> Value:
  """Acc@Batch / Acc@Round of `cell`'s method at its compared run's
  reference (that run's smallest final batch budget, its round), read from
  the method's own metrics.csv: the added row's number at the compared
  row's budget, never at its own run's."""
  ref_key, x_key = _COMPARED_REFERENCES[cell.metric.key]
  compared = ctx.runs[cell.compared_run]
  if compared.status != results.FINISHED:
    return Value(None, compared.status, f"compared run {compared.name} is "
                 f"{compared.status}: its {ref_key} is not known")
  ref = compared.summary.get(ref_key)
  if isinstance(ref, bool) or not isinstance(ref, (int, float)) or \
      not ref > 0:
    return Value(None, UNAVAILABLE, f"{compared.path}/summary.json: "
                 f"{ref_key} {ref!r}")
  return _curve_value(ctx, cell, x_key, float(ref))


def _run_field(run: results.RunDir, key: str) -> Value:
  """A count at the dotted path `key` of a finished run's hparams.json."""
  if run.status != results.FINISHED:
    return Value(None, run.status, run.detail)
  value = run.hparams
  for part in key.split("."):
    value = value.get(part) if isinstance(value, dict) else None
  if isinstance(value, bool) or not isinstance(value, (int, float)) or \
      not math.isfinite(value):
    return Value(None, UNAVAILABLE, f"{run.path}/hparams.json: {key} is "
                 f"{value!r}")
  return _ok(value)


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
  ref = _rounds_value(ctx, ref_run, ref_method, cell.metric.arg)
  if ref.status not in (OK, NOT_REACHED):  # The reference did not finish.
    return Value(None, ref.status, ref.detail)
  if ours.status != OK or ref.status != OK:
    bad = ours if ours.status != OK else ref
    return Value(None, bad.status, bad.detail)
  return _ok(convergence.speedup(ref.value, ours.value))


def fill(table: spec.TableSpec, ctx: _Context,
         lookup: Callable[[tuple], Optional[published_lib.PublishedValue]],
         ) -> List[CellResult]:
  out = {}
  # A reference cell of the same target (McMahan Table 3's SGD row holds one
  # run at three targets).
  reference_keys = {(c.run, c.method, c.metric.arg):
                    table.key + (c.row, c.column) for c in table.cells}
  for cell in table.cells:
    ours = _ours(ctx, cell)
    key = table.key + (cell.row, cell.column)
    out[cell.row, cell.column] = CellResult(
        table, cell, ours, _relative(ctx, cell, ours),
        _speedup(ctx, cell, ours), lookup(key),
        published_lib.UNVERIFIED.get(key),
        paper_speedup=_paper_speedup(
            lookup(key), cell.speedup_reference and lookup(
                reference_keys.get(cell.speedup_reference
                                   + (cell.metric.arg,)))))
  return [_with_ratio(r, out.get((r.cell.row, r.cell.ratio_to)))
          for r in out.values()]


def _paper_speedup(paper, reference) -> Optional[float]:
  """The paper's reference rounds / its rounds (McMahan's "(k.kx)",
  recomputed from the printed rounds)."""
  if paper is None or reference is None or not paper.value or \
      reference.value is None:
    return None
  return reference.value / paper.value


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
      compared_run=c.compared_run and name(c.compared_run),
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
      mean("ratio", lambda r: r.ratio), first.paper_ratio,
      first.paper_speedup, spreads)


def build_report(preset: spec.Preset, root: str,
                 published: Optional[Mapping[tuple,
                                             published_lib.PublishedValue]] = None,
                 ) -> Report:
  """Fills every table, study and figure of `preset` from `<root>/<run>/`.

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
  compared = [compare(c, preset, ctx) for c in preset.comparisons]
  drawn = figures_lib.fill_all(preset, ctx, _ours, table.get)
  return Report(preset, root, tuple(cells), tuple(studies), tuple(compared),
                drawn)


def compare(comparison: claim_spec.Comparison, preset: spec.Preset,
            ctx: _Context) -> comparisons_lib.Result:
  """A paired comparison over the preset's seeds: each side read as a cell
  on each repetition (`comparisons.evaluate`); a rounds target not reached
  is bounded by the repetition's --total_rounds."""
  sides = []
  for side in (comparison.a, comparison.b):
    values, budgets = [], []
    for name in seeds_lib.replicas(preset, side.run):
      values.append(_ours(ctx, dataclasses.replace(side.cell(), run=name)))
      budgets.append(preset.run(name).flags.get("total_rounds")
                     if side.metric.kind in spec.ROUNDS_KINDS else None)
    sides.append((values, budgets))
  (va, ba), (vb, bb) = sides
  return comparisons_lib.evaluate(comparison, va, vb, ba, bb)
