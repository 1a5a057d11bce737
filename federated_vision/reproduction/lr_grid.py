"""McMahan et al. 2017's learning-rate protocol: every setting over a
multiplicative grid of learning rates, the best rate per cell.

McMahan et al. 2017 §3: "The results reported here are based on training
over a sufficiently wide grid of learning rates (typically 11-13 values for
eta on a multiplicative grid of resolution 10^(1/3) or 10^(1/6)). [...]
Unless otherwise noted, we plot metrics for the best performing rate
selected individually for each x-axis value." and, for the rounds tables:
"we construct a learning curve for each combination of parameter settings,
optimizing eta as described above and then making each curve monotonically
improving by taking the best value of test-set accuracy achieved over all
prior rounds. We then calculate the number of rounds where the curve crosses
the target accuracy, using linear interpolation between the discrete points
forming the curve."

So per cell: each rate's monotone curve gives its rounds to the target
(`evaluation.convergence.rounds_to_target`); the chosen rate is the one
whose curve reaches the target first (fewest interpolated rounds; ours: a
tie goes to the smaller rate, the more conservative step). A rate whose run
diverged, or whose curve never reaches the target, is not chosen; when no
rate reaches it the cell is "not reached".

`expand(preset, grid)` is the option the presets gain: every run a rounds
cell reads (and every speedup reference) is repeated over `grid.rates()`
around its own learning rate, the run at that rate keeping its name (so a
finished one-rate run counts as the grid's member), the others named
`<run>_lr<rate>`; `Preset.lr_grids` maps each base run to its members.

Plain Python (no TensorFlow): the planners and reports import it.
"""

import dataclasses
import math
from typing import Mapping, Optional, Sequence, Tuple

from federated_vision.reproduction import spec

LR_FLAG = "client_learning_rate"
SUFFIX = "_lr"
# The resolutions §3 names: 10^(1/3) and 10^(1/6).
STEPS_PER_DECADE = (3, 6)


def rate_text(rate: float) -> str:
  """A rate as names and tables print it: 4 significant digits."""
  return f"{rate:.4g}"


@dataclasses.dataclass(frozen=True)
class Grid:
  """A multiplicative grid around a run's own rate eta_0: eta_0 * 10^(k/s)
  for k = -below .. above (s = steps_per_decade, §3's resolution
  10^(1/s)); rates are rounded to 4 significant digits, eta_0 kept exact.

  Attributes:
    steps_per_decade: 3 or 6.
    below: grid points under eta_0.
    above: grid points over eta_0.
  """
  steps_per_decade: int = 3
  below: int = 6
  above: int = 6

  def __post_init__(self):
    if self.steps_per_decade not in STEPS_PER_DECADE:
      raise ValueError(f"steps_per_decade={self.steps_per_decade!r}: must be "
                       f"one of {STEPS_PER_DECADE} (McMahan 2017 §3's "
                       "resolutions 10^(1/3), 10^(1/6))")
    for name in ("below", "above"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}={value!r}: must be an integer >= 0")
    if self.below + self.above < 1:
      raise ValueError("a grid needs at least two rates (below + above >= 1)")

  def rates(self, center: float) -> Tuple[float, ...]:
    """The grid's rates around `center`, increasing."""
    if not (isinstance(center, (int, float)) and not isinstance(center, bool)
            and math.isfinite(center) and center > 0):
      raise ValueError(f"center learning rate {center!r}: must be a finite "
                       "number > 0")
    return tuple(center if k == 0 else
                 float(rate_text(center * 10 ** (k / self.steps_per_decade)))
                 for k in range(-self.below, self.above + 1))

  def describe(self) -> str:
    return (f"{self.below + self.above + 1} rates, resolution "
            f"10^(1/{self.steps_per_decade})")


# McMahan 2017 §3: "typically 11-13 values [...] resolution 10^(1/3)": 13.
PAPER_GRID = Grid(3, 6, 6)


def member_name(run_name: str, center: float, rate: float) -> str:
  """The grid member's run name: the run's own at its own rate."""
  return run_name if rate == center else f"{run_name}{SUFFIX}{rate_text(rate)}"


def _grid_runs(preset: spec.Preset) -> Tuple[str, ...]:
  """Runs whose rounds a cell or comparison reads (and speedup references),
  in preset order: the ones the protocol tunes."""
  wanted = set()
  for table in preset.tables:
    for c in table.cells:
      if c.metric.kind in spec.ROUNDS_KINDS:
        wanted.add(c.run)
        if c.speedup_reference:
          wanted.add(c.speedup_reference[0])
  return tuple(r.name for r in preset.runs if r.name in wanted)


