"""The experiment flags; `config.from_flags` turns them into a config.

Binaries call `define_flags()` at import time, then
`config.from_flags(FLAGS)` in `main`. Flags are grouped by config section,
one module per group (data: `flags_data`, model: `flags_model`; methods,
training and output here); every flag is named like its config field, and
the flags of `FLAG_MODULES` are exactly the config's fields
(tests/test_config.py). Nothing here builds library objects.
"""

import importlib
from typing import List

from absl import flags

from experiments import flags_components
from experiments import flags_data
from experiments import flags_execution
from experiments import flags_mixing
from experiments import flags_model
from experiments import flags_run
from federated_vision import methods as methods_lib

# Modules defining the config flags (a new section's flags module goes here).
FLAG_MODULES = ("experiments.flags_data", "experiments.flags_model",
                "experiments.flags_run", "experiments.flags_lib",
                "experiments.flags_mixing", "experiments.flags_execution",
                "experiments.flags_components")


def _define_methods() -> None:
  """The method selection; the methods' hyper-parameters and the variants'
  --<name> shorthands are generated from the components' declarations
  (`flags_components`)."""
  algorithms = " | ".join(methods_lib.algorithm_names())
  shorthands = ", ".join(f"--{v}" for v in methods_lib.shorthands())
  example = "+".join(methods_lib.algorithm_names()[:1]
                     + methods_lib.variant_names()[-1:])
  flags.DEFINE_list("algorithm", ["fedavg", "fedavgm"], "Comma-separated "
                    f"algorithms to run side by side: {algorithms} (or one "
                    "registered by --extra_modules).")
  flags.DEFINE_bool("include_plain", True, f"With {shorthands}, also run the "
                    "plain algorithms for comparison.")
  flags.DEFINE_list("methods", [], "Comma-separated methods to train, exactly "
                    "these in this order: <algorithm>[+<variant>...]"
                    "[@<server optimizer>][:<field>=<value>...], e.g. "
                    f"{example},{example}@adam:server_learning_rate=0.01 "
                    "(any component "
                    "registered, also by --extra_modules; a method's own "
                    "settings override the run's flags for it). Replaces "
                    f"--algorithm/{'/'.join(shorthands.split(', '))}/"
                    "--include_plain (its shorthands; giving both is an "
                    "error).")


def _define_training() -> None:
  flags.DEFINE_integer("total_rounds", 60, "Communication rounds.",
                       lower_bound=1)
  flags.DEFINE_integer("rounds_per_eval", 5, "Evaluate every N rounds.",
                       lower_bound=1)
  flags.DEFINE_integer("rounds_per_checkpoint", 10,
                       "Checkpoint every N rounds.", lower_bound=1)
  flags.DEFINE_integer("clients_per_round", 10, "Clients selected per round "
                       "(see --client_fraction).", lower_bound=1)
  flags.DEFINE_float("client_fraction", None, "McMahan's C: when set, clients "
                     "per round = max(round(C*K), 1) (C = 0 is one client), "
                     "overriding --clients_per_round (giving both on the "
                     "command line is an error).")
  flags.DEFINE_integer("centralized_epochs", 30, "Epochs of the centralized "
                       "baseline; 0 skips it.", lower_bound=0)
  flags.DEFINE_integer("seed", 0, "Seed of partition, sampling, shuffling and "
                       "initialisation, in [0, 2**32).", lower_bound=0,
                       upper_bound=2**32 - 1)
  flags.DEFINE_float("target_accuracy", None, "If set, summary.json reports "
                     "each method's rounds to first reach this test accuracy "
                     "(McMahan et al. 2017: best-so-far, interpolated).")
  flags.DEFINE_bool("full_train_loss", False, "Also evaluate the server "
                    "model's loss on the pooled training data (every "
                    "client's training examples, no augmentation) every "
                    "--rounds_per_eval rounds: metrics.csv column "
                    "full_train_loss (McMahan et al. 2017 Figure 6). Costs "
                    "one pass over the training set per evaluation.")


def _define_output() -> None:
  flags.DEFINE_string("root_output_dir", "output", "Root of all results.")
  flags.DEFINE_string("experiment_name", "digits_fedavg_vs_fedavgm",
                      "Results go to <root_output_dir>/<experiment_name>.")


def define_flags() -> None:
  """Defines every config flag (idempotent; again, the flags of the
  sections declared since, e.g. by --extra_modules)."""
  flags_components.define_flags()
  if "total_rounds" in flags.FLAGS:
    return
  flags_data.define_flags()
  flags_model.define_flags()
  _define_methods()
  _define_training()
  _define_output()
  flags_mixing.define_flags()
  flags_run.define_flags()
  flags_execution.define_flags()


def key_flag_modules() -> List[object]:
  """The modules whose flags a binary adopts as key flags, so its `--help`
  lists them grouped by module (absl's own flags stay under `--helpfull`):

      for module in flags_lib.key_flag_modules():
        flags.adopt_module_key_flags(module)

  (absl records key flags for the calling module, so the binary itself
  must call `adopt_module_key_flags`.)"""
  return [importlib.import_module(m)
          for m in FLAG_MODULES + ("experiments.cli",)]


def config_flag_names(flag_values=flags.FLAGS) -> List[str]:
  """Names of the flags `define_flags` defined (from absl, not a hand list)."""
  return sorted({f.name for module in FLAG_MODULES
                 for f in flag_values.get_flags_for_module(module)})
