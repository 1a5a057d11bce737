"""BUILD files: every module, binary and test has a Bazel target.

Bazel 4 (Debian's bazel-bootstrap) installs here but cannot analyse py_*
rules offline (it downloads @rules_cc), so the BUILD files are checked by
parsing them.
"""

import importlib.util
import os
import shutil

from conftest import REPO

_spec = importlib.util.spec_from_file_location(
    "gen_build", os.path.join(REPO, "tools", "gen_build.py"))
gen_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_build)


def test_repository_build_files_are_complete_and_consistent():
  assert gen_build.check_tree(REPO) == []


def test_build_files_are_up_to_date():
  stale = [p for p, content in gen_build.generate().items()
           if open(os.path.join(REPO, p)).read() != content]
  assert stale == [], "run: python tools/gen_build.py"


def test_expected_kinds():
  rules = {r[1]["name"]: r[0] for r in
           gen_build.parse_build(os.path.join(REPO, "experiments", "BUILD"))
           if "name" in r[1]}
  assert rules["train_main"] == "py_binary"
  assert rules["flags_lib"] == "py_library"
  tests = {r[1]["name"]: r[0] for r in
           gen_build.parse_build(
               os.path.join(REPO, "tests", "project", "BUILD"))
           if "name" in r[1]}
  assert tests["test_build_files"] == "py_test"
  assert all(k == "py_test" for n, k in tests.items() if n.startswith("test_"))


def _mini_tree(tmp_path):
  pkg = tmp_path / "federated_vision"
  pkg.mkdir()
  (pkg / "__init__.py").write_text("")
  (pkg / "a.py").write_text("import federated_vision.b\n")
  (pkg / "b.py").write_text("")
  return pkg


def test_checker_catches_missing_target_missing_file_and_bad_dep(tmp_path):
  pkg = _mini_tree(tmp_path)
  (pkg / "BUILD").write_text(
      'py_library(name = "federated_vision", srcs = ["__init__.py"])\n'
      'py_library(name = "a", srcs = ["a.py"], deps = ["//federated_vision:nope"])\n'
      'py_library(name = "c", srcs = ["c.py"])\n')
  problems = "\n".join(gen_build.check_tree(str(tmp_path), ("federated_vision",)))
  assert "federated_vision/b.py: no BUILD target" in problems
  assert "names missing file c.py" in problems
  assert "dep //federated_vision:nope is not a target" in problems


def test_checker_catches_binary_declared_as_library(tmp_path):
  exp = tmp_path / "experiments"
  exp.mkdir()
  (exp / "x_main.py").write_text("")
  (exp / "BUILD").write_text('py_library(name = "x_main", srcs = ["x_main.py"])\n')
  assert gen_build.check_tree(str(tmp_path), ("experiments",)) == [
      "experiments/x_main.py: binary is not a py_binary"]
