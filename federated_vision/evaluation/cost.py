"""The arithmetic of a run's cost estimate (`train_main --estimate`).

Plain functions on recorded calibration timings (no clock, no TensorFlow):
`experiments.estimate` measures, this module projects. One run costs

  T = T_start + sum_m [R * t_round_m + n_eval(R, e) * t_eval]
      + epochs * (ceil(N_train / B) * t_step + t_eval)

with R = --total_rounds, e = --rounds_per_eval, n_eval(R, e) = floor(R / e)
+ [R mod e != 0] (every e rounds and at the last: `training_loop`), m over
the run's methods, t_eval one evaluation of the test set, and the last term
the centralized baseline (--centralized_epochs, one evaluation per epoch:
`centralized.train_centralized`). The same formula gives wall seconds (from
wall timings) and CPU seconds (from CPU timings).

Scaling (ours: for shapes too slow or too large to calibrate at full size,
e.g. MobileNetV2-GN at 299 px, whose B = 64 step needs ~21 GB here): a
round's cost is taken as proportional to the examples it trains,
t_round = t_cal * (C * E * n) / (C_cal * E * n_cal) (`round_scale` with
Work(clients, examples per client, ...); n = N_VC under FedVC, else the
mean client size; `local_batches` counts the batches b = E * ceil(n / B)
for display), and an evaluation's as proportional to the test examples,
t_eval = t_eval_cal * N_test / N_test_cal. A small
calibration carries per-round (per-evaluation) costs that do not grow with
the examples (broadcast, aggregation, dataset set-up, dispatch), so when
two calibration points of different sizes are timed, the line through them,
t = t_fixed + u * t_unit (`linear_fit`), is extrapolated instead (ours).
"""

import math
from typing import Mapping, NamedTuple, Optional, Sequence, Tuple


class Timing(NamedTuple):
  """Wall and CPU seconds of one thing (a round, an evaluation, a step)."""
  wall: float
  cpu: float

  def scaled(self, factor: float) -> "Timing":
    return Timing(self.wall * factor, self.cpu * factor)

  def __add__(self, other: "Timing") -> "Timing":  # type: ignore[override]
    return Timing(self.wall + other.wall, self.cpu + other.cpu)


ZERO = Timing(0.0, 0.0)


class Work(NamedTuple):
  """What a round / evaluation / step of the calibration or the run does.

  Attributes:
    clients: clients per round C.
    batches_per_client: local batches b of each client in a round.
    test_examples: examples in one evaluation.
    batch_size: examples per local batch B.
  """
  clients: int
  batches_per_client: float
  test_examples: int
  batch_size: float = 1


def local_batches(num_examples: float, batch_size: Optional[int],
                  epochs: int, virtual_client_size: Optional[int] = None
                  ) -> int:
  """E * ceil(n / B), n = N_VC under FedVC; E when B is None (B = inf).

  Mirrors `client_data.num_local_batches` (Hsu, Qi & Brown 2020 §6.3: a
  FedVC client trains on N_VC examples) for a mean client size.
  """
  n = virtual_client_size if virtual_client_size is not None else num_examples
  if n <= 0:
    return 0
  if batch_size is None:
    return epochs
  return epochs * math.ceil(n / batch_size)


def num_evaluations(total_rounds: int, rounds_per_eval: int) -> int:
  """Evaluations of a run: every `rounds_per_eval` rounds and at the last."""
  if total_rounds < 1 or rounds_per_eval < 1:
    raise ValueError(f"total_rounds={total_rounds} and rounds_per_eval="
                     f"{rounds_per_eval} must be >= 1")
  return total_rounds // rounds_per_eval + (total_rounds % rounds_per_eval != 0)


def round_scale(calibrated: Work, target: Work) -> float:
  """(C * b * B) / (C_cal * b_cal * B_cal): the ratio of examples in the
  local batches of a round."""
  cal = calibrated.clients * calibrated.batches_per_client * calibrated.batch_size
  if cal <= 0:
    raise ValueError(f"calibration trained no batch: {calibrated}")
  return (target.clients * target.batches_per_client * target.batch_size
          / cal)


