"""Dedup's decision, out of core: keys parquet files → one decision per row, in DuckDB and numpy.

1. Survivor order: every row gets `ord`, its place in (target-native first, repo id, config, split, row
   index, id), DuckDB's sort spilling to disk past `memory_limit`.
2. Length filter, then exact duplicates: rows of one normalized-prompt hash form a group whose first row
   (by `ord`) is its representative; the others are `exact` duplicates of it.
3. Near duplicates among representatives: rows sharing an LSH band key are candidate pairs (a GROUP BY
   over the bands, out of core); each pair is confirmed on the whole MinHash signature (Jaccard estimate
   >= threshold), in batches streamed out of DuckDB; confirmed pairs are joined into clusters by
   union-find, and a cluster's first row (by `ord`) survives. Every other member is `near`, with the
   survivor as `duplicate_of` and its measured similarity to that survivor; its exact copies follow it.
4. The decisions are written by DuckDB straight to parquet in survivor order.

What memory this takes is DuckDB's `memory_limit`, one streamed batch of pairs, and the union-find
arrays over rows that have a confirmed near duplicate (16 bytes each), never the corpus.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from pipeline.dedup.minhash import similarity

# Buckets bigger than this (thousands of rows sharing a band: templated prompts) are linked as a star on
# their first row plus a chain of neighbours, not all n^2/2 pairs: union-find needs connectivity only.
FULL_BUCKET = 64
PAIR_BATCH = 65_536


@dataclass(frozen=True)
class DecideSettings:
    threshold: float
    min_prompt_tokens: int
    max_prompt_tokens: int
    n_bands: int
    num_perm: int
    memory_limit_mb: int = 1_024
    threads: int = 1


def connect(work: Path, settings: DecideSettings) -> duckdb.DuckDBPyConnection:
    work.mkdir(parents=True, exist_ok=True)
    db = work / "dedup.duckdb"
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    con.execute(f"SET memory_limit = '{int(settings.memory_limit_mb)}MB'")
    con.execute(f"SET threads = {int(settings.threads)}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET temp_directory = ?", [str(work / "spill")])
    return con


def load(con: duckdb.DuckDBPyConnection, keys_glob: str, s: DecideSettings) -> None:
    bands = ", ".join(f"band_{j}" for j in range(s.n_bands))
    con.execute(
        f"""
        CREATE TABLE r AS
        SELECT key, record_id, repo_id, config, split, row_index, category, mode, prompt_hash, tokens, empty,
               CASE WHEN tokens < {int(s.min_prompt_tokens)} THEN 'too_short'
                    WHEN tokens > {int(s.max_prompt_tokens)} THEN 'too_long' END AS length_reason,
               row_number() OVER (ORDER BY mode <> 'native', repo_id, config, split, row_index, record_id) - 1
                   AS ord
        FROM read_parquet(?)
        """,
        [keys_glob],
    )
    con.execute(
        "CREATE TABLE g AS SELECT ord, min(ord) OVER (PARTITION BY prompt_hash) AS rep FROM r "
        "WHERE length_reason IS NULL"
    )
    # Band keys of the representatives only (an exact copy adds no new candidate).
    con.execute(
        f"""
        CREATE TABLE b AS
        SELECT ord, band, bkey FROM (
            SELECT r.ord, {bands} FROM read_parquet(?) k JOIN r USING (key) JOIN g USING (ord)
            WHERE g.rep = g.ord AND NOT r.empty
        ) UNPIVOT (bkey FOR band IN ({bands}))
        """,
        [keys_glob],
    )
    con.execute("CREATE TABLE multi AS SELECT band, bkey FROM b GROUP BY band, bkey HAVING count(*) > 1")
    con.execute(
        """
        CREATE TABLE m AS
        SELECT b.band, b.bkey, b.ord,
               row_number() OVER (PARTITION BY b.band, b.bkey ORDER BY b.ord) AS rn,
               count(*) OVER (PARTITION BY b.band, b.bkey) AS size
        FROM b SEMI JOIN multi USING (band, bkey)
        """
    )
    con.execute(
        f"""
        CREATE TABLE pairs AS
        SELECT DISTINCT x.ord AS a, y.ord AS b FROM m x JOIN m y
          ON x.band = y.band AND x.bkey = y.bkey AND x.rn < y.rn
         AND (y.size <= {FULL_BUCKET} OR x.rn = 1 OR x.rn = y.rn - 1)
        """
    )
    con.execute("CREATE TABLE need AS SELECT a AS ord FROM pairs UNION SELECT b FROM pairs")
    con.execute(
        "CREATE TABLE s AS SELECT r.ord, k.sig FROM read_parquet(?) k JOIN r USING (key) SEMI JOIN need USING (ord)",
        [keys_glob],
    )
    for table in ("b", "multi", "m"):
        con.execute(f"DROP TABLE {table}")


def _pair_batches(con: duckdb.DuckDBPyConnection, pairs: str, num_perm: int) -> Iterator[tuple[np.ndarray, ...]]:
    """(a, b, similarity) for the pairs of table `pairs`, a batch at a time."""
    reader = con.sql(
        f"SELECT p.a, p.b, sa.sig AS sa, sb.sig AS sb FROM {pairs} p "
        "JOIN s sa ON sa.ord = p.a JOIN s sb ON sb.ord = p.b"
    ).to_arrow_reader(PAIR_BATCH)
    for batch in reader:
        a = batch.column("a").to_numpy()
        b = batch.column("b").to_numpy()
        left, right = (_sig_matrix(batch.column(c), num_perm) for c in ("sa", "sb"))
        yield a, b, similarity(left, right)


def _sig_matrix(column: pa.Array, num_perm: int) -> np.ndarray:
    fixed = column.cast(pa.binary(num_perm * 4)) if column.type != pa.binary(num_perm * 4) else column
    data = np.frombuffer(fixed.buffers()[1], dtype=np.uint32)
    start = fixed.offset * num_perm
    return data[start : start + len(fixed) * num_perm].reshape(len(fixed), num_perm)


def clusters(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union-find over the edges (a, b): (node, root) with root = the smallest node of its cluster.

    Vectorised as min-label propagation with pointer jumping: each round every edge pulls both ends
    to the smaller label, then labels follow their own label; at the fixed point each cluster carries
    one label, and it is its smallest node (the survivor), because labels only ever move down."""
    nodes, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    ea, eb = inverse[: len(a)], inverse[len(a) :]
    label = np.arange(len(nodes))
    while True:
        low = np.minimum(label[ea], label[eb])
        new = label.copy()
        np.minimum.at(new, ea, low)
        np.minimum.at(new, eb, low)
        new = new[new]
        if np.array_equal(new, label):
            return nodes, nodes[label]
        label = new


