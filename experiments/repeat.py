"""`--seeds=N` of train_main, sweep_main and reproduce: N repetitions per run.

Repetition k of a run is its config with `--seed=<seed>+k` written to
`<experiment_name>` (k = 0) or `<experiment_name>_seed<seed+k>`: an ordinary
resumable run each (`federated_vision.reproduction.seeds` says what the seed
reaches and names the directories). Rerunning the same command resumes the
unfinished repetitions and skips finished ones, as for one run.
"""

from typing import Callable, List

from absl import flags

from experiments import config as config_lib
from federated_vision.reproduction import seeds as seeds_lib

HELP = ("Repeat every run with N seeds: --seed, --seed+1, ...; repetition k "
        "> 0 goes to <name>_seed<seed+k>, each an ordinary resumable run. "
        "Reports show each cell's mean and 95% t-interval over the seeds.")


def define_flags() -> None:
  """--seeds (idempotent)."""
  if "seeds" not in flags.FLAGS:
    flags.DEFINE_integer("seeds", 1, HELP, lower_bound=1)


def configs(config: config_lib.ExperimentConfig, n: int
            ) -> List[config_lib.ExperimentConfig]:
  """The n repetitions of `config` (itself first)."""
  seed, name = config.training.seed, config.output.experiment_name
  return [config_lib.replace_fields(config, {
      "seed": s, "experiment_name": seeds_lib.replica_name(name, seed, s)})
          for s in seeds_lib.seed_values(seed, n)]


def from_flags(flag_values) -> List[config_lib.ExperimentConfig]:
  """The repetitions of the command line's config (--seeds of them)."""
  return configs(config_lib.from_flags(flag_values), flag_values.seeds)


def run_each(flag_values, run: Callable[[config_lib.ExperimentConfig], object],
             echo: Callable[[str], None] = print) -> None:
  """`run` on each repetition of the command line's config, one after
  another (--seeds=1: `run(config)` alone)."""
  replicas = from_flags(flag_values)
  n = len(replicas)
  for k, c in enumerate(replicas, 1):
    if n > 1:
      echo(f"[seed {k}/{n}] --seed={c.training.seed} -> "
           f"{c.output_dir}")
    run(c)
