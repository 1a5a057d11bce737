"""`ClientStateStore`: per-client values kept across rounds, on disk, by round.

An algorithm whose clients are stateful keeps a value per client from one
round to the next: SCAFFOLD's control variate c_i (Karimireddy et al. 2020,
Algorithm 1, line 2 "client i's input: c_i"; Section 3: "SCAFFOLD clients
are stateful and retain the value of c_i across multiple rounds"). Each
round reads the values of the C clients sampled and writes their new ones.
The store keeps them under the run's directory, in `DIRECTORY`:

  round_<r>/<client id>.npy   a client's value after round r: one flat
                              float32 vector of P numbers (`np.save`)
  round_<r>/clients.json      the round's record (`RECORD`): which clients
                              it wrote and the sha256 of each file, sealed
                              (`run_files.seal`); written after the files
  round_<r>.tmp/              round r while it is written (never read)

Versions. A client's value *as of round r* is its file in the latest round
<= r whose record lists it; a client no record lists (never seen, or whose
every round was dropped) is zeros. Round r is written whole or not at all
(files and record in `round_<r>.tmp/`, then one rename), and a round's
directory and record stay even when garbage collection empties it, so
version r exists iff `round_1` ... `round_<r>` do. Three calls keep the
store in step with the loop's checkpoints (`training_loop`):
  * `open(directory, version)` at start, after the checkpoint of round
    `version` (0: none) is loaded: removes unfinished rounds and every
    round after `version` (written by a run killed before its next
    checkpoint), so the values are exactly those as of that checkpoint,
    including the older one `--resume_from_last_valid` falls back to.
  * `write(round_num, values)` in every round.
  * `commit(retained)` after a checkpoint is saved: deletes each file that
    no retained checkpoint's version reads (garbage collection).
`check(directory, version)` is `open`'s reading half: it changes nothing
(the loop checks every method's files before a rerun writes anything).

Integrity (ours: a lost or altered value must stop the run, never be
trained on as zeros or as another number). Opening version v reads every
record of rounds <= v and every file version v reads (each client's in the
latest round listing it): a missing round, record or file, or a file that
does not match its recorded sha256 (cut short, edited, damaged) is one
`CheckpointError` line naming it (exit 1). `read` checks the file again.
A resume thus reads the newest version's files once (the store's size at
disk speed). Rounds written before records existed have none and are
refused the same way: the run starts over.

Cost. P model-sized float32 numbers per client seen: the newest version
holds min(K, R x C) clients (`projected_bytes`), plus, until the next
checkpoint, the superseded files the older retained checkpoint still reads
(at most C x the rounds since it). Each file has a 128-byte header; each
round a record of ~100 bytes per client it wrote. Memory holds only an
index (the rounds each client wrote, and their checksums); values are read
for the round's C clients only. 9,275 iNaturalist-User-120k clients (Hsu,
Qi & Brown 2020, Section 4.1) x a 2.4 M-weight model is 89 GB: it lives on
disk, grows only with clients seen, and `--estimate` prints it before a run.
"""

import hashlib
import io
import json
import os
import shutil
import urllib.parse
from typing import (Callable, Dict, List, Mapping, NamedTuple, Optional,
                    Sequence, Tuple)

import numpy as np

from federated_vision.training import run_files
from federated_vision.training.run_errors import CheckpointError
from federated_vision.training.run_errors import OutputWriteError
from federated_vision.training.run_errors import RunFileError
from federated_vision.training.run_errors import describe_error

DIRECTORY = "client_states"
RECORD = "clients.json"  # A round's record: its clients and their sha256.
_ROUND = "round_"
_TEMP = ".tmp"
_SUFFIX = ".npy"
BYTES_PER_NUMBER = 4  # float32


