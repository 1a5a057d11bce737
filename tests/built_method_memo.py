"""Built methods reused between a test module's in-process runs.

Tracing a method's TFF computations is most of the CPU of a small
in-process train_main run (ours: test-suite time, issue 29). For runs whose
checks are about the run's files (faults, records), not its build, a module
memoizes `methods.build_method` by the method's config: its first run builds,
the others with the same config reuse. A built FedAvg holds no state between
runs (each run initializes its state or restores it from the run's files); a
resume across fresh builds (new processes) is checked by
tests/test_train_main.py and tests/test_run_integrity.py, which build anew.
"""

import contextlib
from unittest import mock


@contextlib.contextmanager
def methods_built_once(built: dict):
  """While open, `methods.build_method(config, inputs, mixing,
  client_group_size)` returns the method `built` holds for (config, mixing,
  group size, the inputs' clients, sizes and seed), building and adding it
  the first time. Callers keep `built` for as
  long as their runs share a data set and model (the key does not hold the
  model builder)."""
  from federated_vision import methods as methods_lib  # pylint: disable=g-import-not-at-top
  real = methods_lib.build_method

  def build_method(config, inputs, mixing=None, client_group_size=None,
                   **kwargs):
    # Everything of the inputs but the model builder (a closure), so that a
    # run on other clients, sizes or seed can never get another's process.
    key = (repr(config), repr(mixing), repr(client_group_size),
           inputs.num_classes, tuple(inputs.client_ids),
           tuple(inputs.client_sizes), inputs.clients_per_round, inputs.seed)
    if key not in built:
      built[key] = real(config, inputs, mixing, client_group_size, **kwargs)
    return built[key]
  with mock.patch.object(methods_lib, "build_method", build_method):
    yield


@contextlib.contextmanager
def training_processes_built_once(built: dict):
  """While open, `training_loop.build_training_process(process, fed_data,
  spec)` returns the training process `built` holds for (the method's
  process object, the data's client ids, `spec`), building it the first
  time; with `methods_built_once` the runs of one configuration share the
  process object, hence the key. For SCAFFOLD, whose TFF computations are
  traced there (~1-2 CPU-s a run). A training process keeps nothing of a
  run but a stateful method's `client_states` store, which each run
  replaces whole from its own files (`ClientStateStore.check` / `open`)."""
  from federated_vision import training_loop  # pylint: disable=g-import-not-at-top
  real = training_loop.build_training_process

  def build_training_process(process, fed_data, spec):
    key = (id(process), tuple(fed_data.client_data.client_ids), spec)
    if key not in built:  # The process is kept: its id is never reused.
      built[key] = (process, real(process, fed_data, spec))
    return built[key][1]
  with mock.patch.object(training_loop, "build_training_process",
                         build_training_process):
    yield
