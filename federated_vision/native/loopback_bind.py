"""Builds `loopback_bind.so`, the shim that keeps local TFF workers on loopback.

See `loopback_bind.c`. The library is compiled once with the system C
compiler (`$CC`, else `cc`) into `$FEDERATED_VISION_CACHE` (default
`~/.cache/federated_vision`), named by the source's hash.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "loopback_bind.c")
_LOCK = threading.Lock()


class BuildError(RuntimeError):
  """The shim could not be compiled (one line naming the fix)."""


def cache_dir() -> str:
  return os.environ.get("FEDERATED_VISION_CACHE") or os.path.join(
      os.path.expanduser("~"), ".cache", "federated_vision")


def library_path() -> str:
  """Path of the compiled shim, building it if needed."""
  with open(_SOURCE, "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()[:16]
  path = os.path.join(cache_dir(), f"loopback_bind-{digest}.so")
  with _LOCK:
    if os.path.exists(path):
      return path
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
      raise BuildError(
          "no C compiler (cc) to build federated_vision/native/loopback_bind.c, "
          "which keeps local TFF workers on loopback; install one, or pass "
          "WorkerConfig(loopback_only=False) on a trusted network")
    os.makedirs(cache_dir(), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir(), suffix=".so")
    os.close(fd)
    proc = subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-o", tmp, _SOURCE, "-ldl"],
        capture_output=True, text=True, check=False)
    if proc.returncode != 0:
      os.remove(tmp)
      last = (proc.stderr.strip().splitlines() or ["?"])[-1]
      raise BuildError(f"building {_SOURCE} with {compiler} failed: {last}")
    os.replace(tmp, path)  # Atomic: concurrent builders all end up valid.
  return path
