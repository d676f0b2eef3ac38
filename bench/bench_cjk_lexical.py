"""CJK words on the lexical side (issue 37): does a query of 1-4 CJK characters that a document
holds verbatim reach a chunk holding it in the top 10 of ``--mode lexical``? Before (the rule
of ragsift 0.6.0: a CJK run is one token) and after (``terms.cjk_terms``: bigrams and
unigrams), with the index size and the lexical query time of each.

Corpora: the Debian Reference in Simplified Chinese and in Japanese (the Debian packages
``debian-reference-zh-cn`` and ``debian-reference-ja``, fetched with ``apt-get download`` and
unpacked into ``--workdir`` by this script; never committed). FastAPI's translated docs are
held out of every measurement of issue 37 and are not used here.

Method, per language:
- ``ragsift embed`` of the HTML chapters (the bundled model, the default chunker) into a
  SQLite index, timed as a whole command: the "after" index (schema 6);
- the "before" index: a copy whose ``terms`` are recomputed with the old rule
  (``terms_text(..., cjk=False)``, equal to 0.6.0's ``terms_text`` on every text), postings
  rewritten, ``user_version`` 5: a reader then asks with 0.6.0's query rule
  (``query_terms(..., cjk=False)``); same chunks, same vectors;
- sizes after ``VACUUM INTO`` (no free pages in either);
- ``--n`` substrings drawn at random (seeded) from the chunks' text: a chunk, a length of 1-4,
  a start where that many characters are all CJK; each asked through ``ragsift.api``
  (``Index.query(q, k=10, mode="lexical", threshold=None)``, warm), a hit when one of the 10
  holds it in its text or context; the time of each query; and how many are also admitted at
  the default threshold (``threshold="auto"``; not a target of this part of the issue).

    .venv/bin/python -m bench.bench_cjk_lexical --n 300

Not claimed: ranking quality for questions (see issue 37's part 2 and 3); only reachability
of verbatim substrings, and the cost.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"zh": "debian-reference-zh-cn", "ja": "debian-reference-ja"}
SUFFIX = {"zh": "zh-cn", "ja": "ja"}


def corpus(workdir: Path, lang: str) -> Path:
    """The folder of the language's HTML chapters, fetched and unpacked once."""
    docs = workdir / f"docs-{lang}"
    if docs.is_dir() and any(docs.iterdir()):
        return docs
    debs = workdir / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    if not list(debs.glob(f"{PACKAGES[lang]}_*.deb")):
        subprocess.run(
            ["apt-get", "download", PACKAGES[lang]], cwd=debs, check=True, capture_output=True
        )
    (deb,) = debs.glob(f"{PACKAGES[lang]}_*.deb")
    unpacked = workdir / f"unpacked-{lang}"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    docs.mkdir(parents=True, exist_ok=True)
    for page in sorted((unpacked / "usr/share/debian-reference").glob(f"*.{SUFFIX[lang]}.html")):
        shutil.copy(page, docs / page.name)
    return docs


def as_old_rule(src: Path, dst: Path) -> None:
    """``dst``: ``src`` with its terms and postings as ragsift 0.6.0 wrote them (schema 5)."""
    from ragsift.index import lexical
    from ragsift.index.terms import terms_text

    shutil.copy(src, dst)
    db = sqlite3.connect(dst, isolation_level=None)
    try:
        db.execute("BEGIN")
        rows = db.execute("SELECT id, context, text FROM chunks").fetchall()
        db.executemany(
            "UPDATE chunks SET terms = ? WHERE id = ?",
            [(terms_text(c, t, cjk=False), i) for i, c, t in rows],
        )
        db.execute("DELETE FROM lex_postings")
        db.execute("DELETE FROM lex_blocks")
        lexical.backfill(db)
        db.execute("PRAGMA user_version = 5")
        db.execute("COMMIT")
    finally:
        db.close()


def vacuumed_size(path: Path) -> int:
    out = path.with_suffix(".vacuumed")
    out.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    try:
        db.execute("VACUUM INTO ?", (str(out),))
    finally:
        db.close()
    size = out.stat().st_size
    out.unlink()
    return size


def draw(index: Path, n: int, seed: int) -> list[str]:
    """``n`` random substrings of 1-4 CJK characters of the chunks' text."""
    from ragsift.index.terms import CJK

    db = sqlite3.connect(index)
    try:
        texts = [t for (t,) in db.execute("SELECT text FROM chunks ORDER BY id")]
    finally:
        db.close()
    texts = [t for t in texts if CJK.search(t)]
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        text = rng.choice(texts)
        size = rng.randint(1, 4)
        at = rng.randrange(len(text))
        q = text[at : at + size]
        if len(q) == size and all(CJK.match(c) for c in q):
            out.append(q)
    return out


