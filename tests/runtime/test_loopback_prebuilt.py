"""No C compiler at run time: the loopback shim is built by `make env`.

`make env` runs `python -m federated_vision.native.loopback_bind --install`,
which compiles the shim into the environment (`<sys.prefix>/share/
federated_vision/`) or, without a compiler, stops with one line naming what
to install. Runs then use the prebuilt shim with no compiler on PATH.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from federated_vision.native import loopback_bind
from conftest import REPO


def _env(tmp_path, **extra):
  """No compiler anywhere on PATH, no $CC, a fresh cache directory."""
  empty = tmp_path / "bin"
  empty.mkdir(exist_ok=True)
  env = {k: v for k, v in os.environ.items() if k != "CC"}
  env.update(PATH=str(empty), PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3",
             FEDERATED_VISION_CACHE=str(tmp_path / "fresh_cache"), **extra)
  return env


def _install(prefix, env):
  return subprocess.run(
      [sys.executable, "-m", "federated_vision.native.loopback_bind",
       "--install", f"--prefix={prefix}"], cwd=REPO, env=env,
      capture_output=True, text=True, timeout=120, check=False)


def test_make_env_runs_the_install_step():
  makefile = open(os.path.join(REPO, "Makefile")).read()
  assert re.search(r"(?m)^env: .*\$\(VENV\)/\.shim", makefile)
  recipe = makefile.split("$(VENV)/.shim:", 1)[1].split("\n\n", 1)[0]
  assert "-m federated_vision.native.loopback_bind --install" in recipe
  assert "federated_vision/native/loopback_bind.py" in recipe.splitlines()[0]


def test_install_without_compiler_is_one_line(tmp_path):
  proc = _install(tmp_path / "prefix", _env(tmp_path))
  assert proc.returncode == 2
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1, proc.stderr
  assert "no C compiler" in lines[0] and "apt-get install gcc" in lines[0]
  assert not (tmp_path / "prefix").exists()


def test_library_path_without_prebuilt_or_compiler_names_the_fix(
    tmp_path, monkeypatch):
  for k, v in _env(tmp_path).items():
    monkeypatch.setenv(k, v)
  monkeypatch.delenv("CC", raising=False)
  monkeypatch.setattr(sys, "prefix", str(tmp_path / "no_prefix"))
  with pytest.raises(loopback_bind.BuildError) as e:
    loopback_bind.library_path()
  assert "\n" not in str(e.value)
  assert "apt-get install gcc" in str(e.value) and "make env" in str(e.value)


@pytest.mark.skipif(loopback_bind.find_compiler() is None,
                    reason="needs a C compiler to prebuild the shim")
def test_prebuilt_shim_runs_a_worker_without_compiler(tmp_path):
  prefix = tmp_path / "prefix"
  proc = _install(prefix, dict(os.environ, PYTHONPATH=REPO))
  assert proc.returncode == 0, proc.stderr
  built = loopback_bind.prebuilt_path(str(prefix))
  assert os.path.isfile(built) and built in proc.stdout
  # A run in that environment: no compiler on PATH, nothing in the cache.
  code = (
      "import sys; sys.prefix = sys.argv[1]\n"
      "import tensorflow as tf, tensorflow_federated as tff\n"
      "from federated_vision.runtime import contexts\n"
      "from federated_vision.native import loopback_bind\n"
      "assert loopback_bind.library_path() == sys.argv[2]\n"
      "@tff.tensorflow.computation(tf.int32)\n"
      "def add_one(x):\n"
      "  return x + 1\n"
      "with contexts.managed_execution_context():\n"
      "  print('result', add_one(41))\n")
  run = subprocess.run([sys.executable, "-c", code, str(prefix), built],
                       cwd=REPO, env=_env(tmp_path), capture_output=True,
                       text=True, timeout=300, check=False)
  assert run.returncode == 0, run.stderr[-2000:]
  assert "result 42" in run.stdout
  assert not os.path.exists(tmp_path / "fresh_cache" / loopback_bind.file_name())
  shutil.rmtree(prefix)


def test_failure_modes_doc_names_where_the_shim_is(monkeypatch):
  # The doc said only `~/.cache/federated_vision` (issue: friction).
  with open(os.path.join(REPO, "docs", "failure_modes.md")) as f:
    text = " ".join(f.read().split())
  share = os.path.dirname(os.path.relpath(
      loopback_bind.prebuilt_path("/prefix"), "/prefix"))
  assert share == "share/federated_vision"
  assert f"`{share}/`" in text and f"`.venv/{share}/`" in text
  monkeypatch.delenv("FEDERATED_VISION_CACHE", raising=False)
  assert loopback_bind.cache_dir() == os.path.expanduser(
      "~/.cache/federated_vision")
  assert ("into `$FEDERATED_VISION_CACHE`, default "
          "`~/.cache/federated_vision`") in text
