"""Prints, for each built-in method component, the modules whose code names it.

A method component (algorithm, client-work or data-side variant, server
optimizer, mixing strategy: `federated_vision.methods`) is meant to be said
once, where it is declared; every other module derives what it needs from
the registries. This tool measures that: a module "names" a component when a
Python token of its code (an identifier or a string that is not a docstring;
comments and docstrings do not count) holds the component's name as a word
(case-insensitive; `FedIRState` and `"fedir"` name fedir, `fedavgm` does not
name fedavg).

    .venv/bin/python tools/component_mentions.py            # every component
    .venv/bin/python tools/component_mentions.py fedir fedvc

Scanned: the package (`federated_vision/`, without `reproduction/`, whose
presets name the methods of the papers' tables by design) and the binaries
(`experiments/`, `datasets/`). tests/test_component_mentions.py holds the
limit issue 27 sets (FedIR, FedVC, FedProx and SCAFFOLD in at most three
modules each).
"""

import io
import keyword
import os
import re
import sys
import token
import tokenize
from typing import Dict, Iterable, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ("federated_vision", "experiments", "datasets")
EXCLUDED = (os.path.join("federated_vision", "reproduction"),)


def modules(repo: str = REPO) -> List[str]:
  """The scanned .py files, relative to `repo`, sorted."""
  out = []
  for top in SCANNED:
    for root, _, files in os.walk(os.path.join(repo, top)):
      rel = os.path.relpath(root, repo)
      if any(rel == e or rel.startswith(e + os.sep) for e in EXCLUDED):
        continue
      out += [os.path.join(rel, f) for f in files if f.endswith(".py")]
  return sorted(out)


def code_tokens(source: str) -> List[str]:
  """Identifiers and non-docstring strings of `source` (no comments)."""
  out, previous = [], token.NEWLINE
  for tok in tokenize.generate_tokens(io.StringIO(source).readline):
    if tok.type == token.STRING:
      # A string that starts a statement is a docstring (or a bare string
      # expression, which documents too): not code.
      if previous not in (token.NEWLINE, token.INDENT, token.DEDENT,
                          tokenize.NL):
        out.append(tok.string)
    elif tok.type == token.NAME and not keyword.iskeyword(tok.string):
      out.append(tok.string)  # (`None` does not name the strategy none.)
    if tok.type not in (tokenize.COMMENT, tokenize.NL):
      previous = tok.type
  return out


def names(text: str, name: str) -> bool:
  """Whether `text` holds `name` as a word: not inside a longer lower-case
  word (`fedavgm` does not hold `fedavg`; `FedIRState` holds `fedir`)."""
  for m in re.finditer(re.escape(name), text, re.IGNORECASE):
    before = text[m.start() - 1] if m.start() else ""
    after = text[m.end()] if m.end() < len(text) else ""
    if before.isalnum() and not (before.islower() and text[m.start()].isupper()):
      continue
    if after.isdigit() or after.islower():
      continue
    return True
  return False


def mentions(components: Iterable[str], repo: str = REPO
             ) -> Dict[str, List[str]]:
  """{component: [modules whose code names it]}."""
  out = {c: [] for c in components}
  for path in modules(repo):
    with open(os.path.join(repo, path), encoding="utf-8") as f:
      tokens = code_tokens(f.read())
    for c in out:
      if any(names(t, c) for t in tokens):
        out[c].append(path)
  return out


def builtin_components() -> List[str]:
  """Every built-in method component's name (from the registries)."""
  sys.path.insert(0, REPO)
  from federated_vision import methods  # pylint: disable=g-import-not-at-top
  return [c.name for c in methods.all_components()
          if c.module.startswith("federated_vision.")]


def main(argv: List[str]) -> int:
  components = argv[1:] or builtin_components()
  for c, where in mentions(components).items():
    print(f"{c}: {len(where)} module(s)" + "".join(f"\n  {w}" for w in where))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
