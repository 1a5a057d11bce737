"""TensorBoard HParams records of runs, so a sweep compares in the dashboard.

Each method of a run is one HParams session: its hyper-parameters (the run's
result-affecting flag values -- every config section but output, run control
and execution (`NON_RESULT_SECTIONS`), which change no result -- plus the
method's own, e.g. algorithm, FedIR/FedVC, and the effective learning rate)
and its final metrics (scalars under `hparams/...`
tags), written with TensorBoard's HParams plugin summaries
(`tensorboard.plugins.hparams.api`) into the method's TensorBoard directory
(<run>/<method>/tensorboard, next to its training curves), in an event file
of its own (`SESSION_SUFFIX`) that replaces the previous one: a run extended
(e.g. from 30 to 40 rounds) holds one session with its current values
(total_rounds=40), never the old one beside it. A sweep root gets
one experiment config listing every hyper-parameter and metric, so
`tensorboard --logdir=<root>` shows the whole sweep in the HParams tab.

`read_hparams` reads them back with `tensorboard.backend.event_processing`.
Writing uses TensorBoard's protos and event writer only (the functions behind
`tensorboard.plugins.hparams.api`, without its TensorFlow import); reading
through event_processing imports TensorFlow when it is installed.
"""

import contextlib
import glob
import json
import math
import os
import shutil
import time
from typing import Dict, Mapping, Optional, Sequence

from federated_vision.reproduction import results
from federated_vision.training import run_files

# Final metrics recorded per method (summary.json keys), as scalars
# "hparams/<key>".
METRIC_KEYS = ("final_accuracy", "relative_accuracy", "acc_at_round",
               "acc_at_batch", "rounds_to_target")
METRIC_PREFIX = "hparams/"
SUBDIR = "tensorboard"
# hparams.json "config" sections that change no result: not hyper-parameters.
NON_RESULT_SECTIONS = ("output", "run", "execution")
SESSION_SUFFIX = ".hparams"  # Event files holding a session (one per dir).


def _hparam_value(value):
  """A value the HParams plugin accepts (bool, number, str) or None."""
  if value is None:
    return None
  if isinstance(value, (bool, str)):
    return value
  if isinstance(value, (int, float)):
    return float(value) if math.isfinite(value) else str(value)
  if isinstance(value, (list, tuple)):
    return ",".join(str(v) for v in value)
  return json.dumps(value, sort_keys=True)


def method_hparams(flags: Mapping[str, object], method: str
                   ) -> Dict[str, object]:
  """A method's hyper-parameters: the run's flags (plain values only), with
  each hyper-parameter the method reads at the method's own value (its
  name's `:<field>=<value>` settings over the flags), plus `method`, its
  algorithm, server optimizer, one `method_<variant>` flag per registered
  variant, and eta_eff (the server optimizer's recorded effective learning
  rate, e.g. eta_s / (1 - beta) for momentum; else eta_s). All derived from
  the components' declarations (`federated_vision.methods`)."""
  from federated_vision import config_fields  # pylint: disable=g-import-not-at-top
  from federated_vision import methods  # pylint: disable=g-import-not-at-top
  from federated_vision.methods import method_config  # pylint: disable=g-import-not-at-top
  from federated_vision.methods import names  # pylint: disable=g-import-not-at-top
  out = {}
  for name, value in flags.items():
    v = _hparam_value(value)
    if v is not None and not isinstance(value, dict):
      out[name] = v
  declared = set(config_fields.field_names(config_fields.METHOD))
  shared = config_fields.Options(config_fields.METHOD).replace(
      {k: v for k, v in flags.items() if k in declared})
  config = method_config.from_spec(names.parse(method), shared)
  for component in config.used():
    for field in component.reads + component.option_names():
      # A field given (a flag unset, e.g. --server_learning_rate, whose
      # default is the optimizer's own, is the recorded rate's business).
      if flags.get(field) is not None or field in config.overrides:
        out[field] = _hparam_value(getattr(config, field))
  out.update(method=method, method_algorithm=config.algorithm,
             method_server_optimizer=config.optimizer or "none")
  out.update({f"method_{v}": v in config.variants
              for v in methods.variant_names()})
  if config.optimizer is not None and "server_learning_rate" in out:
    record = methods.get(config.optimizer).record(config)
    out["server_effective_learning_rate"] = float(record.get(
        "effective_server_learning_rate", config.server_learning_rate))
  return out