def eval_scale(calibrated: Work, target: Work) -> float:
  """N_test / N_test_cal."""
  if calibrated.test_examples <= 0:
    raise ValueError(f"calibration evaluated no example: {calibrated}")
  return target.test_examples / calibrated.test_examples


def _fit(small: float, large: float, u_small: float, u_large: float
         ) -> Tuple[float, float]:
  unit = (large - small) / (u_large - u_small)
  fixed = small - unit * u_small
  if unit <= 0 or fixed < 0:  # Noise: the proportional model of `large`.
    return 0.0, large / u_large
  return fixed, unit


def linear_fit(small: Timing, large: Timing, units_small: float,
               units_large: float) -> Tuple[Timing, Timing]:
  """(t_fixed, t_unit) of the line t = t_fixed + u * t_unit through two
  timed points (wall and CPU each); where the points give a non-positive
  slope or intercept (timing noise), t_fixed = 0 and t_unit = large /
  units_large (proportional to the larger point)."""
  if not 0 < units_small < units_large:
    raise ValueError(f"need 0 < units_small < units_large, got "
                     f"{units_small}, {units_large}")
  wall = _fit(small.wall, large.wall, units_small, units_large)
  cpu = _fit(small.cpu, large.cpu, units_small, units_large)
  return Timing(wall[0], cpu[0]), Timing(wall[1], cpu[1])


def on_line(fixed: Timing, unit: Timing, units: float) -> Timing:
  """t_fixed + units * t_unit."""
  return fixed + unit.scaled(units)


def median(values: Sequence[float]) -> float:
  """The median (mean of the middle two for an even count)."""
  if not values:
    raise ValueError("no values")
  s = sorted(values)
  mid = len(s) // 2
  return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


class Projection(NamedTuple):
  """A run's projected cost, by term (`project`)."""
  startup: Timing
  rounds: Timing
  evaluations: Timing
  centralized: Timing
  num_evaluations: int

  @property
  def total(self) -> Timing:
    return self.startup + self.rounds + self.evaluations + self.centralized


def project(startup: Timing, round_times: Mapping[str, Timing],
            total_rounds: int, rounds_per_eval: int, eval_time: Timing,
            centralized_epochs: int = 0, steps_per_epoch: int = 0,
            step_time: Timing = ZERO) -> Projection:
  """The module docstring's formula.

  Args:
    startup: T_start (process start to the first round, plus each method's
      first-round excess over a steady round).
    round_times: method -> t_round_m (already scaled to the run's shape).
    total_rounds: R.
    rounds_per_eval: e.
    eval_time: t_eval (scaled to the run's test set).
    centralized_epochs: epochs of the centralized baseline (0: none).
    steps_per_epoch: ceil(N_train / B) of the centralized baseline.
    step_time: t_step of one centralized SGD step.
  """
  n_eval = num_evaluations(total_rounds, rounds_per_eval)
  rounds = ZERO
  for t in round_times.values():
    rounds = rounds + t.scaled(total_rounds)
  evaluations = eval_time.scaled(n_eval * len(round_times))
  central = ZERO
  if centralized_epochs > 0:
    central = (step_time.scaled(steps_per_epoch) + eval_time).scaled(
        centralized_epochs)
  return Projection(startup, rounds, evaluations, central, n_eval)


def hours(seconds: float) -> str:
  """'0.52 h' / '1,234.5 h' (to 3 significant digits below 10 h)."""
  h = seconds / 3600.0
  return f"{h:.3g} h" if h < 10 else f"{h:,.1f} h"


def duration(seconds: float) -> str:
  """'45 s', '12.5 min', '3.2 h', '4.1 days'."""
  if seconds < 120:
    return f"{seconds:.0f} s"
  if seconds < 7200:
    return f"{seconds / 60:.1f} min"
  if seconds < 3 * 86400:
    return f"{seconds / 3600:.1f} h"
  return f"{seconds / 86400:.1f} days"
