"""Every shell command of the README and of every docs/*.md page (```sh
blocks) runs as written from a fresh clone after `make run`: it names an
existing make target, module or script, and only flags that program defines;
the cheap ones are run."""

import glob
import os
import re
import shlex

import pytest

from experiments.reproduce_lib import SOURCES_HEADER
from conftest import REPO, run_module

# Run for real (cheap: they only plan).
CHEAP = ("--dry_run",)


# Docs besides the README whose ```sh commands are checked the same way:
# every page under docs/.
OTHER_DOCS = tuple(sorted(
    os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs",
                                                             "*.md"))))


def readme_commands(doc="README.md"):
  """[(line number, argv)] of the README's (or `doc`'s) ```sh blocks;
  continuation lines joined, comments dropped, `.venv/bin/python` kept as
  written."""
  with open(os.path.join(REPO, doc)) as f:
    text = f.read()
  out = []
  for block in re.finditer(r"```sh\n(.*?)```", text, re.S):
    first = text[:block.start()].count("\n") + 2
    logical, start = "", None
    for i, line in enumerate(block.group(1).splitlines()):
      if start is None:
        start = first + i
      logical += " " + line.rstrip().rstrip("\\")
      if not line.rstrip().endswith("\\"):
        argv = shlex.split(logical, comments=True)
        if argv:
          out.append((start, argv))
        logical, start = "", None
  return out


def _defined_flags(module):
  # absl's --helpfull exits 1 after printing; argparse's --help exits 0.
  proc = run_module(module, "--helpfull", timeout=120)
  if "usage:" in proc.stdout + proc.stderr:
    proc = run_module(module, "--help", timeout=120)
  assert "--" in proc.stdout and "Traceback" not in proc.stderr, (
      f"{module} --helpfull: {proc.stderr[-1000:]}")
  names = set()
  for m in re.finditer(r"--(\[no\])?([A-Za-z_][A-Za-z0-9_]*)", proc.stdout):
    names.add(m.group(2))
    if m.group(1):
      names.add("no" + m.group(2))
  return names


def _flag_names(args):
  return [a[2:].split("=")[0] for a in args if a.startswith("--")]


def _program(argv):
  """(python module or None, script path or None, its arguments)."""
  if argv[0] == "make":
    return None, None, argv[1:]
  assert argv[0] == ".venv/bin/python", (
      f"{argv[0]}: use .venv/bin/python (a bare python may lack TensorFlow)")
  if argv[1] == "-m":
    return argv[2], None, argv[3:]
  return None, argv[1], argv[2:]


_FLAGS = {}


def _flags_of(module_or_script):
  if module_or_script not in _FLAGS:
    if module_or_script.endswith(".py"):
      module = module_or_script[:-3].replace("/", ".")
    else:
      module = module_or_script
    _FLAGS[module_or_script] = _defined_flags(module)
  return _FLAGS[module_or_script]


def test_readme_has_the_binaries_commands():
  commands = [" ".join(a) for _, a in readme_commands()]
  for name in ("experiments.train_main", "experiments.sweep_main",
               "experiments.report_main"):
    assert any(name in c for c in commands), name
  for doc in ("README.md",) + OTHER_DOCS:
    assert not re.search(r"(?m)^\s*python3? ", open(
        os.path.join(REPO, doc)).read()), f"{doc}: a bare `python` command"


def test_every_docs_page_is_checked():
  assert "docs/hardware.md" in OTHER_DOCS and "docs/datasets.md" in OTHER_DOCS
  assert len(OTHER_DOCS) >= 9, OTHER_DOCS


@pytest.mark.parametrize("line, argv", readme_commands(),
                         ids=lambda v: str(v) if isinstance(v, int) else "")