def _writer(logdir: str, suffix: str = ""):
  # Local: tensorboard takes seconds to import; reproduction stays light.
  from tensorboard.summary.writer import event_file_writer  # pylint: disable=g-import-not-at-top
  os.makedirs(logdir, exist_ok=True)
  return event_file_writer.EventFileWriter(logdir, filename_suffix=suffix)


def _write(writer, summary, step: int = 0) -> None:
  # Local: tensorboard takes seconds to import; reproduction stays light.
  from tensorboard.compat.proto import event_pb2  # pylint: disable=g-import-not-at-top
  writer.add_event(event_pb2.Event(wall_time=time.time(), step=step,
                                   summary=summary))


def write_session(logdir: str, hparams: Mapping[str, object],
                  metrics: Mapping[str, Optional[float]], step: int,
                  status: str = results.FINISHED,
                  trial_id: Optional[str] = None) -> str:
  """Writes one HParams session (hyper-parameters, final metrics, status).

  Args:
    logdir: the session's TensorBoard directory.
    hparams: name -> bool / number / str.
    metrics: summary key -> value; None or non-finite values are skipped.
    step: the step of the metric scalars (the run's last round).
    status: finished / diverged / running: a diverged method's session ends
      with STATUS_FAILURE, a running one has no end.
    trial_id: the session's group name (default: logdir).

  Replaces the session written there before (its `SESSION_SUFFIX` files),
  atomically (`_session_file`).

  Returns:
    logdir.
  """
  with _session_file(logdir) as session_dir:
    _write_session(session_dir, hparams, metrics, step, status, trial_id)
  return logdir


@contextlib.contextmanager
def _session_file(logdir: str):
  """Yields a temporary directory to write one session's event file in,
  then replaces `logdir`'s session by it (old `SESSION_SUFFIX` files out,
  the new one renamed in): never half a session, nor two. A failed write
  (e.g. a full disk: TensorFlow's `ResourceExhaustedError`) is one
  `OutputWriteError` line; the old session is then left as it was."""
  for stale in glob.glob(os.path.join(logdir, ".hparams.tmp*")):
    shutil.rmtree(stale, ignore_errors=True)  # Left by a killed run.
  tmp = os.path.join(logdir, f".hparams.tmp{os.getpid()}")
  try:
    os.makedirs(tmp, exist_ok=True)
    yield tmp
    (new,) = glob.glob(os.path.join(tmp, "*tfevents*" + SESSION_SUFFIX))
    for old in glob.glob(os.path.join(logdir, "*tfevents*" + SESSION_SUFFIX)):
      os.remove(old)
    os.replace(new, os.path.join(logdir, os.path.basename(new)))
  except BaseException as e:
    if run_files.is_write_error(e):
      raise run_files.write_failed(
          logdir, e, f"the HParams session in {logdir}") from None
    raise
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