def projected_bytes(num_clients: int, rounds: int, clients_per_round: int,
                    num_weights: int, copies: int = 1) -> int:
  """The newest version's values: min(K, R x C) clients seen x `copies` x P
  weights x 4 bytes (headers and files an older checkpoint still reads
  aside; see the module docstring).

  Args:
    num_clients: K, the population.
    rounds: R, rounds run.
    clients_per_round: C.
    num_weights: P, the model's trainable weights.
    copies: model-sized values kept per client (SCAFFOLD: 1, c_i).
  """
  for name, value in (("num_clients", num_clients), ("rounds", rounds),
                      ("clients_per_round", clients_per_round),
                      ("num_weights", num_weights), ("copies", copies)):
    if value < 0:
      raise ValueError(f"{name} must be >= 0, got {value}")
  seen = min(num_clients, rounds * clients_per_round)
  return seen * copies * num_weights * BYTES_PER_NUMBER


def _file_name(client_id: str) -> str:
  return urllib.parse.quote(client_id, safe="") + _SUFFIX


def _client_of(file_name: str) -> str:
  return urllib.parse.unquote(file_name[:-len(_SUFFIX)])


def needed(rounds: Sequence[int], retained: Sequence[int]) -> List[int]:
  """Which of one client's written rounds some retained version reads: round
  s is read by version v iff s <= v < the client's next written round."""
  rounds = sorted(rounds)
  nexts = rounds[1:] + [None]
  return [s for s, n in zip(rounds, nexts)
          if any(s <= v and (n is None or v < n) for v in retained)]


