"""Compaction of a Lance index: ``LanceCompaction``, a mixin of ``LanceIndex`` (mode ``"w"``).

``compact``, the end of every run that wrote: past the bound below (``_needs_rewrite``) the
postings merged into one batch (``_merge_postings``, also what a schema upgrade uses), the
indexes into one segment each and the fragments into as few as Lance makes, without their
deleted rows; always the scalar (and ANN) indexes brought up to date and the older versions
removed with their files (``_cleanup``). Uses what ``LanceIndex`` sets up (``self.path``,
``self._ds``, ``self._settings_ds``, ``self._touched``, ``self._upgrade_to``), the writer's
``_require_writer``, ``_record_first``, ``_commit`` and ``_reopen`` (``lance_write.py``) and
the reader's ``has_index`` (``lance.py``).
"""

from __future__ import annotations

import contextlib
import datetime
from typing import Any

from ragsift.index.lance_rows import rows_table

# Versions ``compact`` keeps: the newest only. An older one (a reader's snapshot) is removed
# with the files no newer version uses; a reader holding it moves to the newest at its next
# read (``lance_damage.damage_as_error``). Measured (bench/RESULTS.md, "Lance stays compact"): with
# the old one-hour window fifteen one-page runs took a docs folder to 8x its fresh size;
# keeping the newest only, 1.0x.
KEEP_VERSIONS = datetime.timedelta(0)
# ``compact`` rewrites the data (fragments merged, deleted rows dropped, postings as one
# batch) once there are more fragments than this, or more than COMPACT_DELETED of the rows are
# deleted or written since the last rewrite (``_needs_rewrite``); between rewrites a run
# adds one fragment (its changed documents) and a deletion file. So a run's cost follows its change, not the index, and the garbage stays below about
# COMPACT_DELETED of the data plus one run's change (bench/RESULTS.md, "Lance stays compact").
COMPACT_FRAGMENTS = 8
COMPACT_DELETED = 0.2  # also the share of rows written since the last rewrite
LANCE_FRAGMENT_ROWS = 1024 * 1024  # compact_files' target_rows_per_fragment (its default)
MERGE_ALL_SEGMENTS = 1 << 20  # optimize_indices' num_indices_to_merge: every segment
# From this many chunks ``compact`` adds B-tree indexes on ``rowid`` (chunk records by id) and
# ``content_hash`` (vector reuse), so neither lookup scans the table.
SCALAR_INDEX_MIN_ROWS = 10_000