def expand(preset: spec.Preset, grid: Grid = PAPER_GRID,
           name: Optional[str] = None) -> spec.Preset:
  """`preset` with its rounds cells' runs repeated over `grid` (`lr_grids`).

  Args:
    preset: a preset whose tables read rounds to a target.
    grid: the grid; each run's is centred on its own --client_learning_rate.
    name: the new preset's name (default `<preset>_lr_grid`).

  Raises:
    ValueError: the preset reads no rounds, a tuned run has no learning
      rate, or the preset is already expanded over seeds or a grid.
  """
  if preset.replicas_of or preset.lr_grids:
    raise ValueError(f"preset {preset.name}: the learning-rate grid applies "
                     "to a preset of one seed and one grid")
  tuned = set(_grid_runs(preset))
  if not tuned:
    raise ValueError(f"preset {preset.name}: no cell reads rounds to a "
                     "target, so no learning rate is tuned")
  runs, grids = [], {}
  for run in preset.runs:
    if run.name not in tuned:
      runs.append(run)
      continue
    center = run.flags.get(LR_FLAG)
    if center is None:
      raise ValueError(f"run {run.name}: no --{LR_FLAG} to centre the grid on")
    members = []
    for rate in grid.rates(center):
      member = member_name(run.name, center, rate)
      runs.append(dataclasses.replace(
          run, name=member, flags=dict(run.flags, **{LR_FLAG: rate})))
      members.append(member)
    grids[run.name] = tuple(members)
  note = (f"Learning-rate protocol (McMahan 2017 §3): every rounds cell is "
          f"the best of {grid.describe()} around the run's own rate "
          "(the rate whose monotone curve reaches the target first; printed "
          "beside the cell with the grid).")
  sources = dict(preset.sources)
  if LR_FLAG in sources:
    sources[LR_FLAG] = (
        "McMahan 2017 §3: \"training over a sufficiently wide grid of "
        "learning rates (typically 11-13 values for [...] on a multiplicative "
        "grid of resolution [...])\" (10^(1/3) or 10^(1/6)); \"we plot "
        "metrics for the best performing rate selected individually\". "
        f"Grid: {grid.describe()}, centred on each run's own "
        f"rate (ours: the centre). The one-rate preset's source: "
        f"{sources[LR_FLAG]}")
  return dataclasses.replace(
      preset, name=name or f"{preset.name}{SUFFIX}_grid", runs=tuple(runs),
      lr_grids=grids, sources=sources,
      notes=tuple(n for n in preset.notes if "one learning rate" not in n)
      + (note,))


@dataclasses.dataclass(frozen=True)
class Choice:
  """The rate a cell reports and the grid it was chosen from.

  Attributes:
    rate: the chosen learning rate (None: no rate reaches the target).
    run: the chosen member's run name (None likewise).
    rounds: its rounds to the target (None likewise).
    grid: every (rate, rounds or None) of the grid, increasing rate.
  """
  rate: Optional[float]
  run: Optional[str]
  rounds: Optional[float]
  grid: Tuple[Tuple[float, Optional[float]], ...]

  def text(self) -> str:
    """'η = 0.1 of 0.01–1 (13 rates)'."""
    rates = [r for r, _ in self.grid]
    span = (f"{rate_text(min(rates))}–{rate_text(max(rates))} "
            f"({len(rates)} rates)")
    if self.rate is None:
      return f"no η of {span} reaches it"
    return f"η = {rate_text(self.rate)} of {span}"


def choose(rounds_by_rate: Mapping[float, Optional[float]],
           runs_by_rate: Optional[Mapping[float, str]] = None) -> Choice:
  """The rate whose monotone curve reaches the target first.

  Args:
    rounds_by_rate: rate -> its rounds to the target (None: not reached,
      diverged, missing).
    runs_by_rate: rate -> its run name.

  Returns:
    The `Choice`: the fewest rounds; a tie goes to the smaller rate.
  """
  if not rounds_by_rate:
    raise ValueError("choose: no rates")
  grid = tuple(sorted(rounds_by_rate.items()))
  reached = [(rounds, rate) for rate, rounds in grid if rounds is not None]
  if not reached:
    return Choice(None, None, None, grid)
  rounds, rate = min(reached)
  run = (runs_by_rate or {}).get(rate)
  return Choice(rate, run, rounds, grid)


def members(preset: spec.Preset, run_name: str) -> Sequence[str]:
  """The grid's run names of `run_name` (itself alone without a grid)."""
  return tuple(preset.lr_grids.get(run_name, (run_name,)))