def _write_session(logdir, hparams, metrics, step, status, trial_id) -> None:
  """`write_session`'s events, into a new event file in `logdir`."""
  # Local: tensorboard takes seconds to import; reproduction stays light.
  from tensorboard.plugins.hparams import api_pb2  # pylint: disable=g-import-not-at-top
  from tensorboard.plugins.hparams import metadata  # pylint: disable=g-import-not-at-top
  from tensorboard.plugins.hparams import summary_v2  # pylint: disable=g-import-not-at-top
  from tensorboard.plugins.scalar import summary_v2 as scalar  # pylint: disable=g-import-not-at-top
  from tensorboard.compat.proto import summary_pb2  # pylint: disable=g-import-not-at-top
  writer = _writer(logdir, SESSION_SUFFIX)
  try:
    _write(writer, summary_v2.hparams_pb(dict(hparams), trial_id=trial_id))
    for key, value in metrics.items():
      if value is not None and math.isfinite(value):
        _write(writer, scalar.scalar_pb(METRIC_PREFIX + key, float(value)),
               step)
    if status != results.RUNNING:
      end = metadata.plugin_data_pb2.SessionEndInfo(
          status=api_pb2.STATUS_SUCCESS if status == results.FINISHED
          else api_pb2.STATUS_FAILURE, end_time_secs=time.time())
      content = metadata.plugin_data_pb2.HParamsPluginData(
          session_end_info=end, version=metadata.PLUGIN_DATA_VERSION)
      meta = metadata.create_summary_metadata(content)
      _write(writer, summary_pb2.Summary(value=[summary_pb2.Summary.Value(
          tag=metadata.SESSION_END_INFO_TAG, metadata=meta,
          tensor=metadata.NULL_TENSOR)]))
  finally:
    writer.close()


def write_experiment(logdir: str, sessions: Sequence[Mapping[str, object]],
                     metric_keys: Sequence[str] = METRIC_KEYS) -> str:
  """The sweep-level HParams config: every hyper-parameter seen, metrics."""
  # Local: tensorboard takes seconds to import; reproduction stays light.
  from tensorboard.plugins.hparams import summary_v2 as hp  # pylint: disable=g-import-not-at-top
  names = sorted({k for s in sessions for k in s})
  hparams = [hp.HParam(n) for n in names]
  metrics = [hp.Metric(METRIC_PREFIX + k, display_name=k) for k in metric_keys]
  # The sweep's config, as now (not beside an older one).
  with _session_file(logdir) as tmp:
    writer = _writer(tmp, SESSION_SUFFIX)
    try:
      _write(writer, hp.hparams_config_pb(hparams=hparams, metrics=metrics))
    finally:
      writer.close()
  return logdir


def result_flags(recorded: Mapping[str, object]) -> Dict[str, object]:
  """The result-affecting flag values of an hparams.json: its "config"
  sections but `NON_RESULT_SECTIONS` (without "config", e.g. written by hand:
  its top-level plain values); a flag left unset (None, e.g. --model) takes
  its "resolved" value (the task's default model) when there is one."""
  config = recorded.get("config")
  if isinstance(config, dict):
    out = {k: v for section, fields in sorted(config.items())
           if section not in NON_RESULT_SECTIONS and isinstance(fields, dict)
           for k, v in fields.items()}
  else:
    out = {k: v for k, v in recorded.items() if not isinstance(v, dict)}
  resolved = recorded.get("resolved")
  for k, v in (resolved if isinstance(resolved, dict) else {}).items():
    if k in out and out[k] is None:
      out[k] = v
  return out


def write_run_hparams(run_dir: str, name: Optional[str] = None,
                      write: bool = True, summary: Optional[Mapping] = None
                      ) -> Dict[str, Dict[str, object]]:
  """HParams sessions for every method of a finished run directory.

  Reads <run_dir>/hparams.json and summary.json (as federated_vision/experiment/runner.py
  writes them; `results.read_record`: checked) and writes
  <run_dir>/<method>/tensorboard/ sessions (with write=False it only
  returns them: `runner.run` already wrote them). `summary`: the run's
  summary (JSON-safe) instead of its file: `runner.run` writes the sessions
  before summary.json, which marks the run finished.

  Returns:
    method -> the hyper-parameters written.

  Raises:
    RunFileError: a damaged hparams.json / summary.json (names the file).
    OutputWriteError: a session could not be written (names it).
  """
  recorded = results.read_record(os.path.join(run_dir, "hparams.json"))
  if summary is None:
    summary = results.read_record(os.path.join(run_dir, "summary.json"))
  flags = result_flags(recorded)
  out = {}
  methods = summary.get("methods")
  for method, entry in (methods if isinstance(methods, dict) else {}).items():
    hp = method_hparams(flags, method)
    out[method] = hp
    if not write:
      continue
    status = results.recorded_status(entry)
    if status == results.MISSING:  # Not run: nothing to record.
      continue
    metrics = {k: entry.get(k) for k in METRIC_KEYS
               if isinstance(entry.get(k), (int, float))}
    write_session(os.path.join(run_dir, method, SUBDIR), hp, metrics,
                  step=int(entry.get("rounds") or 0), status=status,
                  trial_id=f"{name or os.path.basename(run_dir)}/{method}")
  return out


