"""The library's import graph is acyclic, importing it changes no
process-wide state, and only `federated_vision/runtime/` touches TFF / TF
internals (issue 17, acceptance checks 2 and 3)."""

import ast
import json
import os
import subprocess
import sys
import textwrap

from conftest import REPO

PACKAGE = "federated_vision"
PACKAGE_DIR = os.path.join(REPO, PACKAGE)
RUNTIME_DIR = os.path.join(PACKAGE_DIR, "runtime")


def _modules():
  """{module name: source path} of every module of the package."""
  out = {}
  for root, _, files in os.walk(PACKAGE_DIR):
    for name in files:
      if name.endswith(".py"):
        path = os.path.join(root, name)
        parts = os.path.relpath(path, REPO)[:-3].split(os.sep)
        if parts[-1] == "__init__":
          parts.pop()
        out[".".join(parts)] = path
  return out


def import_graph(modules):
  """{module: set of package modules it imports}, at module level or in a
  function (every `import` / `from ... import` node of its source).

  `from a.b import c` is an edge to `a.b.c` when that is a module, else to
  `a.b`; a relative import is resolved against the importing module.
  """
  graph = {}
  for name, path in modules.items():
    with open(path) as f:
      tree = ast.parse(f.read(), path)
    is_package = path.endswith("__init__.py")
    edges = set()
    for node in ast.walk(tree):
      if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
      elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
          anchor = name.split(".")
          if not is_package:
            anchor.pop()
          anchor = anchor[:len(anchor) - (node.level - 1)]
          base = ".".join(anchor + ([base] if base else []))
        targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                   for a in node.names]
      else:
        continue
      edges.update(t for t in targets if t in modules and t != name)
    graph[name] = edges
  return graph


def find_cycle(graph):
  """One import cycle as [m1, m2, ..., m1], or None."""
  state = {}  # 1: on the current path, 2: done.
  path = []

  def visit(node):
    state[node] = 1
    path.append(node)
    for nxt in sorted(graph.get(node, ())):
      if state.get(nxt) == 1:
        return path[path.index(nxt):] + [nxt]
      if nxt not in state:
        cycle = visit(nxt)
        if cycle:
          return cycle
    path.pop()
    state[node] = 2
    return None

  for node in sorted(graph):
    if node not in state:
      cycle = visit(node)
      if cycle:
        return cycle
  return None


def test_find_cycle_finds_cycles_and_only_cycles():
  assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
  assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
  assert find_cycle({"x": set(), "a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def test_import_graph_resolves_module_and_function_local_imports():
  graph = import_graph(_modules())
  # Module level, `from package import module`.
  assert "federated_vision.mixing.strategy" in graph[
      "federated_vision.methods.build"]
  assert ("federated_vision.mixing.strategy"
          in graph["federated_vision.mixing.strategies"])
  # Function-local (the method modules import the learning machinery
  # inside their builders).
  assert ("federated_vision.learning.sampling"
          in graph["federated_vision.algorithms.fedvc"])
  assert ("federated_vision.learning.local"
          in graph["federated_vision.algorithms.fedprox"])
  # `from package.module import name` is an edge to the module.
  assert ("federated_vision.runtime.tf_internals"
          in graph["federated_vision.data.client_data"])


def test_library_import_graph_has_no_cycle():
  graph = import_graph(_modules())
  assert len(graph) > 50
  assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))
  # A cycle there was: methods <-> the mixing strategies.
  assert "federated_vision.methods" not in graph[
      "federated_vision.mixing.strategies"]


