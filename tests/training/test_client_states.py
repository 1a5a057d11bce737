"""training/client_states.py: versions by round, rollback to a checkpoint's
round, garbage collection, atomic writes, the size formula."""

import errno
import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from federated_vision.training import client_states
from run_checks import damage_state_file, run_file_bytes
from federated_vision.training.run_errors import CheckpointError
from federated_vision.training.run_errors import OutputWriteError

SHAPES = [(2, 3), (3,)]
P = 9
# Round -> clients written (b skips round 2, "u/1 x" needs quoting).
WRITES = {1: ["a", "b"], 2: ["a", "u/1 x"], 3: ["u/1 x"], 4: ["b", "a"]}
ROUNDS = list(WRITES)


def _value(client, round_num):
  """A distinct value per (client, round)."""
  base = float(sum(map(ord, client)) + 1000 * round_num)
  return [np.full(SHAPES[0], base, np.float32),
          np.arange(3, dtype=np.float32) + base]


def _store(directory, version=0):
  store = client_states.ClientStateStore(SHAPES)
  store.open(str(directory), version)
  return store


def _written(directory, rounds=WRITES):
  store = _store(directory)
  for r, clients in rounds.items():
    store.write(r, {c: _value(c, r) for c in clients})
  return store


def _as_of(client, version):
  """The value a client holds after round `version` (zeros: none)."""
  rounds = [r for r, cs in WRITES.items() if r <= version and client in cs]
  if not rounds:
    return [np.zeros(s, np.float32) for s in SHAPES]
  return _value(client, max(rounds))


def _assert_values(store, version):
  for client in ("a", "b", "u/1 x", "never"):
    for got, want in zip(store.read(client), _as_of(client, version)):
      np.testing.assert_array_equal(got, want, err_msg=client)


def test_values_are_versioned_by_round(tmp_path):
  store = _written(tmp_path / "s")
  _assert_values(store, 4)
  assert store.rounds() == [1, 2, 3, 4]
  assert store.files() == {"a": [1, 2, 4], "b": [1, 4], "u/1 x": [2, 3]}
  assert store.clients_seen() == 3
  assert [x.shape for x in store.read("never")] == SHAPES
  # Reopened (a resumed run): the same values from disk.
  _assert_values(_store(tmp_path / "s", 4), 4)
  with pytest.raises(ValueError, match="not after round 4"):
    store.write(4, {})
  with pytest.raises(ValueError, match="shapes"):
    store.write(5, {"a": [np.zeros((3, 2), np.float32), np.zeros(3)]})


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_open_rolls_back_to_the_checkpoint_round(tmp_path, version):
  _written(tmp_path / "s")
  os.mkdir(tmp_path / "s" / "round_5.tmp")  # A round being written when killed.
  log = []
  store = client_states.ClientStateStore(SHAPES)
  store.open(str(tmp_path / "s"), version, log.append)
  assert store.rounds() == list(range(1, version + 1))
  assert sorted(os.listdir(tmp_path / "s")) == [
      f"round_{r}" for r in range(1, version + 1)]
  assert log == [f"removed {tmp_path / 's' / 'round_5.tmp'}, an unfinished "
                 "round of client states"]
  _assert_values(store, version)
  # Rounds after the checkpoint are written again, as a resumed run does.
  store.write(version + 1, {"b": _value("b", 99)})
  np.testing.assert_array_equal(store.read("b")[1], _value("b", 99)[1])


def test_missing_round_is_one_line_naming_it(tmp_path):
  _written(tmp_path / "run" / "s")
  shutil.rmtree(tmp_path / "run" / "s" / "round_3")
  with pytest.raises(CheckpointError) as e:
    _store(tmp_path / "run" / "s", 4)
  assert str(e.value) == (f"{tmp_path / 'run' / 's'} lacks the client states "
                          "of round 3, which the checkpoint of round 4 needs; "
                          f"delete {tmp_path / 'run'} to start over")
  _assert_values(_store(tmp_path / "run" / "s", 2), 2)