def measure(index: Path, queries: list[str]) -> dict:
    from ragsift import api

    reached, admitted, times, misses = 0, 0, [], []
    with api.open_index(index) as ix:
        ix.query(queries[0], k=10, mode="lexical", threshold=None)  # warm: model, postings
        for q in queries:
            t0 = time.perf_counter()
            r = ix.query(q, k=10, mode="lexical", threshold=None)
            times.append(time.perf_counter() - t0)
            if any(q in c.text or q in c.context for c in r.admitted[:10]):
                reached += 1
            else:
                misses.append(q)
            auto = ix.query(q, k=10, mode="lexical")
            admitted += any(q in c.text or q in c.context for c in auto.admitted)
    times.sort()
    return {
        "reached": reached,
        "n": len(queries),
        "admitted_auto": admitted,
        "ms_median": 1000 * statistics.median(times),
        "ms_p95": 1000 * times[int(0.95 * (len(times) - 1))],
        "misses": misses[:10],
    }


def cli_query_seconds(index: Path, queries: list[str]) -> float:
    """Median wall time of a whole ``ragsift query --mode lexical`` process."""
    times = []
    for q in queries:
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ragsift",
                "query",
                q,
                "--index",
                str(index),
                "--mode",
                "lexical",
                "--k",
                "10",
                "--json",
            ],
            capture_output=True,
            check=False,
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300, help="substrings per language")
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--workdir", default=str(ROOT / "bench" / ".cache" / "cjk"))
    ap.add_argument("--cli", type=int, default=5, help="whole `ragsift query` runs per index")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="keep an 'after' index built by an earlier run (embed not timed)",
    )
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    rows = {}
    for lang in PACKAGES:
        docs = corpus(work, lang)
        after = work / f"after-{lang}.db"
        embed_s = None
        if not (args.reuse and after.exists()):
            for p in (after, Path(f"{after}-wal"), Path(f"{after}-shm")):
                p.unlink(missing_ok=True)
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "ragsift", "embed", str(docs), "--index", str(after)],
                check=True,
                capture_output=True,
            )
            embed_s = time.perf_counter() - t0
        before = work / f"before-{lang}.db"
        t0 = time.perf_counter()
        as_old_rule(after, before)
        convert_s = time.perf_counter() - t0
        db = sqlite3.connect(after)
        chunks, docs_n = db.execute(
            "SELECT count(*), count(DISTINCT doc_id) FROM chunks"
        ).fetchone()
        chars = db.execute("SELECT sum(length(text)) FROM chunks").fetchone()[0]
        db.close()
        queries = draw(after, args.n, args.seed)
        cli_q = queries[: args.cli]
        out = {
            "docs": docs_n,
            "chunks": chunks,
            "chars": chars,
            "embed_s": embed_s,
            "old_rule_rewrite_s": convert_s,
        }
        for name, index in (("before", before), ("after", after)):
            got = measure(index, queries)
            got["bytes"] = vacuumed_size(index)
            got["cli_query_s"] = cli_query_seconds(index, cli_q) if cli_q else None
            out[name] = got
        # the terms' own cost on this corpus (what a writer adds per chunk)
        from ragsift.index.terms import terms_text

        db = sqlite3.connect(after)
        texts = db.execute("SELECT context, text FROM chunks").fetchall()
        db.close()
        for rule, cjk in (("terms_s_before", False), ("terms_s_after", True)):
            t0 = time.perf_counter()
            for c, t in texts:
                terms_text(c, t, cjk=cjk)
            out[rule] = time.perf_counter() - t0
        rows[lang] = out
        print(json.dumps({lang: out}, ensure_ascii=False), flush=True)
    print()
    print(
        "| corpus | docs / chunks / chars | reached top 10 before | after | admitted at auto "
        "before / after | index bytes before → after | lexical query median (p95) ms before "
        "→ after | whole `query` s before → after |"
    )
    print("|---|---|---:|---:|---:|---|---|---|")
    for lang, o in rows.items():
        b, a = o["before"], o["after"]
        print(
            f"| Debian Reference {SUFFIX[lang]} | {o['docs']} / {o['chunks']} / {o['chars']:,}"
            f" | {b['reached']}/{b['n']} ({100 * b['reached'] / b['n']:.1f}%)"
            f" | {a['reached']}/{a['n']} ({100 * a['reached'] / a['n']:.1f}%)"
            f" | {b['admitted_auto']} / {a['admitted_auto']}"
            f" | {b['bytes']:,} → {a['bytes']:,} ({a['bytes'] / b['bytes']:.2f}×)"
            f" | {b['ms_median']:.1f} ({b['ms_p95']:.1f}) → {a['ms_median']:.1f}"
            f" ({a['ms_p95']:.1f})"
            f" | {b['cli_query_s']:.2f} → {a['cli_query_s']:.2f} |"
        )
    print(f"\nloadavg: {Path('/proc/loadavg').read_text().strip()}", file=sys.stderr)


if __name__ == "__main__":
    main()
