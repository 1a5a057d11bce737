"""--methods: an explicit list of methods (issue 17 item 1, issue 20).

`--methods=fedavg+fedvc,fedavgm+fedir+fedvc` trains exactly those methods, in
that order; names are parsed against the registries of
`federated_vision.methods` (so a variant registered from --extra_modules is
reachable); the old flags stay as shorthands and cannot be combined with it.
"""

import json

import pytest

from federated_vision.experiment import config as config_lib
from federated_vision.experiment import fields_read
from federated_vision.methods import names as method_names
from federated_vision.errors import ConfigError
from federated_vision.reproduction import spec


def test_parse_gives_canonical_names_in_the_order_given():
  assert method_names.parse_method("fedavgm+fedvc+fedir") == (
      "fedavgm", ("fedir", "fedvc"))
  assert method_names.parse_method(" fedavg ") == ("fedavg", ())
  assert method_names.canonical_names(
      ["fedavgm+fedvc", "fedavg+fedvc+fedir", "fedsgd"]) == (
          "fedavgm+fedvc", "fedavg+fedir+fedvc", "fedsgd")


@pytest.mark.parametrize("names, part, reason", [
    (["fedavg", "nope"], "nope", "unknown algorithm 'nope'"),
    (["fedvc"], "fedvc", "a variant; a method starts with its algorithm"),
    (["fedavg+bogus"], "fedavg+bogus", "unknown variant 'bogus'"),
    (["fedavg+"], "fedavg+", "empty method or variant name"),
    ([""], "", "empty method or variant name"),
    (["fedavg+fedvc+fedvc"], "fedavg+fedvc+fedvc", "a variant is repeated"),
    (["fedavg+fedir+fedprox"], "fedavg+fedir+fedprox",
     "fedir and fedprox both replace the client work"),
    (["fedavg+fedir+fedvc", "fedavg+fedvc+fedir"], "fedavg+fedvc+fedir",
     "the same method as 'fedavg+fedir+fedvc'"),
])
def test_bad_method_lists_name_the_flag_and_the_part(names, part, reason):
  with pytest.raises(ConfigError) as e:
    method_names.parse_methods(names)
  message = str(e.value)
  assert message.startswith(f"--methods={','.join(names)}: {part!r}: ")
  assert reason in message and "\n" not in message
  assert e.value.field == "methods"


def test_expand_with_methods_is_exactly_the_list():
  cfg = config_lib.from_values({
      "methods": ["fedavgm+fedvc", "fedavg+fedvc+fedir"],
      "client_learning_rate": 0.01, "virtual_client_size": 16})
  got = cfg.methods.expand()
  assert [(m.algorithm, m.variants) for m in got] == [
      ("fedavgm", ("fedvc",)), ("fedavg", ("fedir", "fedvc"))]
  assert [m.name for m in got] == ["fedavgm+fedvc", "fedavg+fedir+fedvc"]
  assert {(m.client_learning_rate, m.virtual_client_size) for m in got} == {
      (0.01, 16)}


def test_shorthands_give_the_same_methods_as_their_list():
  short = config_lib.from_values({"algorithm": ["fedavg", "fedavgm"],
                                  "fedir": True, "fedvc": True})
  names = [m.name for m in short.methods.expand()]
  assert names == ["fedavg", "fedavg+fedir", "fedavg+fedvc",
                   "fedavg+fedir+fedvc", "fedavgm", "fedavgm+fedir",
                   "fedavgm+fedvc", "fedavgm+fedir+fedvc"]
  listed = config_lib.from_values({"methods": names})
  assert listed.methods.expand() == short.methods.expand()


@pytest.mark.parametrize("flags", [
    {"methods": ["fedavg"], "include_plain": False},
    {"methods": ["fedavg"], "algorithm": ["fedavgm"]},
    {"methods": ["fedavg"], "fedir": True},
    {"methods": ["fedavg"], "fedprox": True},
    {"methods": ["fedavg"], "fedvc": True},
])
def test_methods_with_a_shorthand_set_is_an_error(flags):
  other = next(k for k in flags if k != "methods")
  with pytest.raises(ConfigError, match=f"^--methods and --{other}: give only "
                     "one"):
    config_lib.from_values(flags)


@pytest.mark.parametrize("argv, other", [
    (["--methods=fedavg", "--algorithm=fedavg,fedavgm"], "algorithm"),
    (["--methods=fedavgm+fedvc", "--nofedir"], "fedir"),
    (["--methods=fedavgm", "--include_plain"], "include_plain"),
])
def test_methods_with_a_shorthand_on_the_command_line_is_an_error(
    parse, argv, other):
  # Even at the shorthand's default value: one of the two would be ignored.
  with pytest.raises(ConfigError, match=f"^--methods and --{other}: "):
    config_lib.from_flags(parse(*argv))


def test_methods_from_flags_and_its_errors(parse):
  cfg = config_lib.from_flags(parse("--methods=fedavg+fedvc,fedavgm"))
  assert cfg.methods.methods == ("fedavg+fedvc", "fedavgm")
  assert config_lib.flat(cfg)["methods"] == ["fedavg+fedvc", "fedavgm"]
  with pytest.raises(ConfigError, match=r"^--methods=fedavg,fedvgm: 'fedvgm': "
                     "unknown algorithm"):
    config_lib.from_flags(parse("--methods=fedavg,fedvgm"))
  with pytest.raises(ConfigError, match="^--methods: give at least one"):
    config_lib.from_flags(parse("--methods="))


def test_mixing_runs_each_listed_method_once_per_strategy():
  flags = {"methods": ("fedavgm", "fedavg+fedir"),
           "mixing": ("none", "oracle")}
  assert spec.expected_methods(flags) == (
      "fedavgm+none", "fedavgm+oracle", "fedavg+fedir+none",
      "fedavg+fedir+oracle")


