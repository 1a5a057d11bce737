"""Flags of the `execution` section (`config.ExecutionConfig`): which TFF
workers run the computations. None of them changes results."""

from absl import flags

from federated_vision.experiment import config as config_lib


def define_flags() -> None:
  """Defines the execution section's flags (idempotent)."""
  if "local_workers" in flags.FLAGS:
    return
  d = config_lib.ExecutionConfig()
  flags.DEFINE_integer("local_workers", d.local_workers, "TFF worker "
                       "processes to start on this machine (owned: stopped "
                       "on every exit path). With several workers each gets "
                       "a slice of every round's clients; results equal one "
                       "worker's up to float summation order.")
  flags.DEFINE_list("workers", list(d.workers), "host:port,... of TFF "
                    "worker_binary services started by hand (docs/"
                    "performance.md: 'Several workers'), used in addition "
                    "to the --local_workers; give --local_workers=0 to use "
                    "only these. A worker lost mid-run stops the run with one "
                    "line; rerun to resume from the last checkpoint.")
  flags.DEFINE_integer("max_concurrent_computation_calls",
                       d.max_concurrent_computation_calls, "worker_binary's "
                       "flag for the local workers (<= 0: no limit).")
  flags.DEFINE_float("worker_startup_timeout", d.worker_startup_timeout,
                     "Seconds a worker may take to start serving (local) or "
                     "to be reached (--workers) before the run stops.")
  flags.DEFINE_integer("worker_malloc_arena_max", d.worker_malloc_arena_max,
                       "MALLOC_ARENA_MAX of the local workers (2 keeps their "
                       "memory flat over thousands of rounds; 0: glibc's "
                       "default).")
  flags.DEFINE_string("client_group_size", d.client_group_size, "Clients "
                      "trained one after another in one TFF slot: 'auto' "
                      "(the default: min(25, ceil(C / 4)), C = clients per "
                      "round; the same on any machine, so a run's numbers "
                      "are too), N, or 1 (one client a slot, the ungrouped "
                      "path). Removes per-client overhead: 4-example MNIST "
                      "clients at C = 100 cost ~6x the plain-TF floor "
                      "ungrouped, <= 2x grouped (docs/performance.md, "
                      "'Small clients'). Covers the components whose "
                      "declarations say so (`methods.groups.covered()`); "
                      "'auto' trains the other methods ungrouped, N > 1 for "
                      "them is refused up front. Results equal 1's up to "
                      "float summation order; recorded per method "
                      "(hparams.json method_settings).")
  for kind, variable in (("intra", "INTRAOP"), ("inter", "INTEROP")):
    name = f"worker_{kind}_op_threads"
    flags.DEFINE_integer(name, getattr(d, name), f"TF_NUM_{variable}_THREADS "
                         "of the local workers (0: TF's default).")