def near_duplicates(con: duckdb.DuckDBPyConnection, s: DecideSettings) -> int:
    """Fill table `near` (ord, survivor, sim) with every near-dropped representative; returns how many."""
    edges_a: list[np.ndarray] = []
    edges_b: list[np.ndarray] = []
    for a, b, sim in _pair_batches(con, "pairs", s.num_perm):
        keep = sim >= s.threshold
        edges_a.append(a[keep])
        edges_b.append(b[keep])
    a = np.concatenate(edges_a) if edges_a else np.empty(0, np.int64)
    b = np.concatenate(edges_b) if edges_b else np.empty(0, np.int64)
    nodes, roots = clusters(a, b)
    dropped = nodes != roots
    con.register("dropped_arrow", pa.table({"a": roots[dropped], "b": nodes[dropped]}))
    con.execute("CREATE TABLE dropped AS SELECT * FROM dropped_arrow")
    con.unregister("dropped_arrow")
    rows: list[pa.Table] = [
        pa.table({"ord": nb, "survivor": na, "sim": sim}) for na, nb, sim in _pair_batches(con, "dropped", s.num_perm)
    ]
    table = (
        pa.concat_tables(rows)
        if rows
        else pa.table(
            {"ord": pa.array([], pa.int64()), "survivor": pa.array([], pa.int64()), "sim": pa.array([], pa.float64())}
        )
    )
    con.register("near_arrow", table)
    con.execute("CREATE TABLE near AS SELECT * FROM near_arrow")
    con.unregister("near_arrow")
    return len(table)


def write_decisions(con: duckdb.DuckDBPyConnection, target: Path, run_id: str, length_unit: str) -> None:
    """Every row's decision, in survivor order, as parquet (the DECISIONS schema of dedup/run.py)."""
    con.execute(
        """
        COPY (
          SELECT x.record_id, x.repo_id, x.row_index, x.prompt_hash, x.reason = 'kept' AS kept,
                 d.record_id AS duplicate_of, x.reason, x.similarity, ?::VARCHAR AS stage_run_id, x.category, x.mode,
                 x.tokens AS prompt_tokens, ?::VARCHAR AS length_unit
          FROM (
            SELECT r.*,
                   CASE WHEN r.length_reason IS NOT NULL THEN r.length_reason
                        WHEN n.ord IS NOT NULL THEN 'near'
                        WHEN g.rep <> r.ord THEN 'exact' ELSE 'kept' END AS reason,
                   CASE WHEN r.length_reason IS NOT NULL THEN NULL
                        WHEN n.ord IS NOT NULL THEN n.survivor
                        WHEN g.rep <> r.ord THEN g.rep END AS dup_ord,
                   CASE WHEN r.length_reason IS NOT NULL THEN NULL
                        WHEN n.ord IS NOT NULL THEN n.sim
                        WHEN g.rep <> r.ord THEN 1.0 END AS similarity
            FROM r LEFT JOIN g USING (ord) LEFT JOIN near n ON n.ord = g.rep
          ) x LEFT JOIN r d ON d.ord = x.dup_ord
          ORDER BY x.ord
        ) TO ? (FORMAT parquet, COMPRESSION zstd)
        """,
        [run_id, length_unit, str(target)],
    )
