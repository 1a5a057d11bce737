"""N independent repetitions of a run: `--seeds=N` of reproduce, train_main
and sweep_main.

Repetition k of a run with `--seed=s` is the same configuration with
`--seed=s+k` (k = 0..N-1), an ordinary resumable run in a directory of its
own: the run's name for k = 0 (so `--seeds=1` is exactly today's run and its
results are reused), `<name>_seed<s+k>` for the others.

What the seed reaches (`experiments/usage.py`: "partition, sampling,
shuffling and initialisation"): the split of a synthetic partition
(Dirichlet, shards, IID, log-normal sizes), the model's initial weights,
which clients each round samples, the clients' batch order (and FedVC's
virtual-client draws), the centralized baseline's shuffling and
initialisation. A split read from a file (Hsu 2020's iNaturalist and
Landmarks CSVs) does not depend on it: those repetitions vary the rest, as
the paper's setup would (its partition is the published one). A synthetic
population is a draw of the paper's protocol (Hsu 2019: q ~ Dir(alpha p)),
so a repetition draws it anew, like initialisation and sampling.

Plain Python (no TensorFlow): used by the planners before any import.
"""

import dataclasses
from typing import Dict, List, Sequence, Tuple

from federated_vision.reproduction import spec

SEED_FLAG = "seed"
SUFFIX = "_seed"


def check_count(n: int, flag: str = "seeds") -> int:
  """`n` if it is an integer >= 1.

  Raises:
    ValueError: naming --<flag>.
  """
  if isinstance(n, bool) or not isinstance(n, int) or n < 1:
    raise ValueError(f"--{flag}={n!r}: must be an integer >= 1")
  return n


def seed_values(base: int, n: int) -> Tuple[int, ...]:
  """The seeds of n repetitions of a run whose seed is `base`."""
  return tuple(base + k for k in range(check_count(n)))


def replica_name(name: str, base: int, seed: int) -> str:
  """The run name of the repetition with `seed` (the name itself for the
  base seed)."""
  return name if seed == base else f"{name}{SUFFIX}{seed}"


def replica_names(name: str, base: int, n: int) -> Tuple[str, ...]:
  return tuple(replica_name(name, base, s) for s in seed_values(base, n))


def _base_seed(run: spec.Run) -> int:
  seed = run.flags.get(SEED_FLAG, 0)
  if isinstance(seed, bool) or not isinstance(seed, int):
    raise ValueError(f"run {run.name}: --seed={seed!r} is not an integer")
  return seed


def expand(preset: spec.Preset, n: int) -> spec.Preset:
  """`preset` with every run repeated over n seeds (`replicas_of` set).

  n = 1 returns `preset` itself. The tables, studies and comparisons still
  name the base runs; the report reads each cell once per repetition
  (`replicas`)."""
  if check_count(n) == 1:
    return preset
  if preset.lr_grids:
    raise ValueError(f"--seeds={n}: preset {preset.name} runs a "
                     "learning-rate grid (one seed per rate); repeat the "
                     "one-rate preset over seeds instead")
  runs, replicas = [], {}
  for run in preset.runs:
    base = _base_seed(run)
    names = []
    for seed in seed_values(base, n):
      name = replica_name(run.name, base, seed)
      runs.append(dataclasses.replace(
          run, name=name, flags=dict(run.flags, **{SEED_FLAG: seed})))
      names.append(name)
    replicas[run.name] = tuple(names)
  return dataclasses.replace(preset, runs=tuple(runs), replicas_of=replicas)


def replicas(preset: spec.Preset, run_name: str) -> Tuple[str, ...]:
  """The run names of `run_name`'s repetitions, seed order (itself alone
  without --seeds)."""
  return tuple(preset.replicas_of.get(run_name, (run_name,)))


def num_seeds(preset: spec.Preset) -> int:
  """N of the preset's repetitions (1 without --seeds)."""
  return max((len(v) for v in preset.replicas_of.values()), default=1)


def group_by_base(preset: spec.Preset, runs: Sequence[spec.Run]
                  ) -> List[Tuple[spec.Run, int]]:
  """(a representative run, how many of `runs` repeat it) per base run, in
  first-seen order: `--estimate` projects one repetition and multiplies."""
  base_of: Dict[str, str] = {r: b for b, reps in preset.replicas_of.items()
                             for r in reps}
  out: Dict[str, List] = {}
  for run in runs:
    group = out.setdefault(base_of.get(run.name, run.name), [run, 0])
    group[1] += 1
  return [(run, count) for run, count in out.values()]
