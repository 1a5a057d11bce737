"""Every snippet of docs/extending.md runs as written (issue 27, acceptance
6): its modules (```python blocks starting `# file: <name>`) are written to
a temporary directory, its commands (```sh blocks) run there with
`python` the environment's, and what each run recorded is checked."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

DOC = os.path.join(REPO, "docs", "extending.md")


def _blocks(kind: str):
  text = open(DOC, encoding="utf-8").read()
  return re.findall(rf"```{kind}\n(.*?)```", text, flags=re.S)


def test_the_page_has_its_sections():
  text = open(DOC, encoding="utf-8").read()
  for heading in ("A FedAdam run", "clipped-delta client variant",
                  "SCAFFOLD", "Your method in the paper's table"):
    assert heading in text
  assert len(_blocks("sh")) >= 3 and len(_blocks("python")) >= 1


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
  work = tmp_path_factory.mktemp("extending_docs")
  for block in _blocks("python"):
    first = block.splitlines()[0]
    assert first.startswith("# file: "), first
    (work / first[len("# file: "):].strip()).write_text(block)
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, str(work)]),
             PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                   os.environ.get("PATH", "")]))
  procs = []
  for command in _blocks("sh"):
    procs.append(subprocess.run(["bash", "-c", command.replace(
        ".venv/bin/python -m", f"{sys.executable} -m").replace(
            "PYTHONPATH=. ", "")], cwd=work, env=env,
                                capture_output=True, text=True, timeout=900,
                                check=False))
  return work, procs


def _summary(work, name):
  return json.loads((work / "output" / name / "summary.json").read_text())


def test_every_command_runs(ran):
  _, procs = ran
  for proc in procs:
    assert proc.returncode == 0, (proc.args, proc.stderr[-3000:])


def test_fedadam_runs_beside_fedavgm_with_its_own_learning_rate(ran):
  work, _ = ran
  methods = _summary(work, "fedadam")["methods"]
  assert set(methods) == {"fedavgm", "fedavg@adam:server_learning_rate=0.03"}
  adam = methods["fedavg@adam:server_learning_rate=0.03"]["settings"]
  assert (adam["server_optimizer"], adam["server_learning_rate"],
          adam["adam_tau"]) == ("adam", 0.03, 0.01)
  assert methods["fedavgm"]["settings"]["server_learning_rate"] == 1.0
  assert methods["fedavgm"]["settings"]["server_optimizer"] == "sgdm"


def test_the_clipped_variant_records_its_own_flag(ran):
  work, _ = ran
  summary = _summary(work, "clipped")
  clipped = summary["methods"]["fedavg+clipped"]["settings"]
  assert (clipped["client_work"], clipped["delta_clip"]) == ("clipped", 0.5)
  assert summary["config"]["methods"]["delta_clip"] == 0.5
  assert summary["methods"]["fedavg+clipped"]["rounds"] == 2


def test_scaffold_keeps_its_client_states(ran):
  work, _ = ran
  summary = _summary(work, "scaffold")
  assert summary["methods"]["scaffold"]["settings"]["client_state"] == (
      "control_variate")
  assert (work / "output" / "scaffold" / "scaffold" / "client_states").is_dir()


def test_table3_gains_the_new_method_with_the_compared_runs_settings(ran):
  _, procs = ran
  plan = procs[-1].stdout
  method = "fedavg+fedvc@adam:server_learning_rate=0.01"
  compared = "inat_user_120k_fedavg_c10_fedvc_fedir_off_on_r5000"
  assert f"federated {compared}+{method}:" in plan
  listing = plan.split(f"federated {compared}+{method}:")[1].split(
      "  federated ")[0]
  # Its own settings beside the base: the compared run's, its method alone.
  for setting in ("--total_rounds=5000", "--virtual_client_size=256",
                  "--rounds_per_eval=250", f"--methods={method}"):
    assert setting in listing, listing
