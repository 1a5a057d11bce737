"""How a local `worker_binary` is started, and how remote ones are named.

Light on purpose (no TensorFlow): `federated_vision/experiment/config.py` builds its
`ExecutionConfig` from these before any TFF import.
"""

from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from federated_vision.native import loopback_bind

DEFAULT_STARTUP_TIMEOUT_SEC = 30.0


class WorkerConfig(NamedTuple):
  """How a managed worker process is started (immutable).

  The settings are environment variables the TensorFlow inside
  `worker_binary` reads at start-up (the binary itself only has the flags
  `--port`, `--max_concurrent_computation_calls` and
  `--grpc_max_message_length_megabytes`).

  Attributes:
    intra_op_threads: `TF_NUM_INTRAOP_THREADS`; 0 leaves TF's default (one per
      core).
    inter_op_threads: `TF_NUM_INTEROP_THREADS`; 0 leaves TF's default.
    onednn: `TF_ENABLE_ONEDNN_OPTS` (None leaves TF's default, on for x86;
      off makes the CIFAR CNN's rounds take 1.9x the CPU).
    malloc_arena_max: glibc's `MALLOC_ARENA_MAX`; 0 leaves glibc's default
      (8 arenas per core). With the default, memory freed by one of the
      worker's many threads is often not reused by others and its RSS grows
      by 25-60 MB per 1,000 digits rounds; with 2 it stays flat (README,
      "Performance and multiple workers").
    env: further (name, value) environment pairs (applied last).
    loopback_only: preload `loopback_bind.so` so the worker listens on
      loopback only (`federated_vision.runtime.workers`' docstring).
  """
  intra_op_threads: int = 0
  inter_op_threads: int = 0
  onednn: Optional[bool] = None
  malloc_arena_max: int = 2
  env: Tuple[Tuple[str, str], ...] = ()
  loopback_only: bool = True

  def validate(self) -> "WorkerConfig":
    for name in ("intra_op_threads", "inter_op_threads", "malloc_arena_max"):
      if getattr(self, name) < 0:
        raise ValueError(f"WorkerConfig.{name} must be >= 0, got "
                         f"{getattr(self, name)}")
    return self

  def environ(self, base: Mapping[str, str]) -> Dict[str, str]:
    """`base` (e.g. os.environ) with this configuration's variables set."""
    env = dict(base)
    if self.intra_op_threads:
      env["TF_NUM_INTRAOP_THREADS"] = str(self.intra_op_threads)
    if self.inter_op_threads:
      env["TF_NUM_INTEROP_THREADS"] = str(self.inter_op_threads)
    if self.onednn is not None:
      env["TF_ENABLE_ONEDNN_OPTS"] = "1" if self.onednn else "0"
    if self.malloc_arena_max:
      env["MALLOC_ARENA_MAX"] = str(self.malloc_arena_max)
    if self.loopback_only:
      env["LD_PRELOAD"] = " ".join(
          p for p in (loopback_bind.library_path(), env.get("LD_PRELOAD")) if p)
    env.update(dict(self.env))
    return env


def parse_worker_addresses(workers: Union[str, Sequence[str]]) -> List[str]:
  """'host:port,host:port' (or a list) -> validated ['host:port', ...]."""
  items = workers.split(",") if isinstance(workers, str) else list(workers)
  out = []
  for item in (i.strip() for i in items):
    host, sep, port = item.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
      raise ValueError(f"workers: {item!r} is not host:port")
    out.append(item)
  if len(set(out)) != len(out):
    raise ValueError(f"workers: duplicate addresses in {out}")
  return out
