"""The experiment config's own sections: training, output, run control and
execution (`experiment.config.SECTIONS` also holds the data, model, methods
and mixing sections, declared where their components live). Each field is
declared once with `config_fields.option` (default, --help text, bounds):
its flag is generated from it (`experiments.flags_lib`).
"""

import dataclasses
import os
from typing import Optional, Tuple

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad
from federated_vision.methods import groups
from federated_vision.runtime import worker_config as worker_config_lib

option = config_fields.option


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
  """Rounds, cadence, clients per round, centralized baseline, seed.

  Attributes:
    total_rounds: communication rounds.
    rounds_per_eval: evaluate every N rounds (and at the last).
    rounds_per_checkpoint: checkpoint every N rounds (and at the end).
    clients_per_round: clients per round (unless client_fraction).
    client_fraction: McMahan's C: clients per round = max(round(C K), 1).
    centralized_epochs: epochs of the centralized baseline; 0 skips it.
    seed: seed of partition, sampling, shuffling and initialisation.
    target_accuracy: report rounds to this test accuracy (McMahan 2017).
    full_train_loss: also evaluate the server model's loss on the pooled
      training data every rounds_per_eval rounds (metrics.csv column
      `full_train_loss`; McMahan 2017 Figure 6).
  """
  total_rounds: int = option(60, "Communication rounds.", lower_bound=1)
  rounds_per_eval: int = option(5, "Evaluate every N rounds.", lower_bound=1)
  rounds_per_checkpoint: int = option(10, "Checkpoint every N rounds.",
                                      lower_bound=1)
  clients_per_round: int = option(10, "Clients selected per round (see "
                                  "--client_fraction).", lower_bound=1)
  client_fraction: Optional[float] = option(
      None, "McMahan's C: when set, clients per round = max(round(C*K), 1) "
      "(C = 0 is one client), overriding --clients_per_round (giving both "
      "on the command line is an error).")
  centralized_epochs: int = option(30, "Epochs of the centralized baseline; "
                                   "0 skips it.", lower_bound=0)
  seed: int = option(0, "Seed of partition, sampling, shuffling and "
                     "initialisation, in [0, 2**32).", lower_bound=0,
                     upper_bound=2**32 - 1)
  target_accuracy: Optional[float] = option(
      None, "If set, summary.json reports each method's rounds to first "
      "reach this test accuracy (McMahan et al. 2017: best-so-far, "
      "interpolated).")
  full_train_loss: bool = option(
      False, "Also evaluate the server model's loss on the pooled training "
      "data (every client's training examples, no augmentation) every "
      "--rounds_per_eval rounds: metrics.csv column full_train_loss "
      "(McMahan et al. 2017 Figure 6). Costs one pass over the training set "
      "per evaluation.")


