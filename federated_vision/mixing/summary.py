"""What a run with --mixing adds to its outputs (Augenstein et al.): the
evaluation columns per group and class, the summary.json fields of each
mixing method and the printed table. `exp` is a `runner.Experiment` whose
`scenario` is the task's `MixingScenario`.
"""

import math
from typing import Dict, Tuple


def eval_columns(exp) -> Tuple[str, ...]:
  """Evaluation keys written as `test_<key>` columns with --mixing: accuracy
  per group (`accuracy_<group>`) and per class (`accuracy_class_<c>`)."""
  if exp.scenario is None:
    return ()
  return (tuple(f"accuracy_{g}" for g in exp.scenario.groups)
          + tuple(f"accuracy_class_{c}" for c in range(exp.fed_data.num_classes)))


# Summary names of the mixing scenarios' group accuracies.
GROUP_FIELDS = {"missing": "missing_class_accuracy",
                "present": "present_class_accuracy"}


def method_summary(exp, method, rows) -> Dict[str, object]:
  """summary.json fields of one mixing method, from its last evaluated
  metrics row (so a resumed run reports the numbers it wrote): the extra
  bytes per round, accuracy per group (`accuracy_smiling`,
  `accuracy_unsmiling`, `missing_class_accuracy`, `present_class_accuracy`)
  and per class."""
  evaluated = [r for r in rows if r.get("test_accuracy") not in (None, "")]
  last = evaluated[-1] if evaluated else {}
  value = lambda key: float(last[key]) if last.get(key) not in (None, "") \
      else math.nan
  out = {"mixing": method.settings["mixing"],
         "extra_broadcast_bytes_per_round": method.extra_broadcast_bytes}
  for g in exp.scenario.groups:
    out[GROUP_FIELDS.get(g, f"accuracy_{g}")] = value(f"test_accuracy_{g}")
  out["accuracy_per_class"] = [value(f"test_accuracy_class_{c}")
                               for c in range(exp.fed_data.num_classes)]
  return out




def format_table(exp, summary: dict) -> str:
  """One row per mixing method: accuracy per group, overall, extra bytes."""
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  fields = [GROUP_FIELDS.get(g, f"accuracy_{g}") for g in exp.scenario.groups]
  rows = [[name] + [m.get(f) for f in fields]
          + [m.get("final_accuracy"), m.get("extra_broadcast_bytes_per_round")]
          for name, m in summary["methods"].items()]
  notes = {f: "no evaluation yet, or no test example of that group"
           for f in fields + ["accuracy"]}
  return reporting.format_table(
      ["method"] + fields + ["accuracy", "extra_bytes/round"], rows, notes)
