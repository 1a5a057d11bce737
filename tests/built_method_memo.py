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
