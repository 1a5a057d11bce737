"""The Shakespeare tasks: flags refused with one line naming the flag, the
recorded partition, each source through the task, FedIR refused."""

import os
import types

import pytest

from federated_vision import tasks
from federated_vision.errors import ConfigError
from federated_vision.experiment import config as config_lib
from federated_vision.algorithms import fedir
from federated_vision.tasks import presence

from shakespeare_fixture import COMPLETE_WORKS, write_tff_sqlite


def _refused(values, flag, match):
  given = [k for k in values if k != "dataset"]
  with pytest.raises(ConfigError, match=match) as e:
    config_lib.checked({"dataset": "shakespeare", **values},
                       given=given + ["dataset"])
  assert e.value.field == flag and "\n" not in str(e.value)


def test_flags_the_task_does_not_read_are_refused():
  _refused({"partition": "iid"}, "partition", "--shakespeare_split=iid")
  _refused({"shakespeare_source": "complete_works"}, "shakespeare_text",
           "required by --shakespeare_source=complete_works")
  _refused({"shakespeare_text": "/x.txt"}, "shakespeare_text",
           "not used by --shakespeare_source=plays")
  _refused({"shakespeare_source": "tff_sqlite",
            "shakespeare_plays": ("hamlet",)}, "shakespeare_plays",
           "not grouped by play")
  _refused({"num_clients": 10}, "num_clients", "not used by")
  with pytest.raises(ConfigError, match="shakespeare_cache_dir"):
    config_lib.checked({"dataset": "synthetic_shakespeare",
                        "shakespeare_cache_dir": "/x"},
                       given=["dataset", "shakespeare_cache_dir"])


def test_recorded_partition_is_the_split():
  for split in ("role", "iid"):
    config, resolved = config_lib.checked(
        {"dataset": "synthetic_shakespeare", "shakespeare_split": split,
         "clients_per_round": 2})
    assert resolved.recorded()["partition"] == split
    assert resolved.recorded()["model"] == "char_lstm"


def test_missing_archive_names_the_fetch_command(tmp_path):
  data = tasks.DataConfig.of(dataset="shakespeare",
                             shakespeare_cache_dir=str(tmp_path))
  missing = presence.missing_data(data)
  assert missing.flags == ("shakespeare_cache_dir",)
  assert "python -m federated_vision.data.fetch_shakespeare --cache_dir=" \
      f"{tmp_path}" in missing.message
  assert not os.listdir(tmp_path)


def _build(tmp_path, **values):
  data = tasks.DataConfig.of(dataset="shakespeare", **values)
  task = tasks.get_task("shakespeare")
  return task.build_data(data, tasks.DataContext(0, str(tmp_path),
                                                 str(tmp_path)))


def test_complete_works_and_tff_sqlite_through_the_task(tmp_path):
  text = tmp_path / "pg100.txt"
  text.write_text(COMPLETE_WORKS)
  fed = _build(tmp_path, shakespeare_source="complete_works",
               shakespeare_text=str(text))
  assert fed.client_data.client_ids == [
      "THE_COMEDY_OF_ERRORS:DUKE", "THE_TRAGEDY_OF_TESTING:BER",
      "THE_TRAGEDY_OF_TESTING:FRAN"]
  # Each role's first lines (AEGEON has one line: no client).
  train = ("Proceed, Solinus,", "Who's there?",
           "Nay, answer me. Stand and unfold yourself.",
           "For this relief much thanks. 'Tis bitter cold,",
           "And I am sick at heart.")
  assert fed.info["train_characters"] == sum(len(l) for l in train)
  assert fed.info["test_characters"] == len("to procure my fall.") + len(
      "Long live the King!") + len("I think I hear them.")
  assert fed.info["partition"] == "role" and fed.info["sha256"]
  write_tff_sqlite(str(tmp_path), {"A": ["x y", "z"], "B": ["w"]},
                   {"A": ["v"], "B": ["u"]})
  fed = _build(tmp_path, shakespeare_source="tff_sqlite",
               shakespeare_cache_dir=str(tmp_path), shakespeare_split="iid")
  assert fed.client_data.client_ids == ["A", "B"]
  assert sorted(fed.client_sizes.values()) == [1, 2]  # 3 lines dealt.
  with pytest.raises(ConfigError, match="unknown play 'lear'") as e:
    _build(tmp_path, shakespeare_source="complete_works",
           shakespeare_text=str(text), shakespeare_plays=("lear",))
  assert e.value.field == "shakespeare_plays"


def test_fedir_refuses_per_position_labels():
  def model_fn():
    raise AssertionError("not built")
  model_fn.sequence_labels = True
  inputs = types.SimpleNamespace(model_fn=model_fn, test_labels_fn=None,
                                 num_classes=256)
  with pytest.raises(ConfigError, match="a label per position") as e:
    fedir._objective(types.SimpleNamespace(fedir_target="uniform"), inputs)  # pylint: disable=protected-access
  assert e.value.field == "fedir"


def test_synthetic_twin_reads_k_and_n(tmp_path):
  task = tasks.get_task("synthetic_shakespeare")
  context = tasks.DataContext(0, str(tmp_path), str(tmp_path))
  fed = task.build_data(tasks.DataConfig.of(
      dataset="synthetic_shakespeare", num_clients=5, examples_per_client=4),
                        context)
  assert len(fed.client_data.client_ids) == 5
  # 4 to 6 lines a role, the last ceil(20%) of them test lines.
  assert fed.info["train_lines"] == sum(n - -(-n // 5) for n in
                                        (4, 5, 6, 4, 5))
  with pytest.raises(ConfigError, match="--examples_per_client") as e:
    task.build_data(tasks.DataConfig.of(dataset="synthetic_shakespeare",
                                        examples_per_client=1), context)
  assert "\n" not in str(e.value)
