"""Your method in a paper's table: a preset with additional methods.

Hsu, Qi & Brown 2020 offer their splits "as benchmarks for future
improvements" (Sec. 6.4); `with_extra_methods(preset, ["fedavg+fedvc@adam"])`
is the preset with, for each of its tables, new rows for each additional
method beside the published ones, with the same settings as the rows they
are compared with:

* every federated run R a table's method cells read becomes the context of
  one new row per additional method M, labelled '<M> (as <R's first row>)';
* M trains in a run of its own, '<R>+<M>', whose flags are R's with only
  the method selection replaced by `methods=[M]` (same data, model, rounds,
  clients per round, seed, hyper-parameters; M's own `:<field>=<value>`
  settings apply to M alone), so R's results and directory are untouched;
* each new cell is a cell of R's first row (same column, metric,
  centralized baseline, speedup reference) read from M in '<R>+<M>' (with
  R's mixing strategy, if its method had one); where that row's columns
  are different methods of R (FedVC off / on), only the columns of its
  first method are filled (M is one method);
* the new rows have no published number: the report says so (`added_rows`).

Plain Python: no TensorFlow.
"""

import dataclasses
from typing import Dict, List, Sequence, Tuple

from federated_vision.errors import ConfigError
from federated_vision.reproduction import spec

FLAG = "extra_methods"


def selection_fields() -> Tuple[str, ...]:
  """The flags that choose a run's methods (`--methods` and its
  shorthands)."""
  from federated_vision.experiment import usage  # pylint: disable=g-import-not-at-top
  return ("methods",) + tuple(usage.method_shorthands())


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
        runs[new.name] = new
        label = f"{m} (as {row})"
        rows.append(label)
        added.append(label)
        cells += [dataclasses.replace(
            c, row=label, run=new.name,
            method=None if c.method is None else _cell_method(c.method, m))
                  for c in in_row if c.method in (None, first)]
    groups = tuple(table.groups)
    if groups and added:  # Grouped tables (Hsu 2020 Table 1): a group.
      groups += ((f"--{FLAG} (not in the paper)", tuple(added)),)
    tables.append(dataclasses.replace(
        table, rows=tuple(rows), cells=tuple(cells), groups=groups,
        added_rows=tuple(table.added_rows) + tuple(added)))
  note = (f"Rows '<method> (as <row>)': --{FLAG}={','.join(methods)}, each "
          "trained in a run of its own with the compared row's settings "
          "(<run>+<method>); not in the paper.")
  return dataclasses.replace(
      preset, runs=tuple(preset.runs) + tuple(runs.values()),
      tables=tuple(tables), notes=tuple(preset.notes) + (note,))
