"""The names ``ragsift.api`` hands out from their layers (its lazy table): what the front ends
use besides the door's own calls. Plain data, no imports: ``api.__getattr__`` imports a name's
module on its first use."""

from __future__ import annotations

# What the front ends (cli/, mcp_server/) use besides the calls below, re-exported so that
# ``ragsift.api`` is their one door (tests/test_architecture.py): names of the layers, and the
# door's calls that live in their layer (calibration for an index, the typed-path rule, the
# JSON records). Resolved on first use (``ragsift.api.__getattr__``): ``import ragsift.api`` stays
# light for ``ragsift --help``.
EXPORTS = {
    "DEFAULT_INDEX": "ragsift.index",
    "MODES": "ragsift.retrieval.request",
    "DEFAULT_MODE": "ragsift.retrieval.request",
    "check_mode": "ragsift.retrieval.request",
    "check_globs": "ragsift.retrieval.engine",
    "require_chunks": "ragsift.retrieval.search",  # the empty-index check (``eval``'s too)
    "path_matches": "ragsift.retrieval.engine",
    "SPAN_MODES": "ragsift.retrieval.spans",
    "check_span": "ragsift.retrieval.spans",
    "check_threshold": "ragsift.retrieval.threshold",
    "DEFAULT_THRESHOLDS": "ragsift.retrieval.relevance",  # the measured defaults, per mode
    "SearchRequest": "ragsift.retrieval.request",  # one search's options (``search(request)``)
    "ThresholdInForce": "ragsift.retrieval.threshold",
    "Candidate": "ragsift.retrieval.topk",
    "Retrieval": "ragsift.retrieval.topk",
    "BELOW_THRESHOLD": "ragsift.retrieval.topk",
    "OVER_K": "ragsift.retrieval.topk",
    "OVER_CHAR_BUDGET": "ragsift.retrieval.topk",
    "COMMON_WORDS_ONLY": "ragsift.retrieval.topk",
    "outcome_hint": "ragsift.retrieval.topk",
    "admitting_threshold": "ragsift.retrieval.topk",
    "Attribution": "ragsift.retrieval.attribution",
    "hints": "ragsift.retrieval.hints",
    "nothing_hint": "ragsift.retrieval.hints",
    "path_hint": "ragsift.retrieval.hints",
    "TUNE_NOTE": "ragsift.retrieval.hints",
    "Fusion": "ragsift.retrieval.hybrid",
    "FUSIONS": "ragsift.retrieval.hybrid",
    "NORMS": "ragsift.retrieval.hybrid",
    "spans_of_ranked": "ragsift.retrieval.spans",
    "embed_size": "ragsift.ingest",
    "sized_for_embed": "ragsift.ingest",  # a chunker sized for embed (``eval``'s model tokens)
    "index_model": "ragsift.ingest",  # the model ``embed`` uses when none is given
    "unread_script": "ragsift.embedders",  # a query's script the index's model cannot read
    # chunking files (``ragsift chunk``) and building (``ragsift embed``)
    "FORMATS": "ragsift.sources.formats",
    "parse_size": "ragsift.sources",
    "ChunkSummary": "ragsift.ingest",
    "EmbedProgress": "ragsift.ingest",
    "CountedProgress": "ragsift.ingest",  # its counts, fraction, rate and ETA (embed's bar)
    "EmbedSummary": "ragsift.ingest",
    "BuildRequest": "ragsift.ingest",  # one ``embed`` run as a value (``build(request=...)``)
    # the project file (``ragsift.toml``; ``ragsift init``)
    "find_project": "ragsift.project",
    "Project": "ragsift.project",
    "PROJECT_FILE": "ragsift.project",
    "current_folder": "ragsift.project",  # the cwd, or one line when it was deleted
    "starter": "ragsift.project",
    # tuning (``ragsift tune``)
    "Objective": "ragsift.tuning",
    "load_queries": "ragsift.tuning",
    "save_threshold": "ragsift.tuning",
    "TuneReport": "ragsift.tuning",
    "SweepRow": "ragsift.tuning",
    # calibration for an index (``ragsift calibrate``; ``embed`` calibrates by itself)
    "calibrate": "ragsift.calibration.of_index",
    "calibration_cost": "ragsift.calibration.of_index",
    "calibration_needed": "ragsift.calibration.of_index",
    # a path as a user typed it, as the stored path it names (``ls``, ``rm``, ``--path``)
    "stored_path": "ragsift.retrieval.path_rules",
    # the records every front end hands out (typed, each with its one ``to_json``) and
    # their JSON: the one hit type (``Search.hits``), a search's and an explain's record
    "Hit": "ragsift.retrieval.records",
    "SearchRecord": "ragsift.retrieval.records",
    "ExplainRecord": "ragsift.retrieval.records",
    "document_row": "ragsift.retrieval.records",
    "explain_record": "ragsift.retrieval.records",
    "search_record": "ragsift.retrieval.records",
}
RENAMED = {
    "ATTRIBUTION_NOTE": ("ragsift.retrieval.attribution", "NOTE"),
    # ``ragsift chunk``: the chunker ``embed`` would use with these options, and the chunk
    # records of files (``iter_chunks``: one dict per chunk, as ``chunk`` prints them)
    "embed_chunker": ("ragsift.ingest", "default_embed_chunker"),
    "chunk_files": ("ragsift.ingest", "iter_chunks"),
    # a stored document path as a path to its file from the current folder (``--format grep``)
    "openable_path": ("ragsift.paths", "openable"),
}