def test_needed_rounds_are_those_a_retained_version_reads():
  assert client_states.needed([1, 3, 5], [2, 10]) == [1, 5]
  assert client_states.needed([1, 3, 5], [3]) == [3]
  assert client_states.needed([1, 3, 5], [4, 5]) == [3, 5]
  assert client_states.needed([2], [1]) == []
  assert client_states.needed([], [4]) == []


def test_commit_collects_garbage_and_keeps_each_retained_version(tmp_path):
  store = _written(tmp_path / "s")
  store.commit([2, 4])  # The loop after saving round 4, keeping 2 and 4.
  assert store.files() == {"a": [2, 4], "b": [1, 4], "u/1 x": [2, 3]}
  assert not os.path.exists(tmp_path / "s" / "round_1" / "a.npy")
  # Every round's directory stays (a version is checkable).
  assert sorted(os.listdir(tmp_path / "s")) == [f"round_{r}" for r in ROUNDS]
  _assert_values(store, 4)
  # --resume_from_last_valid: round 4's checkpoint unreadable, back to 2.
  _assert_values(_store(tmp_path / "s", 2), 2)
  store = _written(tmp_path / "t")
  store.commit([4])
  assert store.files() == {"a": [4], "b": [4], "u/1 x": [3]}
  assert store.clients_seen() == 3
  _assert_values(store, 4)


def test_write_failure_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
  store = _written(tmp_path / "s")
  calls = []

  def full_disk(path, value):
    calls.append(path)
    if len(calls) == 2:
      raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    with open(path, "wb") as f:
      np.lib.format.write_array(f, value)
  monkeypatch.setattr(client_states.np, "save", full_disk)
  with pytest.raises(OutputWriteError) as e:
    store.write(5, {"a": _value("a", 5), "b": _value("b", 5)})
  assert str(e.value) == (
      f"cannot write the client states of round 5 to {tmp_path / 's'}: No "
      "space left on device; no partial round was kept")
  assert len(str(e.value).splitlines()) == 1 and e.value.exit_code == 1
  assert sorted(os.listdir(tmp_path / "s")) == [f"round_{r}" for r in ROUNDS]
  assert store.rounds() == [1, 2, 3, 4]
  _assert_values(store, 4)
  monkeypatch.undo()
  store.write(5, {"a": _value("a", 5)})  # The disk has room again.
  np.testing.assert_array_equal(store.read("a")[0], _value("a", 5)[0])


def test_unreadable_value_is_one_line(tmp_path):
  store = _written(tmp_path / "s")
  path = tmp_path / "s" / "round_4" / "b.npy"
  np.save(path, np.zeros(P + 1, np.float32))  # Another model's size.
  with pytest.raises(CheckpointError) as e:
    store.read("b")
  assert str(e.value).startswith(f"client state {path} cannot be read (")
  assert len(str(e.value).splitlines()) == 1


def test_size_formula_is_the_newest_versions_payload(tmp_path):
  assert client_states.projected_bytes(9_275, 1500, 10, 2_400_000) == (
      9_275 * 2_400_000 * 4)  # 89.04 GB: min(K, R C) = K.
  assert client_states.projected_bytes(9_275, 30, 10, 100, copies=2) == (
      300 * 2 * 100 * 4)
  with pytest.raises(ValueError):
    client_states.projected_bytes(-1, 1, 1, 1)
  # 3 clients, 2 per round, 2 rounds: min(3, 4) = 3 seen after GC of the
  # one version kept; on disk each file has a 128-byte .npy header.
  store = _store(tmp_path / "s")
  store.write(1, {"a": _value("a", 1), "b": _value("b", 1)})
  store.write(2, {"b": _value("b", 2), "u/1 x": _value("u/1 x", 2)})
  store.commit([2])
  # The values (.npy); beside them each round's record of its clients.
  files = [os.path.join(d, f) for d, _, names in os.walk(tmp_path / "s")
           for f in names]
  sizes = [os.path.getsize(f) for f in files if f.endswith(".npy")]
  assert sorted(os.path.relpath(f, tmp_path / "s") for f in files
                if not f.endswith(".npy")) == [
                    f"round_{r}/{client_states.RECORD}" for r in (1, 2)]
  assert len(sizes) == store.clients_seen() == 3
  assert sum(sizes) == client_states.projected_bytes(3, 2, 2, P) + 3 * 128


