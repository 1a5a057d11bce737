"""Repository layout: `datasets/` never shadows Hugging Face's `datasets`."""

import os
import subprocess
import sys

from conftest import REPO


def test_datasets_dir_is_not_a_package():
  assert os.path.isdir(os.path.join(REPO, "datasets"))
  assert not os.path.exists(os.path.join(REPO, "datasets", "__init__.py"))


def test_import_datasets_finds_the_installed_library_from_repo_root(tmp_path):
  # Stand-in for Hugging Face's package: a regular package on sys.path.
  fake = tmp_path / "site" / "datasets"
  fake.mkdir(parents=True)
  (fake / "__init__.py").write_text("IS_HF = True\n")
  out = subprocess.run(
      [sys.executable, "-c", "import datasets; print(datasets.IS_HF)"],
      cwd=REPO, capture_output=True, text=True, check=False,
      env=dict(os.environ, PYTHONPATH=str(tmp_path / "site")))
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "True"


def test_setup_installs_only_the_library():
  out = subprocess.run(
      [sys.executable, "-c",
       "import setuptools; print(sorted(setuptools.find_packages("
       "include=['federated_vision', 'federated_vision.*'])))"],
      cwd=REPO, capture_output=True, text=True, check=True)
  packages = eval(out.stdout)  # A printed list of names.
  assert "federated_vision" in packages and "datasets" not in packages
  assert all(p.startswith("federated_vision") for p in packages)
  setup = open(os.path.join(REPO, "setup.py")).read()
  assert 'include=["federated_vision", "federated_vision.*"]' in setup


def _package_modules():
  out = []
  for root, _, files in os.walk(os.path.join(REPO, "federated_vision")):
    out += [os.path.join(root, f) for f in files if f.endswith(".py")]
  return out


def test_no_module_of_the_library_imports_the_binaries():
  """Research code imports `federated_vision` only (the experiment API is
  `federated_vision.experiment`); `experiments/` keeps the binaries."""
  import ast  # pylint: disable=g-import-not-at-top
  offenders = []
  for path in _package_modules():
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
      names = ([a.name for a in node.names] if isinstance(node, ast.Import)
               else [node.module or ""] if isinstance(node, ast.ImportFrom)
               else [])
      if any(n == "experiments" or n.startswith("experiments.")
             for n in names):
        offenders.append(os.path.relpath(path, REPO))
  assert not offenders


def test_docs_layout_names_every_folder():
  """docs/layout.md has a row for every folder of the repository (but the
  environment's and caches)."""
  text = open(os.path.join(REPO, "docs", "layout.md")).read()
  skip = {".git", ".venv", "__pycache__", ".pytest_cache", "output"}
  missing = []
  for root, dirs, _ in os.walk(REPO):
    dirs[:] = sorted(d for d in dirs if d not in skip
                     and not d.endswith(".egg-info"))
    for d in dirs:
      rel = os.path.relpath(os.path.join(root, d), REPO)
      if f"`{rel}/`" not in text:
        missing.append(rel)
  assert not missing, missing
