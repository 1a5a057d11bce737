"""Adaptive S2 partition (Hsu, Qi & Brown 2020 iNaturalist-Geo) exact values."""

import numpy as np
import pytest
import s2sphere

from federated_vision.realworld import s2_cells


def _leaf(lat, lon):
  return s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(lat, lon))


def test_leaf_ids_match_s2sphere():
  lat = np.array([0.0, 45.5, -33.9, 89.9, -89.9, 12.3])
  lon = np.array([0.0, -122.6, 151.2, 10.0, -170.0, 179.99])
  ids = s2_cells.leaf_cell_ids(lat, lon)
  assert ids.dtype == np.uint64
  assert ids.tolist() == [_leaf(a, b).id() for a, b in zip(lat, lon)]


def test_cell_arithmetic_matches_s2sphere():
  c = _leaf(37.77, -122.42).parent(7)
  assert s2_cells.cell_level(c.id()) == 7
  assert s2_cells.children(c.id()) == [x.id() for x in c.children()]
  assert s2_cells.cell_range(c.id()) == (c.range_min().id(), c.range_max().id())
  assert s2_cells.face_cell_ids() == [
      s2sphere.CellId.from_face_pos_level(f, 0, 0).id() for f in range(6)]
  assert s2_cells.token(c.id()) == c.to_token()
  assert s2_cells.cell_id_from_token(c.to_token()) == c.id()
  with pytest.raises(ValueError, match="token"):
    s2_cells.cell_id_from_token("zz")


def test_faces_exact():
  # Face 0 is around (0, 0), face 1 around (0, 90), face 2 the north pole.
  lat = [1.0, -1.0, 1.0, 0.0, 89.0]
  lon = [1.0, -1.0, -1.0, 90.0, 0.0]
  part = s2_cells.adaptive_partition(s2_cells.leaf_cell_ids(lat, lon), 3)
  assert part.tokens == ["1", "3", "5"]
  assert part.counts.tolist() == [3, 1, 1]
  assert part.assignment.tolist() == [0, 0, 0, 1, 2]
  part = s2_cells.adaptive_partition(s2_cells.leaf_cell_ids(lat, lon), 3,
                                     min_examples=2)
  assert part.tokens == ["1"]
  assert part.assignment.tolist() == [0, 0, 0, -1, -1]
  assert part.num_dropped == 2 and len(part.dropped_cells) == 2
  # N_max = 2 splits face 0 into children; the 3 points straddle the centre.
  part = s2_cells.adaptive_partition(s2_cells.leaf_cell_ids(lat, lon), 2)
  assert all(s2_cells.cell_level(c) == 1 for c in part.cells[:3])
  assert part.counts.tolist() == [1, 1, 1, 1, 1]


@pytest.mark.parametrize("n_max,n_min", [(50, 1), (10, 3), (1, 1)])
def test_partition_is_the_minimal_adaptive_split(n_max, n_min):
  rng = np.random.default_rng(0)
  lat = np.concatenate([rng.normal(48.8, 0.5, 150), rng.normal(-33.9, 3, 60),
                        rng.uniform(-80, 80, 40)])
  lon = np.concatenate([rng.normal(2.3, 0.5, 150), rng.normal(151, 3, 60),
                        rng.uniform(-179, 179, 40)])
  leaves = s2_cells.leaf_cell_ids(lat, lon)
  part = s2_cells.adaptive_partition(leaves, n_max, n_min)
  leaf_cells = [s2sphere.CellId(int(x)) for x in leaves]

  def count(cell):
    return sum(cell.contains(l) for l in leaf_cells)

  assert np.all(part.counts <= n_max) and np.all(part.counts >= n_min)
  assert part.oversized.size == 0
  for k, c in enumerate(part.cells.tolist()):
    cell = s2sphere.CellId(c)
    assert count(cell) == part.counts[k]
    if cell.level() > 0:  # The parent had to be split.
      assert count(cell.parent()) > n_max
  # Every point is in exactly one kept cell, or in a dropped (< n_min) cell.
  for i, l in enumerate(leaf_cells):
    hits = [k for k, c in enumerate(part.cells.tolist())
            if s2sphere.CellId(c).contains(l)]
    assert hits == ([part.assignment[i]] if part.assignment[i] >= 0 else [])
  assert (part.assignment >= 0).sum() + part.num_dropped == len(lat)
  for c in part.dropped_cells.tolist():
    assert 0 < count(s2sphere.CellId(c)) < n_min


def test_identical_coordinates_are_reported_oversized():
  leaves = s2_cells.leaf_cell_ids([10.0] * 5, [20.0] * 5)
  part = s2_cells.adaptive_partition(leaves, 2)
  assert part.oversized.tolist() == [_leaf(10.0, 20.0).id()]
  assert part.counts.tolist() == [5]


def test_bad_arguments():
  with pytest.raises(ValueError, match="max_examples"):
    s2_cells.adaptive_partition(np.zeros(0, np.uint64), 0)
  with pytest.raises(ValueError, match="min_examples"):
    s2_cells.adaptive_partition(np.zeros(0, np.uint64), 5, min_examples=6)
  with pytest.raises(ValueError, match="lat_deg"):
    s2_cells.leaf_cell_ids([91.0], [0.0])