def read_hparams(logdir: str) -> Dict[str, Dict[str, object]]:
  """Every HParams session under `logdir`, read back from the event files.

  Returns:
    TensorBoard run name (path relative to logdir) -> {"hparams": {...},
    "metrics": {key: last value}, "status": "success" | "failure" | None}.
    The sweep config (if any) is under "" -> {"experiment": [hparam names]}.
  """
  # Local: tensorboard takes seconds to import; reproduction stays light.
  from tensorboard.backend.event_processing import plugin_event_multiplexer  # pylint: disable=g-import-not-at-top
  from tensorboard.plugins.hparams import api_pb2  # pylint: disable=g-import-not-at-top
  from tensorboard.plugins.hparams import metadata  # pylint: disable=g-import-not-at-top
  from tensorboard.util import tensor_util  # pylint: disable=g-import-not-at-top
  mux = plugin_event_multiplexer.EventMultiplexer()
  mux.AddRunsFromDirectory(logdir)
  mux.Reload()
  out = {}
  for run, content in mux.PluginRunToTagToContent(metadata.PLUGIN_NAME).items():
    entry = out.setdefault(run, {"hparams": {}, "metrics": {}, "status": None})
    for tag, data in content.items():
      if tag == metadata.EXPERIMENT_TAG:
        exp = metadata.parse_experiment_plugin_data(data)
        entry["experiment"] = [h.name for h in exp.hparam_infos]
      elif tag == metadata.SESSION_START_INFO_TAG:
        start = metadata.parse_session_start_info_plugin_data(data)
        for k, v in start.hparams.items():
          kind = v.WhichOneof("kind")
          entry["hparams"][k] = getattr(v, kind) if kind else None
      elif tag == metadata.SESSION_END_INFO_TAG:
        end = metadata.parse_session_end_info_plugin_data(data)
        entry["status"] = {api_pb2.STATUS_SUCCESS: "success",
                           api_pb2.STATUS_FAILURE: "failure"}.get(end.status)
    accumulator = mux.GetAccumulator(run)
    for tag in accumulator.Tags().get("tensors", []):
      if tag.startswith(METRIC_PREFIX):
        events = accumulator.Tensors(tag)
        entry["metrics"][tag[len(METRIC_PREFIX):]] = float(
            tensor_util.make_ndarray(events[-1].tensor_proto))
  return out


def write_sweep(root: str, run_names: Sequence[str],
                write_sessions: bool = True) -> Dict[str, object]:
  """Sessions for every finished run under `root` plus the sweep config
  (write_sessions=False: only the config; `runner.run` wrote the sessions).

  Runs without a summary.json yet (missing or running) are skipped and
  listed. Returns {"written": [run/method, ...], "skipped": [run, ...]}.
  """
  written, skipped, sessions = [], [], []
  for name in run_names:
    run_dir = os.path.join(root, name)
    if not os.path.isfile(os.path.join(run_dir, "summary.json")):
      skipped.append(name)
      continue
    for method, hp in write_run_hparams(run_dir, name,
                                        write_sessions).items():
      written.append(f"{name}/{method}")
      sessions.append(hp)
  if sessions:
    write_experiment(root, sessions)
  return {"written": written, "skipped": skipped}