@dataclasses.dataclass(frozen=True)
class OutputConfig:
  """Results go to <root_output_dir>/<experiment_name>."""
  root_output_dir: str = option("output", "Root of all results.")
  experiment_name: str = option(
      "digits_fedavg_vs_fedavgm", "Results go to "
      "<root_output_dir>/<experiment_name>.")


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Run control: how a run treats its directory, divergence and checkpoints.

  None of these change results; they are not part of the recorded
  experiment (`federated_vision.experiment.run_record`).

  Attributes:
    overwrite: delete the experiment directory's results and start over.
    on_divergence: 'stop' (exit status 3 at the first non-finite round) or
      'continue' (count and log such rounds).
    resume_from_last_valid: if the latest checkpoint cannot be read, set it
      aside and resume from the previous readable one.
  """
  overwrite: bool = option(False, "Delete the results already in "
                           "<root_output_dir>/<experiment_name> and start "
                           "over (needed to rerun a directory with other "
                           "settings).")
  on_divergence: str = option(
      "stop", "A round with non-finite values (clients dropped as "
      "non-finite, non-finite loss, model or evaluation): stop the run (exit "
      "status 3) or count and log it.", enum_values=["stop", "continue"])
  resume_from_last_valid: bool = option(
      False, "If the latest checkpoint cannot be read, move it to "
      "checkpoints/corrupt/ and resume from the previous readable one.")


@dataclasses.dataclass(frozen=True)
class ExecutionConfig:
  """Which TFF workers run the computations (`federated_vision.runtime`).

  None of these change results (several workers equal one up to the order
  of the aggregation's float sums, ~1e-6); they are not part of the
  recorded experiment, so a run may resume on other workers.

  Attributes:
    local_workers: local `worker_binary` processes to start and own.
    workers: 'host:port' of worker services started by hand; used in
      addition to the local ones (give --local_workers=0 for remote only).
    max_concurrent_computation_calls: the local workers' flag (<= 0: no
      limit).
    worker_startup_timeout: seconds a worker may take to start / be reached.
    worker_malloc_arena_max: local workers' MALLOC_ARENA_MAX (0: glibc's).
    worker_intra_op_threads: local workers' TF intra-op threads (0: TF's).
    worker_inter_op_threads: local workers' TF inter-op threads (0: TF's).
    client_group_size: clients trained one after another in one TFF slot
      ('auto' or N; 1: one client a slot, the ungrouped path;
      `federated_vision.learning.client_groups`). Results equal the
      ungrouped path's up to float summation order. 'auto', the default
      (ours: small clients cost several times the per-client floor
      ungrouped): the methods the groups cover train grouped, with
      `methods.groups.resolve_group_size`'s size, a function of C alone (the
      same numbers on any machine); the others ungrouped.
  """
  local_workers: int = option(
      1, "TFF worker processes to start on this machine (owned: stopped on "
      "every exit path). With several workers each gets a slice of every "
      "round's clients; results equal one worker's up to float summation "
      "order.")
  workers: Tuple[str, ...] = option(
      (), "host:port,... of TFF worker_binary services started by hand "
      "(docs/performance.md: 'Several workers'), used in addition to the "
      "--local_workers; give --local_workers=0 to use only these. A worker "
      "lost mid-run stops the run with one line; rerun to resume from the "
      "last checkpoint.")
  max_concurrent_computation_calls: int = option(
      -1, "worker_binary's flag for the local workers (<= 0: no limit).")
  worker_startup_timeout: float = option(
      worker_config_lib.DEFAULT_STARTUP_TIMEOUT_SEC, "Seconds a worker may "
      "take to start serving (local) or to be reached (--workers) before the "
      "run stops.")
  worker_malloc_arena_max: int = option(
      worker_config_lib.WorkerConfig().malloc_arena_max, "MALLOC_ARENA_MAX "
      "of the local workers (2 keeps their memory flat over thousands of "
      "rounds; 0: glibc's default).")
  worker_intra_op_threads: int = option(
      0, "TF_NUM_INTRAOP_THREADS of the local workers (0: TF's default).")
  worker_inter_op_threads: int = option(
      0, "TF_NUM_INTEROP_THREADS of the local workers (0: TF's default).")
  client_group_size: str = option(
      groups.AUTO, "Clients trained one after another in one TFF slot: "
      "'auto' (the default: min(25, ceil(C / 4)), C = clients per round; the "
      "same on any machine, so a run's numbers are too), N, or 1 (one client "
      "a slot, the ungrouped path). Removes per-client overhead: 4-example "
      "MNIST clients at C = 100 cost ~6x the plain-TF floor ungrouped, <= 2x "
      "grouped (docs/performance.md, 'Small clients'). Covers FedAvg's round "
      "with a client work given as a local objective, any data side and "
      "server optimizer (`methods.groups.covered()`); 'auto' trains "
      "the other methods ungrouped, N > 1 for them is refused up front. "
      "Results equal 1's up to float summation order; recorded per method "
      "(hparams.json method_settings).")

  def worker_config(self) -> worker_config_lib.WorkerConfig:
    """The local workers' `runtime.worker_config.WorkerConfig`."""
    return worker_config_lib.WorkerConfig(
        intra_op_threads=self.worker_intra_op_threads,
        inter_op_threads=self.worker_inter_op_threads,
        malloc_arena_max=self.worker_malloc_arena_max)

  def context(self):
    """`runtime.contexts.managed_execution_context` over these workers."""
    # TFF (seconds to import): only when workers are started, not when a
    # config is built or checked.
    from federated_vision.runtime import contexts  # pylint: disable=g-import-not-at-top
    return contexts.managed_execution_context(
        self.max_concurrent_computation_calls, self.worker_config(),
        local_workers=self.local_workers, workers=self.workers,
        startup_timeout=self.worker_startup_timeout)


def check_output(output: OutputConfig) -> None:
  if not output.root_output_dir.strip():  # Not the working directory unasked.
    raise bad("root_output_dir", repr(output.root_output_dir),
              "must be a non-empty path (results go to "
              "<root_output_dir>/<experiment_name>)")
  name = output.experiment_name
  # One directory inside --root_output_dir: never the root itself ('.'),
  # its parent ('..') or anywhere else (a path, an absolute one).
  if not name or name in (".", "..") or "/" in name or os.sep in name:
    raise bad("experiment_name", repr(name),
              "must be a non-empty name without '/', not '.' or '..' (one "
              "directory in --root_output_dir)")


def check_execution(e: ExecutionConfig) -> None:
  """The --local_workers / --workers / --worker_* checks (ConfigError)."""
  for name in ("local_workers", "worker_malloc_arena_max",
               "worker_intra_op_threads", "worker_inter_op_threads"):
    if getattr(e, name) < 0:
      raise bad(name, getattr(e, name), "must be >= 0")
  if not e.worker_startup_timeout > 0:
    raise bad("worker_startup_timeout", e.worker_startup_timeout,
              "must be > 0 seconds")
  try:
    worker_config_lib.parse_worker_addresses(e.workers)
  except ValueError as err:
    raise bad("workers", e.workers, str(err).partition(": ")[2]) from None
  try:
    groups.parse_group_size(e.client_group_size)
  except ValueError as err:
    raise bad("client_group_size", e.client_group_size, str(err)) from None
  if e.local_workers == 0 and not e.workers:
    raise ConfigError("--local_workers=0 needs --workers=host:port,...: no "
                      "worker to run on", "local_workers")
