"""``ragsift eval``: score configurations (chunker, embedder, retrieval mode, k) on a labelled set."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ragsift.cli._common import handle_errors, warn, write_jsonl
from ragsift.cli.query import MODES
from ragsift.errors import EXIT_OK, RagsiftError

# the choices of --mode: the engine's mode list (defined once, in ragsift.retrieval.engine)
Mode = Enum("Mode", {m: m for m in MODES}, type=str)  # type: ignore[misc]


EPILOG = """
Examples:

  ragsift eval ../shared/eval/chroma-dev

  ragsift eval ../shared/eval/chroma-dev --span best

  ragsift eval ../shared/eval/chroma-dev --config bench/configs/baseline.toml

  ragsift eval ../shared/eval/chroma-dev --compare bench/configs/baseline.toml bench/configs/rec256-convex50.toml

  ragsift eval ../shared/eval/scifact --split train --mode hybrid --json | jq .overall

Formats: span references (corpora/*.md + questions.csv: recall, precision, IoU in characters,
all corpora in one index) or BEIR (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv: nDCG@10,
Recall@10, Recall@100, MRR@10; a document scores as its best chunk). Embeddings are cached
across runs ($RAGSIFT_CACHE_DIR or $XDG_CACHE_HOME/ragsift), so comparisons embed each chunk once.
"""


def eval_command(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset folder (span references or BEIR layout).")
    ],
    configs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Configuration files (TOML) to compare; see --compare.", show_default=False
        ),
    ] = None,
    config: Annotated[
        list[Path] | None,
        typer.Option("--config", "-c", help="A configuration file (TOML, repeatable)."),
    ] = None,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare", help="Compare the configuration files that follow, side by side."
        ),
    ] = False,
    k: Annotated[
        int | None,
        typer.Option(
            "-k", "--k", min=1, help="Chunks retrieved per query (overrides the configs) [5]."
        ),
    ] = None,
    mode: Annotated[
        Mode | None,
        typer.Option("--mode", help="Retrieval mode for every config: dense, lexical or hybrid."),
    ] = None,
    span: Annotated[
        str | None,
        typer.Option(
            "--span",
            metavar="chunk|best",
            help="Span sets: score whole chunks (chunk) or each hit's evidence span (best).",
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(
            "--split", help="BEIR: the qrels split (default: test, or the only split present)."
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object per configuration on stdout.")
    ] = False,
    thresholds: Annotated[
        bool,
        typer.Option(
            "--thresholds", help="Also show how a relevance-score threshold would act on the top-k."
        ),
    ] = False,
    save: Annotated[
        Path | None,
        typer.Option(
            "--save", metavar="FILE", help="Also write the results as JSON lines to FILE."
        ),
    ] = None,
    cache_path: Annotated[
        Path | None,
        typer.Option(
            "--cache", help="Embedding cache file [$XDG_CACHE_HOME/ragsift/embeddings.sqlite]."
        ),
    ] = None,
) -> None:
    """Evaluate retrieval on a labelled set: index it per configuration, run its queries, score.

    Without a configuration the library defaults are evaluated. --compare A.toml B.toml ...
    runs several configurations on the same set and prints them side by side.
    """
    from ragsift.evaluation import (
        DEFAULT_CONFIG,
        EmbeddingCache,
        evaluate,
        load_config,
        load_dataset,
    )

    files = list(config or []) + list(configs or [])
    if compare and not files:
        raise RagsiftError(
            "--compare needs configuration files: ragsift eval DATASET --compare A.toml B.toml"
        )
    cfgs = [load_config(p) for p in files] or [DEFAULT_CONFIG]
    _dedupe_names(cfgs)
    if k is not None:
        cfgs = [c.replace(k=k) for c in cfgs]
    if mode is not None:
        cfgs = [c.replace(mode=mode.value) for c in cfgs]
        if not files:
            cfgs = [cfgs[0].replace(name=f"defaults, {mode.value}")]
    if span is not None:
        from ragsift.api import check_span

        cfgs = [c.replace(span=check_span(span)) for c in cfgs]
        if not files:
            cfgs = [cfgs[0].replace(name=f"{cfgs[0].name}, span {span}")]
    ds = load_dataset(dataset, split=split)
    cache = EmbeddingCache(cache_path)
    try:
        results = evaluate(ds, cfgs, cache=cache, progress=warn)
    finally:
        cache.close()
    if save is not None:
        import json

        with open(save, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r.as_dict(), ensure_ascii=False) + "\n" for r in results)
    if json_out:
        write_jsonl(r.as_dict() for r in results)
    else:
        _print_results(results, thresholds)
    for r in results:
        warn(
            f"{r.config.name}: {r.chunks} chunks indexed in {r.timings['index_s']:.1f}s, "
            f"{r.queries} queries in {r.timings['search_s']:.1f}s"
        )
    raise typer.Exit(EXIT_OK)


def _dedupe_names(cfgs) -> None:
    seen: dict[str, int] = {}
    for i, c in enumerate(cfgs):
        n = seen.get(c.name, 0)
        seen[c.name] = n + 1
        if n:
            cfgs[i] = c.replace(name=f"{c.name}#{n + 1}")


def _pm(mean: float, std: float) -> str:
    return f"{mean:.1f} ± {std:.1f}"


def _print_results(results, show_thresholds: bool) -> None:
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped into a file: keep side-by-side tables unwrapped
        console = Console(width=160)
    first = results[0]
    spans = first.format == "spans"
    console.print(_results_table(results, spans))
    if spans and first.per_corpus:
        console.print(_per_corpus_table(results))
    if show_thresholds:
        for r in results:
            console.print(_sweep_table(r))


METRIC_HEADERS = {
    "recall": "recall",
    "precision": "precision",
    "iou": "IoU",
    "ndcg@10": "nDCG@10",
    "recall@10": "R@10",
    "recall@100": "R@100",
    "mrr@10": "MRR@10",
}


def _results_table(results, spans: bool):
    """The configurations side by side: one row each, the best value of each metric in bold
    when there are several."""
    from rich.table import Table

    first = results[0]
    title = f"{first.dataset}: {first.queries} {'questions' if spans else 'queries'}, k = {first.config.k}"
    table = Table(title=title)
    for col in ("config", "chunker", "retrieval", "chunks"):
        table.add_column(col, justify="right" if col == "chunks" else "left", no_wrap=True)
    metric_names = (
        ("recall", "precision", "iou")
        if spans
        else ("ndcg@10", "recall@10", "recall@100", "mrr@10")
    )
    for name in metric_names:
        table.add_column(METRIC_HEADERS[name], justify="right")
    best = {n: max(r.overall[n] for r in results) for n in metric_names}
    for r in results:
        cells = []
        for n in metric_names:
            text = _pm(r.overall[n], r.std[n]) if spans else f"{r.overall[n]:.2f}"
            cells.append(
                f"[bold]{text}[/bold]" if len(results) > 1 and r.overall[n] == best[n] else text
            )
        table.add_row(
            r.config.name,
            r.config.chunker_label(),
            r.config.retrieval_label(),
            str(r.chunks),
            *cells,
        )
    return table


def _per_corpus_table(results):
    """Span results per corpus: recall / IoU of each configuration."""
    from rich.table import Table

    corpora = list(results[0].per_corpus)
    per = Table(title="per corpus: recall / IoU (mean × 100)")
    per.add_column("config")
    for c in corpora:
        per.add_column(c, justify="right")
    for r in results:
        per.add_row(
            r.config.name,
            *(
                f"{r.per_corpus[c]['recall']:.1f} / {r.per_corpus[c]['iou']:.1f}"
                if c in r.per_corpus
                else ""
                for c in corpora
            ),
        )
    return per


def _sweep_table(r):
    """One configuration's threshold sweep, its best F1 marked."""
    from rich.table import Table

    from ragsift.evaluation import best_threshold

    sweep = Table(
        title=f"{r.config.name}: a relevance-score threshold on the top {r.config.k} "
        "(fractions; recall relative to the ranking)"
    )
    for col in ("threshold", "precision", "recall", "F1", "empty", "answered"):
        sweep.add_column(col, justify="right")
    top = best_threshold(r.thresholds)
    for row in r.thresholds:
        mark = " ◀ best F1" if row is top else ""
        sweep.add_row(
            f"{row['threshold']:.2f}",
            f"{row['precision']:.3f}",
            f"{row['recall']:.3f}",
            f"{row['f1']:.3f}{mark}",
            f"{row['empty']:.3f}",
            f"{row['answered']:.3f}",
        )
    return sweep


def register(app: typer.Typer) -> None:
    app.command(
        "eval",
        epilog=EPILOG,
        help=eval_command.__doc__,
    )(handle_errors(eval_command))
