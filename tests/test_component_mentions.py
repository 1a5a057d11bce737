"""One declaration per component (issue 27, acceptance 5): the built-in
methods' names appear in few modules, counted by tools/component_mentions.py
(a module "names" a component when its code, not its comments or
docstrings, holds the name as a word)."""

import os
import subprocess
import sys

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tools"))
import component_mentions  # pylint: disable=g-import-not-at-top,wrong-import-position
import component_table  # pylint: disable=g-import-not-at-top,wrong-import-position


def test_names_counts_words_in_code_not_in_comments_or_docstrings():
  source = ('"""fedir in a docstring."""\n'
            "# fedir in a comment\n"
            "x = FedIRState  # a class\n"
            "y = 'fedavgm'\n")
  tokens = component_mentions.code_tokens(source)
  assert [t for t in tokens if component_mentions.names(t, "fedir")] == [
      "FedIRState"]
  assert not any(component_mentions.names(t, "fedavg") for t in tokens)
  assert component_mentions.names("'fedavgm'", "fedavgm")
  assert component_mentions.names("build_fedprox_client_work", "fedprox")
  assert not component_mentions.names("fedproxy", "fedprox")


def test_each_variant_and_scaffold_is_named_in_at_most_three_modules():
  found = component_mentions.mentions(
      ["fedir", "fedvc", "fedprox", "scaffold"])
  for name, where in found.items():
    assert len(where) <= 3, (name, where)
  # Where each lives: its maths and TFF process, its declaration.
  assert "federated_vision/methods/builtins/fedir.py" in found["fedir"]
  assert "federated_vision/algorithms/fedir.py" in found["fedir"]


def test_the_script_prints_every_builtin_component():
  proc = subprocess.run([sys.executable, "tools/component_mentions.py"],
                        cwd=REPO, capture_output=True, text=True, check=True)
  heads = [l.split(":")[0] for l in proc.stdout.splitlines()
           if not l.startswith(" ")]
  assert {"fedavg", "fedavgm", "fedsgd", "fedir", "fedprox", "fedvc", "sgd",
          "sgdm", "nesterov", "adam", "yogi", "adagrad", "none",
          "parallel"} <= set(heads)


def test_the_docs_component_table_is_generated_from_the_declarations():
  assert component_table.main(["component_table.py", "--check"]) == 0
  for name in ("`fedir`", "`@adam`", "`scaffold`", "`--fedprox_mu`"):
    assert name in component_table.table()