class LanceCompaction:
    """The compaction methods of ``LanceIndex``; not used on its own."""

    def compact(self) -> int:
        """The end of every run that wrote: when ``_needs_rewrite`` (more than
        ``COMPACT_FRAGMENTS`` fragments, or more than ``COMPACT_DELETED`` of the rows deleted
        or written since the last rewrite), the postings merged into one batch
        (``_merge_postings``), the indexes into one segment each and the fragments into as
        few as Lance makes, without their deleted rows; always: the scalar (and ANN) indexes
        brought up to date and the versions older than ``KEEP_VERSIONS`` removed with their
        files (``_cleanup``). Returns the fragments removed."""
        self._require_writer()
        if self._upgrade_to is not None:  # a run that wrote nothing still upgrades the schema
            self._record_first()
        if self._touched:
            self._commit([])
        if self._ds is None:
            self._cleanup()
            return 0
        from ragsift.index.lance_lexical import LancePostings

        before = len(self._ds.get_fragments())
        postings = LancePostings.load(self._ds)
        if self._needs_rewrite(postings):
            self._merge_postings(postings)  # first: the batches it replaces are not
            # rewritten by compaction, which drops their deleted rows
            self._merge_index_segments()
            if len(self._ds.get_fragments()) > 1 or self._deleted_share() > 0:
                self._ds.optimize.compact_files(materialize_deletions_threshold=0.0)
                self._reopen()
        elif postings.extra:  # chunks without stored postings (an upgraded index)
            self._merge_postings(postings)
        n = self._ds.count_rows("kind = 'chunk'")
        if n:
            if n >= SCALAR_INDEX_MIN_ROWS:  # lookups by id, by text hash and of a query's
                # postings stop scanning
                for column in ("rowid", "content_hash", "lex_term"):
                    if not self.has_index(column):
                        self._ds.create_scalar_index(column, index_type="BTREE")
                        self._reopen()
            if self._ds.describe_indices():
                self._ds.optimize.optimize_indices()
                self._reopen()
            from ragsift.index import ann

            ann.maintain(self)
            self._reopen()
        self._cleanup()
        return max(0, before - len(self._ds.get_fragments()))

    def _merge_index_segments(self) -> None:
        """Before a rewrite: every index brought up to date as ONE segment (the rows written
        since in, the per-run segments ``optimize_indices`` adds merged). Lance merges
        fragments only within one segment and never an indexed with an unindexed one, so
        without this an indexed dataset's fragments never merged and every run left a segment
        more (measured: the folder at 3.2x its size after 20 one-document runs of a 1,800-row
        index with IVF-PQ; tests/test_compaction.py)."""
        if self._ds.describe_indices():
            self._ds.optimize.optimize_indices(num_indices_to_merge=MERGE_ALL_SEGMENTS)
            self._reopen()

    def _deleted_share(self) -> float:
        """The share of the stored rows that are deleted (kept until a rewrite)."""
        rows = deleted = 0
        for frag in self._ds.get_fragments():
            rows += frag.metadata.num_rows + frag.metadata.num_deletions  # num_rows: live
            deleted += frag.metadata.num_deletions
        return deleted / rows if rows else 0.0

    def _unmerged_share(self) -> float:
        """The share of the rows in fragments smaller than the largest (or than Lance's
        fragment size, ``LANCE_FRAGMENT_ROWS``): written since the last rewrite, each with
        its own postings batch (whose terms repeat the others')."""
        sizes = [f.metadata.num_rows + f.metadata.num_deletions for f in self._ds.get_fragments()]
        if len(sizes) < 2:
            return 0.0
        full = min(max(sizes), LANCE_FRAGMENT_ROWS)
        return sum(n for n in sizes if n < full) / sum(sizes)

    def _needs_rewrite(self, postings: Any) -> bool:
        """Whether ``compact`` rewrites the data: the bound on what runs leave behind (the
        schedule, bench/RESULTS.md "Lance stays compact"). Deleted rows are counted twice
        over: as rows, and as the chunks the stored postings still name (the postings rows of
        a replaced document stay live rows until the rewrite, and are most of its bytes); and
        rows written since the last rewrite (a fresh build's several commits are merged at
        its end: measured 14.0 MB unmerged, 10.0 MB merged on a 24-page site)."""
        return (
            len(self._ds.get_fragments()) > COMPACT_FRAGMENTS
            or self._deleted_share() > COMPACT_DELETED
            or postings.dead_share() > COMPACT_DELETED
            or self._unmerged_share() > COMPACT_DELETED
        )

    def _cleanup(self) -> None:
        """Remove the versions older than ``KEEP_VERSIONS`` (all but the newest) of both
        datasets with the files only they use. In a folder, where this writer holds the lock,
        also the files no version uses (a killed run's, a refused Ray run's fragments:
        ``delete_unverified``); on object storage (no lock: another writer's files may be in
        flight) Lance removes those once a week old."""
        from ragsift.index.locations import is_remote

        local = not is_remote(self.path)
        for ds in (self._ds, self._settings_ds):
            if ds is None:
                continue
            with contextlib.suppress(Exception):  # a failed cleanup leaves files, never harm
                ds.cleanup_old_versions(
                    older_than=KEEP_VERSIONS,
                    delete_unverified=local,
                    error_if_tagged_old_versions=False,
                )

    def _merge_postings(self, postings: Any = None) -> None:
        """Rewrite the postings (``lance_lexical``) as one batch without deleted chunks, and
        write those of chunks that have none (an upgraded index), in ONE commit; nothing when
        they are already so. ``postings``: this version's, when the caller loaded them."""
        from ragsift.index.lance_lexical import LancePostings

        if postings is None:
            postings = LancePostings.load(self._ds)
        if postings.complete():
            return
        if not postings.rows:  # no chunk left: no postings either
            self._ds.delete("kind = 'lex'")
        else:
            rows = postings.merged_rows()
            dim = int(self._ds.schema.field("vector").type.list_size)
            (
                self._ds.merge_insert("uid")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete("kind = 'lex'")
                .execute(rows_table(rows, [None] * len(rows), dim))
            )
        self._reopen()