class ClientStateStore:
  """Per-client float32 values of fixed shapes, versioned by round.

  Args:
    shapes: the shapes of one client's value (e.g. the model's trainable
      weights); stored as one flat vector of their total size P.
  """

  def __init__(self, shapes: Sequence[Tuple[int, ...]]):
    self.shapes = [tuple(int(d) for d in s) for s in shapes]
    self.sizes = [int(np.prod(s)) for s in self.shapes]
    self.num_weights = sum(self.sizes)
    self.directory: Optional[str] = None
    self._index: Dict[str, List[int]] = {}  # Client -> rounds with its file.
    self._sha256: Dict[Tuple[str, int], str] = {}  # (client, round) -> file's.
    self._rounds: List[int] = []
    self._checked: Optional[_Checked] = None  # What `check` read.

  # --- the loop's calls ---------------------------------------------------

  def check(self, directory: str, version: int) -> None:
    """Reads and checks version `version` of `directory` (see the module
    docstring, "Integrity"); changes nothing. `open` at the same directory
    and version then uses what it read.

    Raises:
      CheckpointError: a round <= `version`, its record, or a file the
        version reads is missing, or a file does not match its checksum.
    """
    remedy = _remedy(directory)
    try:
      names = os.listdir(directory)
    except FileNotFoundError:
      names = []
    except OSError as e:
      raise CheckpointError(directory, f"{directory} cannot be read "
                            f"({describe_error(e)}); {remedy}") from None
    rounds = sorted(r for r in map(self._round_of, names) if 0 < r <= version)
    missing = sorted(set(range(1, version + 1)) - set(rounds))
    if missing:
      raise CheckpointError(directory, f"{directory} lacks the client states "
                            f"of round {missing[0]}, which the checkpoint of "
                            f"round {version} needs; {remedy}")
    sha256, listed = {}, {}
    for r in rounds:
      for client, digest in _read_record(directory, r).items():
        sha256[(client, r)] = digest
        listed.setdefault(client, []).append(r)
    index = {}
    for client, written in listed.items():
      index[client] = [r for r in written if os.path.exists(
          os.path.join(_round_path(directory, r), _file_name(client)))]
      # The file this version reads: checked whole (present, its sha256).
      _load(directory, client, written[-1], sha256, self.num_weights)
    self._checked = _Checked(directory, version, index, sha256, rounds)

  def open(self, directory: str, version: int,
           log_fn: Optional[Callable[[str], None]] = None) -> None:
    """Opens `directory` at `version` (the loaded checkpoint's round; 0: none).

    Raises:
      CheckpointError: as `check` (before anything is removed).
      OutputWriteError: the directory cannot be created or cleaned.
    """
    log = log_fn or (lambda _: None)
    checked = self._checked
    if checked is None or (checked.directory, checked.version) != (
        directory, version):
      self.check(directory, version)
      checked = self._checked
    self._checked = None
    try:
      os.makedirs(directory, exist_ok=True)
      for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.endswith(_TEMP):
          shutil.rmtree(path)
          log(f"removed {path}, an unfinished round of client states")
        elif self._round_of(name) > version:
          shutil.rmtree(path)
    except OSError as e:
      raise OutputWriteError(directory, f"cannot prepare the client states in "
                             f"{directory}: {describe_error(e)}") from None
    self.directory = directory
    self._index, self._sha256 = checked.index, checked.sha256
    self._rounds = list(checked.rounds)

  def write(self, round_num: int,
            values: Mapping[str, Sequence[np.ndarray]]) -> None:
    """Writes round `round_num`'s new values (all or nothing): each file,
    then the round's record of their checksums, then one rename.

    Args:
      round_num: after the newest round written.
      values: client id -> its new value (arrays of `shapes`); clients not
        in it keep theirs.

    Raises:
      ValueError: `round_num` not after the newest round, or a value of the
        wrong shapes.
      OutputWriteError: the round cannot be written (e.g. no space left);
        nothing of it is kept.
    """
    self._check_open()
    if self._rounds and round_num <= self._rounds[-1]:
      raise ValueError(f"round {round_num} is not after round "
                       f"{self._rounds[-1]}, the newest in {self.directory}")
    flat = {c: self._flatten(v) for c, v in values.items()}
    final = self._round_dir(round_num)
    temp = final + _TEMP
    digests = {}
    try:
      if os.path.exists(temp):
        shutil.rmtree(temp)
      os.mkdir(temp)
      for client, vector in flat.items():
        path = os.path.join(temp, _file_name(client))
        np.save(path, vector)
        with open(path, "rb") as f:  # The bytes on disk, as `read` hashes.
          digests[client] = hashlib.sha256(f.read()).hexdigest()
      with open(os.path.join(temp, RECORD), "w", encoding="utf-8") as f:
        json.dump(run_files.seal({"round": round_num, "clients": digests}), f,
                  sort_keys=True)
      os.rename(temp, final)
    except OSError as e:
      shutil.rmtree(temp, ignore_errors=True)
      raise OutputWriteError(
          self.directory, f"cannot write the client states of round "
          f"{round_num} to {self.directory}: {describe_error(e)}; no partial "
          "round was kept") from None
    self._rounds.append(round_num)
    for client, digest in digests.items():
      self._index.setdefault(client, []).append(round_num)
      self._sha256[(client, round_num)] = digest

  def commit(self, retained: Sequence[int]) -> None:
    """Deletes the files no version in `retained` (the rounds of the kept
    checkpoints, after one was saved) reads. A file that cannot be deleted
    stays: every file holds its client's true value after its round."""
    self._check_open()
    for client, rounds in list(self._index.items()):
      keep = needed(rounds, retained)
      for s in set(rounds) - set(keep):
        try:
          os.remove(os.path.join(self._round_dir(s), _file_name(client)))
        except OSError:
          continue
        rounds.remove(s)
      if not rounds:
        del self._index[client]

  # --- values ------------------------------------------------------------

  def read(self, client_id: str) -> List[np.ndarray]:
    """The client's newest value (zeros if no round wrote one), as arrays of
    `shapes`.

    Raises:
      CheckpointError: its file is missing, does not match its checksum or
        cannot be read.
    """
    self._check_open()
    rounds = self._index.get(client_id)
    if not rounds:
      return [np.zeros(s, np.float32) for s in self.shapes]
    vector = _load(self.directory, client_id, rounds[-1], self._sha256,
                   self.num_weights)
    return [p.reshape(s) for p, s in
            zip(np.split(vector, np.cumsum(self.sizes)[:-1]), self.shapes)]

  def clients_seen(self) -> int:
    """Clients with a value in the newest version."""
    return len(self._index)

  def rounds(self) -> List[int]:
    """The rounds written (each a directory, even when emptied)."""
    return list(self._rounds)

  def files(self) -> Dict[str, List[int]]:
    """Client -> the rounds whose file of it is on disk."""
    return {c: list(r) for c, r in self._index.items()}

  # --- helpers -----------------------------------------------------------

  def _check_open(self) -> None:
    if self.directory is None:
      raise RuntimeError("ClientStateStore.open(directory, version) first")

  def _round_dir(self, round_num: int) -> str:
    return _round_path(self.directory, round_num)

  @staticmethod
  def _round_of(name: str) -> int:
    """r of 'round_<r>', -1 for anything else."""
    digits = name[len(_ROUND):]
    return int(digits) if name.startswith(_ROUND) and digits.isdigit() else -1

  def _flatten(self, value: Sequence[np.ndarray]) -> np.ndarray:
    arrays = [np.asarray(a) for a in value]
    shapes = [a.shape for a in arrays]
    if shapes != self.shapes:
      raise ValueError(f"a client value has shapes {shapes}, expected "
                       f"{self.shapes}")
    if not arrays:
      return np.zeros([0], np.float32)
    return np.concatenate([a.astype(np.float32).ravel() for a in arrays])


