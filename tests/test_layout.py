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
