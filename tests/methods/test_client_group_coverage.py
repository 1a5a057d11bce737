"""Which methods `--client_group_size` can group (`methods.groups.
uncovered`, the one rule, derived from the components' declarations), and
its up-front refusal by config validation:
an explicit N > 1 for a method the groups do not cover is a ConfigError
naming the flag and the method before any method is built; 'auto' and 1
pass for every method. Construction level: nothing is built or trained
(tests/experiments/test_startup.py runs the binaries' refusal without
TensorFlow)."""

import os
import subprocess
import sys

import pytest

from conftest import REPO, TEST_PYTHONPATH
from federated_vision.experiment import config as config_lib
from federated_vision.methods import groups as cgs
from federated_vision.errors import ConfigError
from federated_vision.methods import MethodConfig

# The refusal, after "method <name> " (the uncovered components are named).
REASON = "cannot be grouped: client groups do not cover "
MIXING = {"dataset": "digits", "missing_classes": [8, 9]}


def reason(name: str, uncovered: str, mixing: bool = False) -> str:
  return (f"method {name} {REASON}{uncovered}"
          f"{' with a mixing strategy' if mixing else ''}; covered: "
          f"{cgs.covered()}; use 1 or 'auto'")

# (--methods, --mixing or None): covered by the groups.
COVERED = [
    ("fedavg", None), ("fedavgm", None), ("fedsgd", None),
    ("fedavg+fedir", None), ("fedavg+fedvc", None),
    ("fedavgm+fedir+fedvc", None), ("fedsgd+fedir", None),
    ("fedavg", "none"), ("fedavg", "oracle"), ("fedavg", "example_transfer"),
    ("fedavgm+fedvc", "oracle"), ("fedavgm", "none"),
    # FedProx (its local objective's proximal gradient term per client)
    # and the server optimizers.
    ("fedavg+fedprox", None), ("fedavgm+fedprox+fedvc", None),
    ("fedavg@adam", None), ("fedavg+fedvc@nesterov", "oracle"),
]
# (--methods, --mixing or None, the method named in the refusal, the
# uncovered components).
UNCOVERED = [
    ("fedavg", "parallel", "fedavg+parallel", "parallel (mixing)"),
    ("fedavg", "gradient_transfer", "fedavg+gradient_transfer",
     "gradient_transfer (mixing)"),
    ("fedavg+fedir", "example_transfer", "fedavg+fedir+example_transfer",
     "fedir (client work)"),
    ("fedavg+fedir", "none", "fedavg+fedir+none", "fedir (client work)"),
]


def _config(methods, mixing, size):
  values = {"methods": [methods], "client_group_size": size}
  if mixing is not None:
    values.update(MIXING, mixing=[mixing])
  return config_lib.from_values(values, ["client_group_size"])


def _method(name):
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  spec = names.parse(name)
  return MethodConfig(spec.algorithm, spec.variants, spec.server_optimizer)


@pytest.mark.parametrize("methods, mixing", COVERED)
def test_covered_methods_are_accepted(methods, mixing):
  assert cgs.uncovered(_method(methods), mixing) is None
  for size in ("2", "auto", "1", "4096"):
    config = _config(methods, mixing, size)
    assert config.execution.client_group_size == size


@pytest.mark.parametrize("methods, mixing, name, parts", UNCOVERED)
def test_explicit_size_for_an_uncovered_method_is_refused(methods, mixing,
                                                         name, parts):
  want = reason(name, parts, mixing is not None)
  assert cgs.uncovered(_method(methods), mixing) == want
  for size in ("2", "7"):
    with pytest.raises(ConfigError) as e:
      _config(methods, mixing, size)
    assert e.value.field == "client_group_size"
    assert str(e.value) == f"--client_group_size={size}: {want}"
  for size in ("auto", "1"):  # 'auto' leaves it ungrouped; 1 is ungrouped.
    assert _config(methods, mixing, size).execution.client_group_size == size


