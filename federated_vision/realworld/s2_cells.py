"""Adaptive S2 partitioning of geotagged examples (iNaturalist-Geo splits).

Hsu, Qi & Brown 2020 (Federated Visual Classification with Real-World Data
Distribution, ECCV) build the iNaturalist-Geo-k splits by adaptively
partitioning the sphere with S2 cells: start from the six level-0 face cells
and recursively split any cell holding more than N_max examples into its four
children; every remaining cell with at least N_min examples is one client, whose
id is the cell's S2 token.

Implementation: every point's leaf (level-30) cell id is computed once with
s2sphere and kept as a sorted uint64 array. A cell at level L with id c (lowest
set bit lsb = 4**(30-L)) covers exactly the leaf ids in [c - lsb + 1,
c + lsb - 1], so its example count is two `np.searchsorted` calls; children are
c - lsb + lsb/4 * (2k + 1), k = 0..3. The loop runs over cells, never over
points, so all six N_max values for 579k points take seconds.
"""

from typing import Dict, List, NamedTuple, Sequence, Tuple

import numpy as np
import s2sphere

MAX_LEVEL = 30
_FACE_SHIFT = 61


def leaf_cell_ids(lat_deg: Sequence[float], lon_deg: Sequence[float]) -> np.ndarray:
  """Leaf (level-30) S2 cell ids of points given in degrees, as uint64.

  Args:
    lat_deg: latitudes in [-90, 90].
    lon_deg: longitudes in [-180, 180].

  Returns:
    uint64 array of the same length.

  Raises:
    ValueError: if the arrays differ in length or hold non-finite /
      out-of-range coordinates.
  """
  lat = np.asarray(lat_deg, dtype=np.float64)
  lon = np.asarray(lon_deg, dtype=np.float64)
  if lat.shape != lon.shape or lat.ndim != 1:
    raise ValueError(f"lat_deg and lon_deg must be 1-D of equal length, got "
                     f"{lat.shape} and {lon.shape}")
  if not (np.all(np.isfinite(lat)) and np.all(np.isfinite(lon))):
    raise ValueError("lat_deg/lon_deg contain NaN or inf")
  if lat.size and (np.abs(lat).max() > 90 or np.abs(lon).max() > 180):
    raise ValueError("lat_deg must be in [-90, 90] and lon_deg in [-180, 180]")
  from_lat_lng = s2sphere.CellId.from_lat_lng
  from_degrees = s2sphere.LatLng.from_degrees
  out = np.fromiter((from_lat_lng(from_degrees(a, b)).id()
                     for a, b in zip(lat.tolist(), lon.tolist())),
                    dtype=np.uint64, count=lat.size)
  return out


def _lsb(level: int) -> int:
  return 1 << (2 * (MAX_LEVEL - level))


def face_cell_ids() -> List[int]:
  """Ids of the six level-0 face cells, in Hilbert (id) order."""
  return [(face << _FACE_SHIFT) + _lsb(0) for face in range(6)]


def cell_level(cell_id: int) -> int:
  """Level of a valid cell id (30 for leaves, 0 for faces)."""
  cell_id = int(cell_id)
  lsb = cell_id & -cell_id
  return MAX_LEVEL - (lsb.bit_length() - 1) // 2


def cell_range(cell_id: int) -> Tuple[int, int]:
  """[range_min, range_max] of the leaf ids a cell contains (inclusive)."""
  cell_id = int(cell_id)
  lsb = cell_id & -cell_id
  return cell_id - lsb + 1, cell_id + lsb - 1


def children(cell_id: int) -> List[int]:
  """The four child cell ids, in Hilbert order."""
  cell_id = int(cell_id)
  lsb = cell_id & -cell_id
  if lsb == 1:
    raise ValueError(f"cell {cell_id} is a leaf and has no children")
  child_lsb = lsb >> 2
  first = cell_id - lsb + child_lsb
  return [first + 2 * child_lsb * k for k in range(4)]


def token(cell_id: int) -> str:
  """S2 token (hex id without trailing zeros), as s2sphere.CellId.to_token."""
  return s2sphere.CellId(int(cell_id)).to_token()


def cell_id_from_token(tok: str) -> int:
  """Inverse of `token`; raises ValueError for an invalid token."""
  if not tok or len(tok) > 16 or any(c not in "0123456789abcdef" for c in tok):
    raise ValueError(f"not an S2 token: {tok!r}")
  cell_id = int(tok.ljust(16, "0"), 16)
  if cell_id == 0 or not s2sphere.CellId(cell_id).is_valid():
    raise ValueError(f"not a valid S2 cell token: {tok!r}")
  return cell_id