def test_readme_command_names_existing_program_and_flags(line, argv):
  module, script, args = _program(argv)
  where = f"README.md:{line}"
  if module is None and script is None:  # make [target] [VAR=value]
    targets = set(re.findall(r"(?m)^([a-z][a-z_-]*):", open(
        os.path.join(REPO, "Makefile")).read()))
    names = [a for a in args if "=" not in a]
    assert set(names) <= targets, f"{where}: make {names} not in {targets}"
    for a in args:
      if a.startswith("ARGS="):
        unknown = set(_flag_names(shlex.split(a[5:]))) - _flags_of(
            "experiments.train_main")
        assert not unknown, f"{where}: undefined flags {unknown}"
    return
  target = module or script
  if module:
    path = os.path.join(REPO, *module.split("."))
    assert os.path.isfile(path + ".py"), f"{where}: no module {module}"
  else:
    assert os.path.isfile(os.path.join(REPO, script)), f"{where}: no {script}"
  unknown = set(_flag_names(args)) - _flags_of(target)
  if any(a.startswith("--extra_modules=") for a in args):
    # Flags a module of the page declares (docs/extending.md's own
    # component): a field of one of its ```python blocks.
    doc = where.split(":")[-2] if where.count(":") > 1 else "README.md"
    blocks = re.findall(r"```python\n(.*?)```", open(
        os.path.join(REPO, doc)).read(), flags=re.S)
    unknown = {f for f in unknown
               if not any(re.search(rf"(?m)^\s+{f}: ", b) for b in blocks)}
  assert not unknown, f"{where}: {target} has no flags {sorted(unknown)}"
  if module and any(a in CHEAP for a in args):
    proc = run_module(module, *args, timeout=300)
    assert proc.returncode == 0, f"{where}: {proc.stderr[-2000:]}"
    # The plan of what was asked: 'sweep|preset NAME: N points|runs', then
    # one line indented by two spaces per point or run; not counted: the
    # base line(s) ('  base: ...' / '  base (every run; ...): ...'), a long
    # line's wrapped continuations (indented deeper) and the sweep's
    # '  N point(s) miss data:' summary.
    names = [a.split("=", 1)[1] for a in args
             if a.startswith(("--sweep=", "--preset="))]
    assert len(names) == 1, f"{where}: a --dry_run of what?"
    lines = proc.stdout.splitlines()
    if SOURCES_HEADER in lines:  # A preset's settings' sources follow.
      lines = lines[:lines.index(SOURCES_HEADER)]
    head = re.match(rf"(sweep|preset) {re.escape(names[0])}: (\d+) "
                    r"(points|runs)\b", lines[0])
    assert head, f"{where}: {lines[0]!r}"
    listed = [l for l in lines[1:]
              if re.match(r"  \S", l) and not l.startswith("  base")
              and not re.match(r"  \d+ point\(s\) miss data:", l)]
    assert len(listed) == int(head.group(2)) > 0, f"{where}: {proc.stdout}"


@pytest.mark.parametrize("line, argv", [
    (f"{doc}:{line}", argv) for doc in OTHER_DOCS
    for line, argv in readme_commands(doc)], ids=lambda v: str(v)
    if isinstance(v, str) else "")
def test_docs_command_names_existing_program_and_flags(line, argv):
  test_readme_command_names_existing_program_and_flags(line, argv)


def test_readme_names_every_file_whose_change_rebuilds_the_environment():
  # It named only the lock (issue: friction): a change to setup.py or
  # tools/make_env.sh rebuilds .venv from scratch too.
  with open(os.path.join(REPO, "Makefile")) as f:
    rule = re.search(r"(?m)^\$\(VENV\)/\.complete: (.*)$", f.read())
  prerequisites = rule.group(1).split()
  assert prerequisites[0] == "requirements.lock"
  with open(os.path.join(REPO, "README.md")) as f:
    text = " ".join(f.read().split())
  sentence = text[text.index("Editing the lock"):]
  sentence = sentence[:sentence.index("rebuilds the environment")]
  for name in prerequisites[1:]:
    assert f"`{name}`" in sentence, name
