"""The one-line errors of the TFF runtime (workers not started, lost)."""


class WorkerError(RuntimeError):
  """A TFF worker could not be started or reached, or was lost (one line)."""


class WorkerStartError(WorkerError):
  """A worker did not start (binary missing, port taken, not serving)."""


class WorkerLostError(WorkerError):
  """A worker died or became unreachable during a computation."""


class NoManagedContextError(WorkerError):
  """TFF's default context would start an unmanaged worker (see
  `contexts.require_managed_context`)."""
