"""Code that runs TFF computations finds a managed context or says which
function to call; it never runs on the unmanaged worker of the context
`import tensorflow_federated` installs."""

import os

import pytest
import tensorflow_federated as tff

from federated_vision import runtime
from federated_vision import training_loop
from federated_vision.runtime import contexts
from federated_vision.runtime import worker_errors as worker_errors
from federated_vision.runtime import tff_internals
from federated_vision.runtime import workers


def _unmanaged():
  """A context like the one `import tensorflow_federated` installs (its
  worker starts only when a computation is invoked: never here)."""
  return tff.backends.native.create_sync_local_cpp_execution_context()


def test_tff_unmanaged_context_is_recognised_and_ours_is_not():
  assert tff_internals.is_tff_unmanaged_context(_unmanaged())
  ours = contexts.create_managed_cpp_context(workers.ManagedWorker())
  assert not tff_internals.is_tff_unmanaged_context(ours)
  assert not tff_internals.is_tff_unmanaged_context(object())


def test_training_refuses_tff_unmanaged_context_with_one_line(tmp_path):
  out = tmp_path / "run"
  config = training_loop.LoopConfig(total_rounds=1, output_dir=str(out))
  with tff_internals.install_context(_unmanaged()):
    with pytest.raises(worker_errors.NoManagedContextError) as info:
      training_loop.run_federated_training("m", None, None, None, None, None,
                                           config, log_fn=None)
  message = str(info.value)
  assert "\n" not in message
  assert "federated_vision.runtime.install()" in message
  assert "managed_execution_context()" in message
  assert isinstance(info.value, worker_errors.WorkerError)  # cli: one line.
  assert not os.path.exists(out)  # Refused before the run's lock / files.


def test_installed_or_caller_contexts_pass():
  worker = runtime.install(signal_handlers=False)
  assert runtime.install(signal_handlers=False) is worker  # Idempotent.
  assert isinstance(worker, workers.ManagedWorker)
  assert tff_internals.current_context() is not None
  contexts.require_managed_context()  # The installed default: no error.
  caller_own = contexts.create_managed_cpp_context(workers.ManagedWorker())
  with tff_internals.install_context(caller_own):
    contexts.require_managed_context()
