"""Your method in a paper's table: a preset with additional methods.

Hsu, Qi & Brown 2020 offer their splits "as benchmarks for future
improvements" (Sec. 6.4); `with_extra_methods(preset, ["fedavg+fedvc@adam"])`
is the preset with, for each of its tables, new rows for each additional
method beside the published ones, with the same settings as the rows they
are compared with:

* every federated run R a table's method cells read becomes the context of
  one new row per additional method M, labelled '<M's label> (as <R's
  first row>)' (`method_label`: its components' labels, as a reader knows
  them);
* M trains in a run of its own, '<R>+<M>', whose flags are R's with only
  the method selection replaced by `methods=[M]` (same data, model, rounds,
  clients per round, seed, hyper-parameters; M's own `:<field>=<value>`
  settings apply to M alone), so R's results and directory are untouched;
* a run M cannot join (`refusal`: the method checks a run makes fail, e.g.
  an algorithm the mixing strategies do not compose in R's --mixing) is
  not added: the preset lists it as skipped with the reason
  (`Preset.skipped_runs`, shown by the plan and the report), the rest run;
* each new cell is a cell of R's first row (same column, metric,
  centralized baseline, speedup reference) read from M in '<R>+<M>' (with
  R's mixing strategy, if its method had one) at R's own references: a
  number common to R's methods (Acc@Batch's batch budget) is R's, read
  from M's metrics.csv (`CellSpec.compared_run`), so the new row compares
  like with like; where that row's columns are different methods of R
  (FedVC off / on), only the columns of its first method are filled (M is
  one method);
* the new rows have no published number: the report says so
  (`added_rows`); the preset's sources gain M's components' citations for
  --methods.

Plain Python: no TensorFlow.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from federated_vision.errors import ConfigError, one_line
from federated_vision.reproduction import spec

FLAG = "extra_methods"


def selection_fields() -> Tuple[str, ...]:
  """The flags that choose a run's methods (`--methods` and its
  shorthands)."""
  from federated_vision.experiment import fields_read  # pylint: disable=g-import-not-at-top
  return ("methods",) + tuple(fields_read.method_shorthands())


def canonical(methods: Sequence[str]) -> Tuple[str, ...]:
  """The additional methods' canonical names.

  Raises:
    ConfigError: naming --extra_methods.
  """
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  if not methods:
    return ()
  try:
    return names.canonical_names(methods)
  except ConfigError as e:
    raise ConfigError(str(e).replace(f"--{names.FLAG}=", f"--{FLAG}=", 1),
                      FLAG) from None


def run_name(run: spec.Run, method: str) -> str:
  return f"{run.name}+{method}"


def extra_run(run: spec.Run, method: str) -> spec.Run:
  """`run` training `method` alone: its flags but the method selection."""
  drop = set(selection_fields())
  flags = {k: v for k, v in run.flags.items() if k not in drop}
  flags["methods"] = (method,)
  return dataclasses.replace(run, name=run_name(run, method), flags=flags)


def refusal(run: spec.Run, method: str) -> Optional[str]:
  """Why `method` cannot join `run` (`extra_run`'s method checks,
  `experiment.config.check_methods`, fail: one line), or None."""
  from federated_vision.experiment import config as config_lib  # pylint: disable=g-import-not-at-top
  try:
    config_lib.check_methods(config_lib.replace_fields(
        config_lib.ExperimentConfig(), extra_run(run, method).flag_dict()))
  except ValueError as e:  # ConfigError too.
    return one_line(e)
  return None


def _components(method: str):
  """The components of method name `method`: algorithm, variants, its own
  server optimizer (None: the algorithm's default)."""
  from federated_vision.methods import components as comp  # pylint: disable=g-import-not-at-top
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  parsed = names.parse(method)
  optimizer = (comp.get(parsed.server_optimizer)
               if parsed.server_optimizer else None)
  return (comp.get(parsed.algorithm), [comp.get(v) for v in parsed.variants],
          optimizer, parsed.overrides)


def method_label(method: str) -> str:
  """A method as a reader knows it, from its components' labels: 'FedAvg +
  FedVC with FedAdam (server_learning_rate=0.01)' for
  fedavg+fedvc@adam:server_learning_rate=0.01 (a component without a
  label shows its name)."""
  algorithm, variants, optimizer, overrides = _components(method)
  out = " + ".join(c.display for c in [algorithm] + variants)
  if optimizer is not None:
    out += f" with {optimizer.display}"
  if overrides:
    out += " (" + ", ".join(f"{k}={v}" for k, v in overrides) + ")"
  return out


def citations(method: str) -> str:
  """'<component>: <citation>; ...' of the method's components."""
  algorithm, variants, optimizer, _ = _components(method)
  used = [algorithm] + variants + ([optimizer] if optimizer else [])
  return "; ".join(f"{c.name}: {c.citation}" for c in used)


def _cell_method(compared: str, method: str) -> str:
  """`method` as named in a run whose compared method is `compared` (with
  the same mixing strategy, '<method>+<strategy>')."""
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  strategy = names.parse(compared).mixing
  return names.spec_name(names.parse(method)._replace(mixing=strategy))


def with_extra_methods(preset: spec.Preset, methods: Sequence[str]
                       ) -> spec.Preset:
  """`preset` with `methods` added to each of its tables (module docstring).

  Raises:
    ConfigError: a bad method name (naming --extra_methods), or one the
      preset's table already has.
  """
  methods = canonical(methods)
  if not methods:
    return preset
  by_name = {r.name: r for r in preset.runs}
  runs: Dict[str, spec.Run] = {}
  skipped: Dict[str, str] = {}
  tables: List[spec.TableSpec] = []
  for table in preset.tables:
    context: Dict[str, str] = {}  # Run -> its first row with a method.
    for c in table.cells:
      if c.method is not None and by_name[c.run].kind == spec.FEDERATED:
        context.setdefault(c.run, c.row)
        if c.method in methods:
          raise ConfigError(f"--{FLAG}={','.join(methods)}: {c.method} is "
                            f"already in {table.title}", FLAG)
    rows, cells, added = list(table.rows), list(table.cells), []
    for run, row in context.items():
      in_row = [c for c in table.cells if c.row == row and c.run == run]
      first = next(c.method for c in in_row if c.method is not None)
      for m in methods:
        new = extra_run(by_name[run], m)
        if new.name not in runs and new.name not in skipped:
          reason = refusal(by_name[run], m)
          if reason is not None:
            skipped[new.name] = reason
          else:
            runs[new.name] = new
        if new.name in skipped:
          continue
        label = f"{method_label(m)} (as {row})"
        rows.append(label)
        added.append(label)
        cells += [dataclasses.replace(
            c, row=label, run=new.name, compared_run=run,
            method=None if c.method is None else _cell_method(c.method, m))
                  for c in in_row if c.method in (None, first)]
    groups = tuple(table.groups)
    if groups and added:  # Grouped tables (Hsu 2020 Table 1): a group.
      groups += ((f"--{FLAG} (not in the paper)", tuple(added)),)
    tables.append(dataclasses.replace(
        table, rows=tuple(rows), cells=tuple(cells), groups=groups,
        added_rows=tuple(table.added_rows) + tuple(added)))
  for m in methods:
    if not any(r.flags["methods"] == (m,) for r in runs.values()):
      why = [r for n, r in skipped.items() if n.endswith(f"+{m}")]
      raise ConfigError(f"--{FLAG}={','.join(methods)}: {m} cannot join any "
                        f"run of preset {preset.name}"
                        + (f": {why[0]}" if why else ""), FLAG)
  note = (f"Rows '<method> (as <row>)': --{FLAG}={','.join(methods)}, each "
          "trained in a run of its own with the compared row's settings "
          "(<run>+<method>), read at the compared run's budget; not in the "
          "paper.")
  sources = dict(preset.sources)
  own = "; ".join(f"--{FLAG} {m}: {citations(m)}" for m in methods)
  sources["methods"] = (f"{sources['methods']}; {own}" if "methods" in sources
                        else own)
  return dataclasses.replace(
      preset, runs=tuple(preset.runs) + tuple(runs.values()),
      tables=tuple(tables), notes=tuple(preset.notes) + (note,),
      sources=sources, skipped_runs=tuple(preset.skipped_runs) + tuple(
          skipped.items()))