# --- integrity: every file a version reads is checked ------------------------

# Version 3 of WRITES reads a's file of round 2, b's of round 1 and u/1 x's
# of round 3 (file names are the quoted client ids).
READ_AT_3 = {"a.npy": 2, "b.npy": 1, "u%2F1%20x.npy": 3}


@pytest.mark.parametrize("how, problem", [
    ("deleted", "missing; round {r}'s clients.json lists it"),
    ("cut short", "does not match its sha256 in clients.json (cut short, "
                  "edited or damaged)"),
    ("one float changed", "does not match its sha256 in clients.json (cut "
                          "short, edited or damaged)")])
def test_a_lost_or_altered_file_of_the_version_is_one_line(tmp_path, how,
                                                           problem):
  _written(tmp_path / "written" / "s")
  for name, r in READ_AT_3.items():
    run = tmp_path / name / "run"
    shutil.copytree(tmp_path / "written", run)
    path = run / "s" / f"round_{r}" / name
    damage_state_file(path, how)
    before = run_file_bytes(run)
    for call in (lambda s: s.check(str(run / "s"), 3),
                 lambda s: s.open(str(run / "s"), 3)):
      with pytest.raises(CheckpointError) as e:
        call(client_states.ClientStateStore(SHAPES))
      assert str(e.value) == (f"client state {path} cannot be read "
                              f"({problem.format(r=r)}); delete {run} to "
                              "start over")
      assert e.value.exit_code == 1
      assert run_file_bytes(run) == before  # Round 4 not removed, nothing written.
  # A file no version up to 3 reads (a's round 1: superseded by round 2) is
  # not read; the values as of 3 are intact.
  run = tmp_path / "superseded"
  shutil.copytree(tmp_path / "written", run)
  damage_state_file(run / "s" / "round_1" / "a.npy", how)
  _assert_values(_store(run / "s", 3), 3)


@pytest.mark.parametrize("damage, problem", [
    ("deleted", "missing"),
    ("a client left out", "does not match its sha256 checksum (edited, or "
                          "damaged)"),
    ("cut short", "not valid JSON (")])
def test_a_lost_or_altered_round_record_is_one_line(tmp_path, damage,
                                                    problem):
  _written(tmp_path / "run" / "s")
  record = tmp_path / "run" / "s" / "round_2" / client_states.RECORD
  if damage == "deleted":
    record.unlink()
  elif damage == "cut short":
    record.write_bytes(record.read_bytes()[:-9])
  else:  # Its client list edited: no file of "a" in round 2 any more.
    value = json.loads(record.read_text())
    del value["clients"]["a"]
    record.write_text(json.dumps(value))
  with pytest.raises(CheckpointError) as e:
    _store(tmp_path / "run" / "s", 4)
  assert str(e.value).startswith(f"{record}: {problem}")
  assert str(e.value).endswith(f"; delete {tmp_path / 'run'} to start over")
  assert len(str(e.value).splitlines()) == 1
  # Version 1 reads no round-2 record.
  _assert_values(_store(tmp_path / "run" / "s", 1), 1)


def test_each_round_records_its_clients_and_their_checksums(tmp_path):
  store = _written(tmp_path / "s")
  for r, clients in WRITES.items():
    record = json.loads((tmp_path / "s" / f"round_{r}" /
                         client_states.RECORD).read_text())
    assert record["round"] == r and sorted(record["clients"]) == sorted(
        clients)
    for client in clients:
      path = tmp_path / "s" / f"round_{r}" / (
          client.replace("/", "%2F").replace(" ", "%20") + ".npy")
      assert record["clients"][client] == hashlib.sha256(
          path.read_bytes()).hexdigest()
  store.commit([4])  # Files go; records stay: what each round wrote.
  assert all((tmp_path / "s" / f"round_{r}" / client_states.RECORD).is_file()
             for r in ROUNDS)
  _assert_values(_store(tmp_path / "s", 4), 4)
