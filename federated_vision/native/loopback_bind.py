"""Builds `loopback_bind.so`, the shim that keeps local TFF workers on loopback.

`SOURCE` (below) is compiled once with the system C compiler (`$CC`, else
`cc`) into `$FEDERATED_VISION_CACHE` (default `~/.cache/federated_vision`),
named by the source's hash. The C source lives in this module so that every
way of installing the package (setup.py, Bazel) carries it.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading

SOURCE = r"""/* LD_PRELOAD shim: a wildcard bind() to a non-zero port becomes loopback.
 *
 * TFF 0.87's worker_binary listens on "[::]:port" (all interfaces) and has no
 * flag to change that; its executor service has no authentication and runs
 * any TensorFlow graph it is sent. Preloaded into the worker by
 * federated_vision.runtime.workers, this rewrites
 *   AF_INET  0.0.0.0:port -> 127.0.0.1:port
 *   AF_INET6 [::]:port    -> [::ffff:127.0.0.1]:port (the dual-stack socket
 *                            then accepts 127.0.0.1 only)
 * Binds to port 0 (ephemeral, outgoing) and to specific addresses pass
 * through unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  static bind_fn real_bind = NULL;
  if (real_bind == NULL) {
    real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    if (real_bind == NULL) {
      errno = ENOSYS;
      return -1;
    }
  }
  if (addr != NULL && addr->sa_family == AF_INET &&
      len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in in4;
    memcpy(&in4, addr, sizeof in4);
    if (in4.sin_port != 0 && in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
      in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return real_bind(fd, (const struct sockaddr *)&in4, sizeof in4);
    }
  } else if (addr != NULL && addr->sa_family == AF_INET6 &&
             len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (in6.sin6_port != 0 && IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr)) {
      static const unsigned char kMappedLoopback[16] = {
          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
      memcpy(&in6.sin6_addr, kMappedLoopback, sizeof kMappedLoopback);
      return real_bind(fd, (const struct sockaddr *)&in6, sizeof in6);
    }
  }
  return real_bind(fd, addr, len);
}
"""
_LOCK = threading.Lock()


class BuildError(RuntimeError):
  """The shim could not be compiled (one line naming the fix)."""


def cache_dir() -> str:
  return os.environ.get("FEDERATED_VISION_CACHE") or os.path.join(
      os.path.expanduser("~"), ".cache", "federated_vision")


def library_path() -> str:
  """Path of the compiled shim, building it if needed."""
  digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
  path = os.path.join(cache_dir(), f"loopback_bind-{digest}.so")
  with _LOCK:
    if os.path.exists(path):
      return path
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
      raise BuildError(
          "no C compiler (cc) to build federated_vision/native/loopback_bind.py's "
          "shim, "
          "which keeps local TFF workers on loopback; install one, or pass "
          "WorkerConfig(loopback_only=False) on a trusted network")
    os.makedirs(cache_dir(), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir(), suffix=".so")
    os.close(fd)
    proc = subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-x", "c", "-o", tmp, "-", "-ldl"],
        input=SOURCE, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
      os.remove(tmp)
      last = (proc.stderr.strip().splitlines() or ["?"])[-1]
      raise BuildError(f"building the loopback shim with {compiler} failed: "
                       f"{last}")
    os.replace(tmp, path)  # Atomic: concurrent builders all end up valid.
  return path