class GeoPartition(NamedTuple):
  """Result of `adaptive_partition`.

  Attributes:
    cells: client cell ids (sorted, Hilbert order) with N_min <= count
      (and count <= N_max unless the cell is a leaf, see `oversized`).
    assignment: int64 [num_points]: index into `cells`, or -1 for points in
      dropped cells.
    counts: int64 [len(cells)]: examples per client cell.
    dropped_cells: cell ids with 0 < count < N_min that were dropped.
    num_dropped: examples in dropped cells.
    oversized: leaf cells (level 30, cannot be split) that still hold more
      than N_max examples, i.e. more than N_max examples with identical
      coordinates. Kept as clients and reported; empty on real data for
      N_max >= 100 unless many photos share exact coordinates.
  """
  cells: np.ndarray
  assignment: np.ndarray
  counts: np.ndarray
  dropped_cells: np.ndarray
  num_dropped: int
  oversized: np.ndarray

  @property
  def tokens(self) -> List[str]:
    return [token(c) for c in self.cells]


def adaptive_partition(leaf_ids: np.ndarray, max_examples: int,
                       min_examples: int = 1) -> GeoPartition:
  """Hsu et al. 2020 adaptive S2 partition of points given by leaf cell ids.

  Starting from the six face cells, every cell with more than `max_examples`
  points is replaced by its four children, recursively. Cells with fewer
  than `min_examples` points (including empty ones) are dropped.

  Args:
    leaf_ids: uint64 leaf cell ids (see `leaf_cell_ids`), any order.
    max_examples: N_max >= 1.
    min_examples: N_min >= 1, <= N_max.

  Returns:
    A `GeoPartition`; deterministic (no randomness involved).

  Raises:
    ValueError: naming the argument that is out of range.
  """
  if int(max_examples) < 1:
    raise ValueError(f"max_examples must be >= 1, got {max_examples}")
  if not 1 <= int(min_examples) <= int(max_examples):
    raise ValueError(f"min_examples must be in [1, max_examples={max_examples}]"
                     f", got {min_examples}")
  leaf_ids = np.asarray(leaf_ids, dtype=np.uint64)
  order = np.argsort(leaf_ids, kind="stable")
  sorted_ids = leaf_ids[order]

  def count(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return (np.searchsorted(sorted_ids, hi, side="right") -
            np.searchsorted(sorted_ids, lo, side="left")).astype(np.int64)

  final: List[int] = []
  final_counts: List[int] = []
  oversized: List[int] = []
  frontier = np.array(face_cell_ids(), dtype=np.uint64)
  level = 0
  one = np.uint64(1)
  while frontier.size:
    lsb = np.uint64(_lsb(level))
    lo, hi = frontier - lsb + one, frontier + (lsb - one)
    n = count(lo, hi)
    nonempty = n > 0
    frontier, lo, n = frontier[nonempty], lo[nonempty], n[nonempty]
    split = n > max_examples
    if level == MAX_LEVEL:
      oversized.extend(frontier[split].tolist())
      split = np.zeros_like(split)
    final.extend(frontier[~split].tolist())
    final_counts.extend(n[~split].tolist())
    if not split.any():
      break
    child_lsb = np.uint64(_lsb(level + 1))
    first = lo[split] - one + child_lsb
    frontier = (first[:, None] +
                np.uint64(2) * child_lsb * np.arange(4, dtype=np.uint64)[None, :]
                ).ravel()
    level += 1
  cells = np.array(final, dtype=np.uint64)
  counts = np.array(final_counts, dtype=np.int64)
  srt = np.argsort(cells)
  cells, counts = cells[srt], counts[srt]
  keep = counts >= min_examples
  dropped = cells[~keep]
  num_dropped = int(counts[~keep].sum())
  cells, counts = cells[keep], counts[keep]
  # Assign points: cells are disjoint ranges sorted by id, so the candidate
  # cell of a leaf id is the last cell whose range_min <= id.
  lsbs = cells & (~cells + one)
  range_min = cells - lsbs + one
  range_max = cells + (lsbs - one)
  assignment = np.full(leaf_ids.size, -1, dtype=np.int64)
  if cells.size:
    cand = np.searchsorted(range_min, leaf_ids, side="right") - 1
    ok = cand >= 0
    cand_c = np.where(ok, cand, 0)
    ok &= leaf_ids <= range_max[cand_c]
    assignment[ok] = cand[ok]
  return GeoPartition(cells=cells, assignment=assignment, counts=counts,
                      dropped_cells=dropped, num_dropped=num_dropped,
                      oversized=np.array(sorted(oversized), dtype=np.uint64))
