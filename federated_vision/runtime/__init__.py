"""The TFF runtime: owned workers, their contexts, signals, TFF internals.

Importing any `federated_vision` module changes no process-wide state. A
process that runs TFF computations installs the runtime once:

  from federated_vision import runtime
  runtime.install()  # Managed TFF context + SIGTERM/SIGHUP handling.

(the binaries do, through `experiments.cli`, and so does `tests/conftest.py`),
or runs its computations inside `runtime.contexts.managed_execution_context()`.

Modules: `workers` (local `worker_binary`s we start, remote ones we reach),
`worker_config` (their environment; light), `watchdog`, `contexts` (TFF
contexts over workers, the default context), `signals` (light), `registry`
(live workers; light), `errors`, and the only modules that touch TFF or TF
internals: `tff_internals` (executors, contexts, the worker's compile),
`learning_internals` (the client training loop, the Keras model's forward
pass traced inline),
`tf_internals` (TF's eager seed state).
"""

from federated_vision.runtime import signals


def install(signal_handlers: bool = True):
  """Makes a managed TFF context the default and (optionally, main thread
  only) turns SIGTERM / SIGHUP into SystemExit that stops every worker.

  Idempotent. Returns the default context's (lazily started) `ManagedWorker`.
  """
  # TFF (seconds to import) only when a process installs the runtime, so the
  # light `runtime.signals` / `runtime.worker_errors` stay cheap to import.
  from federated_vision.runtime import contexts  # pylint: disable=g-import-not-at-top
  worker = contexts.install_managed_default_context()
  if signal_handlers:
    signals.install_signal_handlers()
  return worker
