"""The README and docs/ as a newcomer reads them: every Python snippet that
can run does (the README's tour, docs/algorithms.md's "Library API"), the
others are marked `<!-- not run: reason -->`; the README stays short and
links every docs page."""

import glob
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

README_MAX_CHARS = 20_000  # issue 17, acceptance check 5.
NOT_RUN = "<!-- not run:"


def _read(doc):
  with open(os.path.join(REPO, doc), encoding="utf-8") as f:
    return f.read()


def _section(doc, heading):
  text = _read(doc)
  return text.split(heading, 1)[1].split("\n## ", 1)[0]


def _python_blocks(text):
  return re.findall(r"```python\n(.*?)```", text, re.S)


def _library_api_snippets():
  return _python_blocks(_section("docs/algorithms.md", "## Library API"))


def _tour_snippets():
  return _python_blocks(_section("README.md",
                                 "### Load a split in your own TFF code"))


def _docs_pages():
  return sorted(os.path.relpath(p, REPO)
                for p in glob.glob(os.path.join(REPO, "docs", "*.md")))


def _run_script(tmp_path, code, name):
  script = tmp_path / name
  script.write_text(code)
  return subprocess.run([sys.executable, str(script)], cwd=REPO,
                        capture_output=True, text=True, timeout=600,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                                 MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
                                     [REPO, os.environ.get("PYTHONPATH", "")])),
                        stdin=subprocess.DEVNULL, check=False)


_LIBRARY_CHECKS = (
    "\nassert m.name == 'fedavgm+fedprox+fedvc'"
    "\nassert vc.spec.virtual_client_size == 64"
    "\nassert summary['methods']['fedavg+fedprox']['rounds'] == 2"
    "\nassert summary['methods']['fedavg+fedprox']['settings']"
    "['client_work'] == 'fedprox'\n"
    # The DP snippet trained two rounds through the DP aggregator.
    "\nimport numpy as np"
    "\nassert 'dp' in str(dp_out.metrics['aggregator'])"
    "\nassert dp_out.metrics['client_work']"
    "['clients_dropped_non_finite'] == 0"
    "\nassert np.isfinite(dp_out.metrics['client_work']['train']['loss'])"
    "\nassert str(dp_training.initialize().aggregator) != "
    "str(dp_state.aggregator)\n")

_TOUR_CHECKS = (
    "\nimport numpy as np"
    "\nassert sorted(fed.client_data.client_ids) == "
    "['u0000', 'u0001', 'u0002', 'u0003']"
    "\nassert fed.num_classes == 3"
    "\nassert fed.input_shape[:2] == (32, 32)"
    "\ntrain = out.metrics['client_work']['train']"
    "\nassert train['num_examples'] == 10, train"  # 2 clients x 5 examples
    "\nassert np.isfinite(train['loss']) and 0 <= train['accuracy'] <= 1\n")

# One fresh interpreter runs both pages' snippets, each in its own
# namespace, the README's tour first (a user's own script: no
# `runtime.install()` before it), then docs/algorithms.md's Library API;
# a failure in one is printed and the other still runs (ours: one
# TensorFlow import and TFF worker start fewer, test-suite time).
_SCRIPT = """import traceback
def section(name, code):
  try:
    exec(compile(code, name, "exec"), {"__name__": "__main__"})
    print("SECTION OK", name, flush=True)
  except BaseException:
    print("SECTION FAILED", name, flush=True)
    traceback.print_exc()
section("tour", %r)
section("library_api", %r)
"""


@pytest.fixture(scope="module")
def snippets_ran(tmp_path_factory):
  """The subprocess that ran the tour and the Library API snippets, and
  its directory."""
  tmp_path = tmp_path_factory.mktemp("snippets")
  tour, library = _tour_snippets(), _library_api_snippets()
  assert len(tour) == 1 and len(library) == 4
  at = lambda code: code.replace("/tmp/fv", str(tmp_path))
  script = _SCRIPT % (at(tour[0]) + _TOUR_CHECKS,
                      at("\n".join(library)) + _LIBRARY_CHECKS)
  return _run_script(tmp_path, script, "snippets.py"), tmp_path


def _section_passed(proc, name):
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert f"SECTION OK {name}" in proc.stdout.splitlines(), (
      proc.stdout[-2000:], proc.stderr[-3000:])


@pytest.mark.timeout(1200)  # Its snippets' subprocess may take 600 s.
def test_library_api_snippets_run(snippets_ran):
  proc, tmp_path = snippets_ran
  _section_passed(proc, "library_api")
  assert (tmp_path / "tiny" / "summary.json").is_file()


@pytest.mark.timeout(1200)
def test_readme_tour_snippet_runs(snippets_ran):
  """The tour's split loads (4 clients x 5 examples, 3 classes) and trains
  two rounds of 2 clients on the managed workers."""
  proc, tmp_path = snippets_ran
  assert "contexts.managed_execution_context()" in _tour_snippets()[0]
  _section_passed(proc, "tour")
  assert (tmp_path / "inat" / "split.csv").is_file()


def test_readme_is_short_and_maps_every_docs_page():
  text = _read("README.md")
  assert len(text) <= README_MAX_CHARS, len(text)
  links = set(re.findall(r"\]\((docs/[^)#]+)", text))
  assert links, "the README links no docs page"
  for link in links:
    assert os.path.isfile(os.path.join(REPO, link)), f"README links {link}"
  pages = _docs_pages()
  assert set(pages) <= links, f"README links none of {set(pages) - links}"
  # The map: one page per topic.
  for page in ("algorithms", "datasets", "reproduction", "performance",
               "failure_modes"):
    assert f"docs/{page}.md" in pages, page


def test_docs_links_exist():
  for page in _docs_pages():
    for link in re.findall(r"\]\(([^)#:]+\.md)", _read(page)):
      target = os.path.normpath(os.path.join(REPO, "docs", link))
      assert os.path.isfile(target), f"{page} links {link}"


def test_every_python_snippet_is_run_or_marked():
  """Blocks run by a test: the README's tour, docs/algorithms.md's Library
  API, docs/library_recipes.md (tests/project/test_library_recipes.py). Any
  other ```python block says why it cannot run, on the line before it."""
  run = {"README.md": len(_tour_snippets()),
         "docs/algorithms.md": len(_library_api_snippets()),
         "docs/library_recipes.md": 4}
  for doc in ["README.md"] + _docs_pages():
    text = _read(doc)
    marked = len(re.findall(re.escape(NOT_RUN) + r"[^\n]*-->\n```python\n",
                            text))
    assert marked + run.get(doc, 0) == len(_python_blocks(text)), (
        f"{doc}: a ```python block neither run by a test nor marked "
        f"'{NOT_RUN} reason -->'")
