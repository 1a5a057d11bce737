"""Builds `loopback_bind.so`, the shim that keeps local TFF workers on loopback.

`SOURCE` (below) is compiled with the system C compiler (`$CC`, else `cc`,
else `gcc`) when the environment is built: `make env` runs
`python -m federated_vision.native.loopback_bind --install`, which writes it
to `<sys.prefix>/share/federated_vision/` (inside the virtual environment)
and, on a machine without a compiler, stops with one line saying what to
install. At run time `library_path()` uses that prebuilt file, so no
compiler is needed then; an environment built otherwise (pip, Bazel) compiles
it once on first use into `$FEDERATED_VISION_CACHE` (default
`~/.cache/federated_vision`). Files are named by the source's hash. The C
source lives in this module so that every way of installing the package
carries it.
"""

import hashlib
import os
import shutil
import subprocess
import sys
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


# What to install when there is no compiler (Debian/Ubuntu, Fedora, Alpine).
INSTALL_HINT = ("apt-get install gcc (Debian/Ubuntu), dnf install gcc or "
                "apk add gcc musl-dev")


def file_name() -> str:
  return f"loopback_bind-{hashlib.sha256(SOURCE.encode()).hexdigest()[:16]}.so"


def prebuilt_path(prefix: str = None) -> str:
  """Where `--install` puts the shim: inside the environment (`sys.prefix`)."""
  return os.path.join(prefix or sys.prefix, "share", "federated_vision",
                      file_name())


def find_compiler():
  return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def library_path() -> str:
  """Path of the shim: the environment's prebuilt one, else compiled once."""
  if os.path.exists(prebuilt_path()):
    return prebuilt_path()
  return build(cache_dir())


def build(directory: str) -> str:
  """Compiles the shim into `directory` (if not there yet); its path."""
  path = os.path.join(directory, file_name())
  with _LOCK:
    if os.path.exists(path):
      return path
    compiler = find_compiler()
    if not compiler:
      raise BuildError(
          "no C compiler (cc) to build federated_vision/native/loopback_bind.py's "
          f"shim, which keeps local TFF workers on loopback; install one ("
          f"{INSTALL_HINT}) and run `make env` again, or pass "
          "WorkerConfig(loopback_only=False) on a trusted network")
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".so")
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


def main(argv) -> int:
  """`--install [--prefix=DIR]`: build the shim into the environment."""
  args = [a for a in argv[1:] if not a.startswith("--prefix=")]
  prefixes = [a.split("=", 1)[1] for a in argv[1:] if a.startswith("--prefix=")]
  if args != ["--install"] or len(prefixes) > 1:
    print("usage: python -m federated_vision.native.loopback_bind --install "
          "[--prefix=DIR]", file=sys.stderr)
    return 2
  path = prebuilt_path(prefixes[0] if prefixes else None)
  if not find_compiler():
    print(f"make env: no C compiler (cc or gcc) on PATH; federated_vision "
          f"compiles its loopback shim once, now: install one ({INSTALL_HINT}) "
          "and run make env again", file=sys.stderr)
    return 2
  try:
    print(f"make env: loopback shim {build(os.path.dirname(path))}")
  except (BuildError, OSError) as e:
    print(f"make env: {e}", file=sys.stderr)
    return 2
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