@pytest.mark.parametrize("flags", [
    {"methods": ("fedavgm+fedvc+fedir", "fedavg+fedvc")},
    {"methods": ("fedsgd", "fedavg+fedprox+fedvc")},
    {"algorithm": ("fedavgm",), "fedir": True, "fedvc": True,
     "include_plain": False},
])
def test_expected_methods_equals_train_mains_names(flags):
  cfg = config_lib.from_values(flags)
  assert spec.expected_methods(flags) == tuple(
      m.name for m in cfg.methods.expand())


def test_train_main_trains_exactly_the_listed_methods(parse, tmp_path):
  from experiments import train_main  # pylint: disable=g-import-not-at-top
  parse("--methods=fedavgm+fedvc,fedavg+fedvc+fedir", "--num_clients=4",
        "--clients_per_round=2", "--client_batch_size=8",
        "--virtual_client_size=16", "--total_rounds=2", "--rounds_per_eval=1",
        "--centralized_epochs=0", "--seed=1", f"--root_output_dir={tmp_path}",
        "--experiment_name=listed")
  train_main.main(["train_main"])
  summary = json.loads((tmp_path / "listed" / "summary.json").read_text())
  # (summary.json's keys are sorted; the training order is expand()'s.)
  assert sorted(summary["methods"]) == ["fedavg+fedir+fedvc", "fedavgm+fedvc"]
  for name, m in summary["methods"].items():
    assert m["rounds"] == 2
    settings = m["settings"]
    assert (settings["data_side"], settings["N_VC"]) == ("fedvc", 16)
    assert settings["name"] == name
  assert summary["methods"]["fedavg+fedir+fedvc"]["settings"][
      "client_work"] == "fedir"
  assert summary["methods"]["fedavgm+fedvc"]["settings"][
      "server_momentum"] == 0.9
  assert summary["config"]["methods"]["methods"] == ["fedavgm+fedvc",
                                                     "fedavg+fedvc+fedir"]
  assert "algorithm" not in summary["config"]["methods"]  # Had no effect.


_EXTRA_MODULE = '''
from federated_vision import methods

def _halve_batches(config, inputs, spec, sampler):
  """Data side: local batches of half the configured size."""
  return spec._replace(batch_size=spec.batch_size // 2), sampler, {
      "halved": True}

methods.register(methods.DataSide(
    name="halfbatch", build=_halve_batches,
    citation="ours: a test data-side variant"))
'''


def test_a_variant_from_extra_modules_is_reachable_through_methods(
    parse, tmp_path, monkeypatch):
  from experiments import train_main  # pylint: disable=g-import-not-at-top
  (tmp_path / "user_variants_hsu.py").write_text(_EXTRA_MODULE)
  monkeypatch.syspath_prepend(str(tmp_path))
  parse("--extra_modules=user_variants_hsu",
        "--methods=fedavg+halfbatch,fedavg", "--num_clients=4",
        "--clients_per_round=2", "--client_batch_size=8", "--total_rounds=2",
        "--rounds_per_eval=1", "--centralized_epochs=0",
        f"--root_output_dir={tmp_path}", "--experiment_name=extra")
  train_main.main(["train_main"])
  summary = json.loads((tmp_path / "extra" / "summary.json").read_text())
  assert sorted(summary["methods"]) == ["fedavg", "fedavg+halfbatch"]
  half = summary["methods"]["fedavg+halfbatch"]["settings"]
  assert (half["halved"], half["data_side"], half["B"]) == (
      True, "halfbatch", 4)
  assert summary["methods"]["fedavg"]["settings"]["B"] == 8


def test_run_record_keeps_old_records_and_names_a_methods_change(tmp_path):
  from federated_vision.experiment import run_record  # pylint: disable=g-import-not-at-top
  base = config_lib.from_values({"total_rounds": 3})
  settings = run_record.recorded_settings(base)
  assert "methods" not in settings  # Shorthands: recorded as before.
  (tmp_path / ".lock").write_text("")
  (tmp_path / run_record.RECORD_FILE).write_text(json.dumps(
      {"settings": settings, "partition_fingerprint": "f"}))
  assert run_record.check(str(tmp_path), base)["settings"] == settings
  listed = config_lib.replace_fields(base, {"methods": ["fedavg"]})
  assert run_record.recorded_settings(listed)["methods"] == ["fedavg"]
  with pytest.raises(ConfigError) as e:
    run_record.check(str(tmp_path), listed)
  assert e.value.field == "methods"
  assert "--methods=fedavg (recorded unset)" in str(e.value)


def test_the_recorded_config_leaves_out_the_unused_shorthands():
  listed = config_lib.from_values({"methods": ["fedavgm+fedvc"]})
  flat = config_lib.flat(listed)
  assert flat["methods"] == ["fedavgm+fedvc"]
  assert not set(fields_read.method_shorthands()) & set(flat)
  assert "algorithm" not in listed.to_dict()["methods"]
  short = config_lib.flat(config_lib.from_values({"algorithm": ["fedavg"]}))
  assert short["algorithm"] == ["fedavg"] and short["methods"] == []


def test_the_docs_component_table_is_generated_from_the_declarations():
  import importlib.util  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top
  from conftest import REPO  # pylint: disable=g-import-not-at-top
  spec_ = importlib.util.spec_from_file_location(
      "component_table", os.path.join(REPO, "tools", "component_table.py"))
  component_table = importlib.util.module_from_spec(spec_)
  spec_.loader.exec_module(component_table)
  assert component_table.main(["component_table.py", "--check"]) == 0
  for name in ("`fedir`", "`@adam`", "`scaffold`", "`--fedprox_mu`"):
    assert name in component_table.table()