_FRESH_IMPORT = textwrap.dedent("""
    import atexit, importlib, json, os, pkgutil, signal, sys, traceback
    import tensorflow_federated  # Installs TFF's own default context.
    from tensorflow_federated.python.core.impl.context_stack import context_stack_impl

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    registered = []  # (caller file, function) of every atexit.register.
    real_register = atexit.register

    def recording_register(func, *args, **kwargs):
      registered.append((sys._getframe(1).f_code.co_filename,
                         getattr(func, "__qualname__", repr(func))))
      return real_register(func, *args, **kwargs)

    def snapshot():
      return {"context": context_stack_impl.context_stack.current,
              "handlers": {s: signal.getsignal(s) for s in SIGNALS},
              "unraisablehook": sys.unraisablehook,
              "atexit": atexit._ncallbacks()}

    def changes(before, after):
      out = []
      if after["context"] is not before["context"]:
        out.append("TFF default context: %s -> %s" % (
            type(before["context"]).__name__, type(after["context"]).__name__))
      for s in SIGNALS:
        if after["handlers"][s] != before["handlers"][s]:
          out.append("handler of %s" % signal.Signals(s).name)
      if after["unraisablehook"] is not before["unraisablehook"]:
        out.append("sys.unraisablehook")
      if after["atexit"] != before["atexit"]:
        out.append("atexit callbacks: %d -> %d" % (before["atexit"],
                                                   after["atexit"]))
      return out

    before = snapshot()
    atexit.register = recording_register
    import federated_vision
    names, failed = [], []
    for info in pkgutil.walk_packages(federated_vision.__path__,
                                      "federated_vision.",
                                      onerror=failed.append):
      try:
        importlib.import_module(info.name)
        names.append(info.name)
      except Exception:
        failed.append(info.name + ": " + traceback.format_exc(limit=1))
    atexit.register = real_register
    package_dir = os.path.dirname(federated_vision.__file__)
    ours = [r for r in registered if r[0].startswith(package_dir)]
    third_party = len(registered)
    after = snapshot()
    import_changes = changes(before, after)
    # The check itself sees what runtime.install() does.
    from federated_vision import runtime
    runtime.install()
    install_changes = changes(after, snapshot())
    print(json.dumps({"imported": names, "failed": failed,
                      "import_changes": import_changes,
                      "atexit_by_package": ours,
                      "atexit_registered": third_party,
                      "atexit_delta": after["atexit"] - before["atexit"],
                      "install_changes": install_changes}))
    before = after = None  # Drop the snapshots' references to TFF's context.
""")


def test_importing_every_library_module_changes_no_process_wide_state(tmp_path):
  script = tmp_path / "import_all.py"
  script.write_text(_FRESH_IMPORT)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", MPLBACKEND="Agg",
             PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
  proc = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path),
                        capture_output=True, text=True, timeout=600, env=env,
                        stdin=subprocess.DEVNULL, check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  assert out["failed"] == []
  modules = _modules()
  assert sorted(out["imported"]) == sorted(m for m in modules if m != PACKAGE)
  # Whatever atexit callbacks appeared were registered by third-party
  # modules imported on the way (e.g. `logging`), none by the package.
  assert out["atexit_by_package"] == []
  assert out["atexit_delta"] == out["atexit_registered"]
  non_atexit = [c for c in out["import_changes"]
                if not c.startswith("atexit callbacks")]
  assert non_atexit == []
  # The same comparison does see the runtime being installed.
  assert out["install_changes"][:3] == [
      "TFF default context: SyncExecutionContext -> SyncExecutionContext",
      "handler of SIGTERM", "handler of SIGHUP"]
  assert "sys.unraisablehook" in out["install_changes"]


def test_only_the_runtime_uses_tff_or_tf_internals():
  """Check 3: `grep -rl "tensorflow_federated.python" federated_vision/`
  names only files of `federated_vision/runtime/` (and so does TF's
  `tensorflow.python`)."""
  hits = {"tensorflow_federated.python": set(), "tensorflow.python": set()}
  for root, _, files in os.walk(PACKAGE_DIR):
    for name in files:
      path = os.path.join(root, name)
      try:
        with open(path, encoding="utf-8") as f:
          text = f.read()
      except (UnicodeDecodeError, OSError):
        continue
      for needle, found in hits.items():
        if needle in text:
          found.add(os.path.relpath(path, REPO))
  runtime = os.path.relpath(RUNTIME_DIR, REPO) + os.sep
  assert hits["tensorflow_federated.python"]  # The runtime does use them.
  for needle, found in hits.items():
    assert all(p.startswith(runtime) for p in found), (needle, sorted(found))
