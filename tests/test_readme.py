"""Every Python snippet of the README's "Library API" section runs."""

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO


def _library_api_snippets():
  with open(os.path.join(REPO, "README.md")) as f:
    text = f.read()
  section = text.split("## Library API", 1)[1].split("\n## ", 1)[0]
  return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.timeout(1200)  # Its snippets' subprocess may take 600 s.
def test_library_api_snippets_run(tmp_path):
  snippets = _library_api_snippets()
  assert len(snippets) == 4
  code = "\n".join(snippets).replace("/tmp/fv", str(tmp_path))
  code += ("\nassert m.name == 'fedavgm+fedprox+fedvc'"
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
  script = tmp_path / "snippets.py"
  script.write_text(code)
  proc = subprocess.run([sys.executable, str(script)], cwd=REPO,
                        capture_output=True, text=True, timeout=600,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                                 MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
                                     [REPO, os.environ.get("PYTHONPATH", "")])),
                        stdin=subprocess.DEVNULL, check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert (tmp_path / "tiny" / "summary.json").is_file()