class _Checked(NamedTuple):
  """What `ClientStateStore.check` read of one directory at one version."""
  directory: str
  version: int
  index: Dict[str, List[int]]
  sha256: Dict[Tuple[str, int], str]
  rounds: List[int]


def _round_path(directory: str, round_num: int) -> str:
  return os.path.join(directory, f"{_ROUND}{round_num}")


def _remedy(directory: str) -> str:
  return f"delete {os.path.dirname(directory)} to start over"


def _read_record(directory: str, round_num: int) -> Dict[str, str]:
  """{client: sha256 of its file} of round `round_num` (`RECORD`), checked.

  Raises:
    CheckpointError: one line naming the record (missing, damaged, not
      matching its own checksum, or not this round's).
  """
  path = os.path.join(_round_path(directory, round_num), RECORD)
  remedy = _remedy(directory)
  try:
    record = run_files.read_json(path, remedy, sealed=True)
    clients = record.get("clients")
    run_files.require(record.get("round") == round_num, path,
                      f"records round {record.get('round')!r}", remedy)
    run_files.require(
        isinstance(clients, dict) and all(
            isinstance(c, str) and isinstance(d, str) and len(d) == 64
            for c, d in clients.items()), path,
        "its 'clients' is not {client: sha256}", remedy)
  except RunFileError as e:
    raise CheckpointError(path, str(e)) from None
  return clients


def _load(directory: str, client: str, round_num: int,
          sha256: Mapping[Tuple[str, int], str],
          num_weights: int) -> np.ndarray:
  """The flat value of `client` written in round `round_num`, checked
  against its recorded sha256, dtype and size.

  Raises:
    CheckpointError: one line naming the file.
  """
  path = os.path.join(_round_path(directory, round_num), _file_name(client))
  try:
    with open(path, "rb") as f:
      data = f.read()
  except FileNotFoundError:
    problem = f"missing; round {round_num}'s {RECORD} lists it"
  except OSError as e:
    problem = describe_error(e)
  else:
    problem = None
    if hashlib.sha256(data).hexdigest() != sha256[(client, round_num)]:
      problem = (f"does not match its sha256 in {RECORD} (cut short, edited "
                 "or damaged)")
    else:
      try:
        vector = np.load(io.BytesIO(data), allow_pickle=False)
      except ValueError as e:
        problem = describe_error(e)
      else:
        if vector.dtype == np.float32 and vector.shape == (num_weights,):
          return vector
        problem = (f"{vector.dtype} {vector.shape}, expected float32 "
                   f"({num_weights},)")
  raise CheckpointError(path, f"client state {path} cannot be read "
                        f"({problem}); {_remedy(directory)}")