def test_first_uncovered_method_of_several_is_named():
  """--methods=fedavg,fedavg+fedir --mixing=none: the methods are checked
  in `expand()` order; the refusal names the first uncovered one."""
  with pytest.raises(ConfigError, match=r"^--client_group_size=3: method "
                     r"fedavg\+fedir\+none cannot be grouped"):
    config_lib.from_values({**MIXING, "mixing": ["none"],
                            "methods": ["fedavg", "fedavg+fedir"],
                            "client_group_size": "3"})
  # Every method x strategy is checked: parallel is refused with none.
  with pytest.raises(ConfigError, match=r"method fedavg\+parallel "):
    config_lib.from_values({**MIXING, "mixing": ["none", "parallel"],
                            "methods": ["fedavg"], "client_group_size": "2"})


def test_client_work_is_the_registered_variant_kind():
  assert cgs.client_work(_method("fedavg")) == "plain"
  assert cgs.client_work(_method("fedavg+fedvc")) == "plain"  # Data side.
  assert cgs.client_work(_method("fedavg+fedir+fedvc")) == "fedir"
  assert cgs.client_work(_method("fedsgd+fedvc+fedprox")) == "fedprox"


# Run in a child: --extra_modules register components process-wide, and
# they must stay out of the pytest process (other tests list the registry).
_THIRD_PARTY = """
import pytest
import test_client_group_coverage as t
from experiments import cli
from federated_vision.methods import groups as cgs
from federated_vision.errors import ConfigError
cli.import_extra_modules(["extra_client_variant", "extra_mixing_strategy"])
scaled = t._method("fedavg+scaled")
assert cgs.client_work(scaled) == "scaled"
assert cgs.uncovered(scaled) == t.reason("fedavg+scaled", "scaled (client work)")
with pytest.raises(ConfigError, match=r"^--client_group_size=2: method "
                   r"fedavg\\+scaled cannot be grouped"):
  t._config("fedavg+scaled", None, "2")
assert cgs.uncovered(t._method("fedavg"), "parallel_shared") == t.reason(
    "fedavg+parallel_shared", "parallel_shared (mixing)", True)
with pytest.raises(ConfigError, match=r"method fedavg\\+parallel_shared "):
  t._config("fedavg", "parallel_shared", "2")
t._config("fedavg+scaled", None, "auto")
t._config("fedavg", "parallel_shared", "auto")
print("checked")
"""


def test_third_party_variant_and_strategy_are_not_covered():
  """Components registered by --extra_modules (tests/fixtures/extra_*.py): a
  client-work variant ('scaled') and a mixing strategy ('parallel_shared')
  the groups know nothing about are refused; a data-side variant changes
  only the spec and sampler the grouped process uses too."""
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(  # And this module.
      [TEST_PYTHONPATH, os.path.dirname(os.path.abspath(__file__))]))
  proc = subprocess.run([sys.executable, "-c", _THIRD_PARTY], cwd=REPO,
                        env=env, capture_output=True, text=True, check=False)
  assert proc.returncode == 0 and proc.stdout.split() == ["checked"], (
      proc.stdout, proc.stderr[-3000:])


def test_unknown_algorithm_is_not_covered():
  # The rule reads the declarations: an algorithm nobody declared is an
  # error naming it, never silently covered.
  with pytest.raises(ConfigError, match="unknown algorithm 'myalgo'"):
    cgs.uncovered(MethodConfig("myalgo"))


def test_check_methods_without_methods_or_with_size_one():
  fedavg = [_method("fedavg")]
  cgs.check_methods("1", fedavg, ("gradient_transfer",))
  cgs.check_methods("auto", fedavg, ("gradient_transfer",))
  cgs.check_methods("2", [])  # Nothing to refuse.
  with pytest.raises(ConfigError, match="--client_group_size=2: method "
                     "fedavg\\+gradient_transfer "):
    cgs.check_methods("2", fedavg, ("gradient_transfer",))
