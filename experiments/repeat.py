"""`--seeds=N` of train_main, sweep_main and reproduce: N repetitions per run.

Repetition k of a run is its config with `--seed=<seed>+k` written to
`<experiment_name>` (k = 0) or `<experiment_name>_seed<seed+k>`: an ordinary
resumable run each (`federated_vision.reproduction.seeds` says what the seed
reaches and names the directories). Rerunning the same command resumes the
unfinished repetitions and skips finished ones, as for one run.
"""

from typing import Callable, List, Tuple

from absl import flags

from federated_vision.errors import ConfigError, bad
from federated_vision.experiment import config as config_lib
from federated_vision.experiment import resolved_run
from federated_vision.experiment import run_record
from federated_vision.reproduction import seeds as seeds_lib
from federated_vision.tasks import presence

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


def checked_flags(flag_values) -> Tuple[List[config_lib.ExperimentConfig],
                                         resolved_run.ResolvedRun]:
  """(the --seeds repetitions of the command line's config, its
  `ResolvedRun`): the config validated once (`config.checked_flags`); a
  repetition differs only in its seed and name, which change no other
  setting, and its seed is checked here.

  Raises:
    ConfigError: naming the flag.
  """
  config, resolved = config_lib.checked_flags(flag_values)
  last = config.training.seed + flag_values.seeds - 1
  if last > 2**32 - 1:
    raise bad("seeds", flag_values.seeds, f"--seed={config.training.seed} + "
              f"{flag_values.seeds - 1} is past the largest seed 2**32 - 1")
  return configs(config, flag_values.seeds), resolved


def checked_for_run(flag_values) -> list:
  """[(repetitions, resolved run)] of train_main's command line with every
  check a run makes before TensorFlow's import: the config (once), the data
  on this machine, each repetition's directory free for it; [] with
  --estimate (its calibrations are checked when it runs).

  Raises:
    ConfigError: naming the flag (also --dry_run with --estimate).
  """
  if flag_values.estimate:
    if flag_values.dry_run:
      raise ConfigError("--dry_run and --estimate: give one (both train "
                        "nothing)", "dry_run")
    return []
  replicas, resolved = checked_flags(flag_values)
  presence.require(replicas[0].data)
  for config in replicas:  # Another experiment's directory.
    run_record.check_before_run(config)
  return [(replicas, resolved)]


def run_each(replicas: List[config_lib.ExperimentConfig],
             resolved: resolved_run.ResolvedRun, run: Callable[..., object],
             echo: Callable[[str], None] = print) -> None:
  """`run(config, resolved)` on each repetition, one after another
  (--seeds=1: the config alone)."""
  n = len(replicas)
  for k, c in enumerate(replicas, 1):
    if n > 1:
      echo(f"[seed {k}/{n}] --seed={c.training.seed} -> "
           f"{c.output_dir}")
    run(c, resolved)
