"""Which methods `--client_group_size` can group (`client_group_size.
uncovered`, the one rule), and its up-front refusal by config validation:
an explicit N > 1 for a method the groups do not cover is a ConfigError
naming the flag and the method before any method is built; 'auto' and 1
pass for every method. Construction level: nothing is built or trained
(tests/test_startup.py runs the binaries' refusal without TensorFlow)."""

import os
import subprocess
import sys

import pytest

from conftest import REPO
from federated_vision.experiment import config as config_lib
from federated_vision import client_group_size as cgs
from federated_vision.errors import ConfigError
from federated_vision.method_components import MethodConfig

# Today's text (was `methods.with_client_groups`'), after "method <name> ".
REASON = ("cannot be grouped (client groups cover fedavg, fedavgm, fedsgd "
          "with or without fedir / fedvc, and without fedir also with the "
          "mixing strategies none, oracle, example_transfer); use 1 or 'auto'")
MIXING = {"dataset": "digits", "missing_classes": [8, 9]}

# (--methods, --mixing or None): covered by the groups.
COVERED = [
    ("fedavg", None), ("fedavgm", None), ("fedsgd", None),
    ("fedavg+fedir", None), ("fedavg+fedvc", None),
    ("fedavgm+fedir+fedvc", None), ("fedsgd+fedir", None),
    ("fedavg", "none"), ("fedavg", "oracle"), ("fedavg", "example_transfer"),
    ("fedavgm+fedvc", "oracle"), ("fedavgm", "none"),
]
# (--methods, --mixing or None, the method named in the refusal).
UNCOVERED = [
    ("fedavg+fedprox", None, "fedavg+fedprox"),
    ("fedavgm+fedprox+fedvc", None, "fedavgm+fedprox+fedvc"),
    ("fedavg", "parallel", "fedavg+parallel"),
    ("fedavg", "gradient_transfer", "fedavg+gradient_transfer"),
    ("fedavg+fedir", "example_transfer", "fedavg+fedir+example_transfer"),
    ("fedavg+fedir", "none", "fedavg+fedir+none"),
]


def _config(methods, mixing, size):
  values = {"methods": [methods], "client_group_size": size}
  if mixing is not None:
    values.update(MIXING, mixing=[mixing])
  return config_lib.from_values(values, ["client_group_size"])


def _method(name):
  algorithm, *variants = name.split("+")
  return MethodConfig(algorithm, tuple(variants))


@pytest.mark.parametrize("methods, mixing", COVERED)
def test_covered_methods_are_accepted(methods, mixing):
  assert cgs.uncovered(_method(methods), mixing) is None
  for size in ("2", "auto", "1", "4096"):
    config = _config(methods, mixing, size)
    assert config.execution.client_group_size == size


@pytest.mark.parametrize("methods, mixing, name", UNCOVERED)
def test_explicit_size_for_an_uncovered_method_is_refused(methods, mixing,
                                                         name):
  assert cgs.uncovered(_method(methods), mixing) == f"method {name} {REASON}"
  for size in ("2", "7"):
    with pytest.raises(ConfigError) as e:
      _config(methods, mixing, size)
    assert e.value.field == "client_group_size"
    assert str(e.value) == f"--client_group_size={size}: method {name} {REASON}"
  for size in ("auto", "1"):  # 'auto' leaves it ungrouped; 1 is ungrouped.
    assert _config(methods, mixing, size).execution.client_group_size == size


def test_first_uncovered_method_of_several_is_named():
  """--algorithm=fedavg,fedavgm --fedprox: fedavg, fedavg+fedprox, ... are
  built in `expand()` order; the refusal names the first uncovered one."""
  with pytest.raises(ConfigError, match=r"^--client_group_size=3: method "
                     r"fedavg\+fedprox cannot be grouped"):
    config_lib.from_values({"algorithm": ["fedavg", "fedavgm"],
                            "fedprox": True, "client_group_size": "3"})
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
from federated_vision import client_group_size as cgs
from federated_vision.errors import ConfigError
cli.import_extra_modules(["extra_client_variant", "extra_mixing_strategy"])
scaled = t._method("fedavg+scaled")
assert cgs.client_work(scaled) == "scaled"
assert cgs.uncovered(scaled) == f"method fedavg+scaled {t.REASON}"
with pytest.raises(ConfigError, match=r"^--client_group_size=2: method "
                   r"fedavg\\+scaled cannot be grouped"):
  t._config("fedavg+scaled", None, "2")
assert cgs.uncovered(t._method("fedavg"), "parallel_shared") == (
    f"method fedavg+parallel_shared {t.REASON}")
with pytest.raises(ConfigError, match=r"method fedavg\\+parallel_shared "):
  t._config("fedavg", "parallel_shared", "2")
t._config("fedavg+scaled", None, "auto")
t._config("fedavg", "parallel_shared", "auto")
print("checked")
"""


def test_third_party_variant_and_strategy_are_not_covered():
  """Components registered by --extra_modules (tests/extra_*.py): a
  client-work variant ('scaled') and a mixing strategy ('parallel_shared')
  the groups know nothing about are refused; a data-side variant changes
  only the spec and sampler the grouped process uses too."""
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [REPO, os.path.join(REPO, "tests")]))
  proc = subprocess.run([sys.executable, "-c", _THIRD_PARTY], cwd=REPO,
                        env=env, capture_output=True, text=True, check=False)
  assert proc.returncode == 0 and proc.stdout.split() == ["checked"], (
      proc.stdout, proc.stderr[-3000:])


def test_unknown_algorithm_is_not_covered():
  # A registered algorithm outside GROUPED_ALGORITHMS (no registration
  # needed: the rule reads the name only).
  assert cgs.uncovered(MethodConfig("myalgo")) == f"method myalgo {REASON}"


def test_check_methods_without_methods_or_with_size_one():
  fedprox = [_method("fedavg+fedprox")]
  cgs.check_methods("1", fedprox)
  cgs.check_methods("auto", fedprox, ("gradient_transfer",))
  cgs.check_methods("2", [])  # Nothing to refuse.
  with pytest.raises(ConfigError, match="--client_group_size=2: method "
                     "fedavg\\+fedprox "):
    cgs.check_methods("2", fedprox)
