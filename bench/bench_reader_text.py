"""Index what a reader reads (issue 28, point 5): on real documentation trees, the chunks of
``ragsift chunk FOLDER`` with the defaults (what ``embed`` indexes) that

- hold an HTML tag or an HTML entity (markdown: raw HTML is reduced to its text), and
- start in the middle of a sentence (hard-wrapped prose cut at a line break).

A chunk *holds an HTML tag* when it contains ``<name ...>`` / ``</name>`` of an HTML element
(``sources.markdown.HTML_ELEMENTS``: ``<str>`` or ``<file>`` in a usage line is text, not a
tag) or an HTML comment; *an entity* is ``&amp;``, ``&lt;``, ``&#39;`` and kin. Both are
counted in the whole chunk and outside code (fenced blocks and code spans, where HTML shown as
code stays verbatim).

A chunk *starts mid-sentence* when the document text before it (``document.text[:start]``)
is not empty and the chunk does not start a block (a blank line before it, a heading, list
item, fence, table row or quote line at its start, a heading or fence line just before it),
and either its first character is lowercase or the text before it does not end a sentence
(``.``, ``!``, ``?`` or ``:``, before optional closing quotes or brackets).

    git --git-dir=$(fetch github:fastapi/typer) archive HEAD docs | tar -x -C /tmp/typer
    git --git-dir=$(fetch github:pallets/flask) archive HEAD docs | tar -x -C /tmp/flask
    .venv/bin/python -m bench.bench_reader_text /tmp/typer/docs /tmp/flask/docs

Runs the real command in-process (``typer``'s ``CliRunner`` over ``ragsift.cli.app``), so the
ragsift imported is the one of the current directory: run it from an older worktree (the
file copied there) for a before/after comparison.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys

HTML_NAMES = (
    "a abbr address area article aside audio b base bdi bdo big blockquote body br button "
    "canvas caption center cite code col colgroup data datalist dd del details dfn dialog div "
    "dl dt em embed fieldset figcaption figure font footer form h1 h2 h3 h4 h5 h6 head header "
    "hgroup hr html i iframe img input ins kbd label legend li link main map mark menu meta "
    "meter nav noscript object ol optgroup option output p param picture pre progress q rp rt "
    "ruby s samp script search section select slot small source span strike strong style sub "
    "summary sup svg table tbody td template textarea tfoot th thead time title tr track tt u "
    "ul var video wbr"
).split()
TAG = re.compile(r"</?(?:" + "|".join(HTML_NAMES) + r")(?=[\s/>])[^<>]*>|<!--", re.IGNORECASE)
ENTITY = re.compile(r"&(?:[a-zA-Z][a-zA-Z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});")
CODE = re.compile(
    r"^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1[ \t]*$|\Z)|(`+)(?!`).+?(?<!`)\2(?!`)",
    re.DOTALL | re.MULTILINE,
)
BLOCK_START = re.compile(r"\s*(?:#{1,6}\s|[-*+•]\s|\d{1,9}[.)]\s|```|~~~|\||>)")
BLOCK_LINE = re.compile(r"\s*(?:#{1,6}\s|```|~~~|\|)")
SENTENCE_END = re.compile(r"[.!?:][\"'”’)\]*_`]*\Z")


def run_chunk(folder: str) -> list[dict]:
    from typer.testing import CliRunner

    from ragsift.cli import app

    result = CliRunner().invoke(app, ["chunk", folder])
    if result.exit_code != 0:
        sys.exit(f"ragsift chunk {folder} exited {result.exit_code}: {result.output[-400:]}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def documents(folder: str) -> dict[str, str]:
    from ragsift.errors import SkipFile
    from ragsift.sources import discover, load_document

    found, _ = discover([folder])
    out = {}
    for sf in found:
        try:
            out[sf.relpath] = load_document(sf).text
        except SkipFile:
            pass
    return out


def starts_mid_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    if not before:
        return False
    gap = text[len(before) : start]
    if gap.count("\n") >= 2 or (gap.count("\r") >= 2 and "\n" not in gap):
        return False  # a paragraph break
    if BLOCK_START.match(text, start):
        return False
    if "\n" in gap or "\r" in gap:
        previous = before.rsplit("\n", 1)[-1]
        if BLOCK_LINE.match(previous):
            return False
    if text[start].islower():
        return True
    return SENTENCE_END.search(before) is None


def html_counts(rows: list[dict]) -> dict:
    tags = collections.Counter()
    n_tag = n_tag_outside = n_entity = n_entity_outside = 0
    for r in rows:
        t = r["text"]
        outside = CODE.sub("", t)
        found = TAG.findall(t)
        n_tag += bool(found)
        n_tag_outside += bool(TAG.search(outside))
        n_entity += bool(ENTITY.search(t))
        n_entity_outside += bool(ENTITY.search(outside))
        for name in {re.match(r"</?([\w!-]+)", m).group(1).lower() for m in found}:
            tags[name] += 1  # chunks holding a tag of that name
    return {
        "chunks": len(rows),
        "with_tag": n_tag,
        "with_tag_outside_code": n_tag_outside,
        "with_entity": n_entity,
        "with_entity_outside_code": n_entity_outside,
        "by_tag": dict(tags.most_common(8)),
    }


def mid_counts(rows: list[dict], docs: dict[str, str], show: int) -> dict:
    mid = [
        r for r in rows if r["path"] in docs and starts_mid_sentence(docs[r["path"]], r["start"])
    ]
    for r in mid[:show]:
        text = docs[r["path"]]
        print(f"   {r['id']}: …{text[max(0, r['start'] - 50) : r['start']]!r} | {r['text'][:50]!r}")
    return {"chunks": len(rows), "starting_mid_sentence": len(mid)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", help="documentation folders (markdown, rst)")
    ap.add_argument("--show", type=int, default=0, help="print this many mid-sentence starts")
    args = ap.parse_args()
    for folder in args.folders:
        rows = run_chunk(folder)
        docs = documents(folder)
        fmt = collections.Counter(p.rsplit(".", 1)[-1] for p in {r["path"] for r in rows})
        print(f"{folder} ({dict(fmt)}): {len(rows)} chunks")
        markdown = [r for r in rows if r["path"].endswith((".md", ".markdown"))]
        if markdown:
            print("  html (markdown chunks):", json.dumps(html_counts(markdown)))
        print("  mid-sentence:", json.dumps(mid_counts(rows, docs, args.show)))


if __name__ == "__main__":
    main()
