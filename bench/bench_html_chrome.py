"""Page chrome in real documentation builds (issue 41 item 4): how much text the HTML reader
kept before and after the main-content rules (``ragsift/sources/html_layout.py``), and how
much of each page's main content survives.

For each generator, the pages of one real build are read by the reader at ``--before`` (a
git revision) and by the working tree's. The page's main content, the reference, is the text
of the element the generator puts it in (a selector per generator, read by a small parser
of this script's own, not by ragsift); "kept" is the share of its words found in the reader's
text, "residue" the share of the reader's words that are not in it (chrome left over). Words
are compared as split by whitespace, so an inline tag between two letters ("foo<b>bar</b>")
or a permalink mark counts against both readers alike: compare the before and after columns,
not either with 100%.

    python -m bench.bench_html_chrome --before REV NAME=GLOB[@TAG.ATTR=VALUE] ...

A selector ``TAG.ATTR=VALUE`` matches the first TAG whose ATTR contains VALUE as a word
(``main`` alone: the first main); none: no reference (kept/residue not shown).
"""

from __future__ import annotations

import argparse
import glob
import subprocess
import sys
import types
from collections import Counter
from html.parser import HTMLParser

from ragsift.sources.html import parse_html

_RAW = {"script", "style", "template", "title", "svg", "noscript"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "wbr"}


class _Subtree(HTMLParser):
    def __init__(self, tag: str, attr: str | None, value: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.want = (tag, attr, value)
        self.depth = 0  # >0: inside the element
        self.done = False
        self.raw = 0
        self.words: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in _RAW:
            self.raw += 1
        if tag in _VOID:
            return
        if self.depth:
            self.depth += tag == self.want[0]
            return
        t, a, v = self.want
        if self.done or tag != t:
            return
        if a is None or v in (dict(attrs).get(a) or "").split():
            self.depth = 1

    def handle_endtag(self, tag):
        if tag in _RAW and self.raw:
            self.raw -= 1
        if self.depth and tag == self.want[0]:
            self.depth -= 1
            self.done = self.depth == 0

    def handle_data(self, data):
        if self.depth and not self.raw:
            self.words += data.split()


def reference(text: str, selector: str) -> Counter | None:
    tag, _, rest = selector.partition(".")
    attr, _, value = rest.partition("=")
    p = _Subtree(tag, attr or None, value or None)
    p.feed(text)
    return Counter(p.words) if p.words else None


def old_reader(rev: str):
    source = subprocess.run(
        ["git", "show", f"{rev}:ragsift/sources/html.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("html_before")
    exec(compile(source, "html_before.py", "exec"), module.__dict__)
    return module.parse_html


def words_of(reader, text: str) -> Counter:
    try:
        return Counter(reader(text, "x.html").text.split())
    except Exception:  # a page the reader skips (empty, a template): no text
        return Counter()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("sets", nargs="+")
    args = ap.parse_args()
    before = old_reader(args.before)
    print(
        f"{'generator':<18} {'pages':>5} {'before':>10} {'after':>10} {'chrome removed':>17} "
        f"{'main kept before':>16} {'after':>6} {'residue before':>14} {'after':>6}"
    )
    for item in args.sets:
        name, _, rest = item.partition("=")
        pattern, _, selector = rest.partition("@")
        files = sorted(glob.glob(pattern, recursive=True))
        b_chars = a_chars = 0
        ref_total = kept = b_kept = b_out = a_out = b_extra = a_extra = 0
        for f in files:
            text = open(f, encoding="utf-8", errors="replace").read()
            old, new = words_of(before, text), words_of(parse_html, text)
            b_chars += sum(len(w) * n for w, n in old.items())
            a_chars += sum(len(w) * n for w, n in new.items())
            ref = reference(text, selector) if selector else None
            if ref is not None:
                ref_total += sum(ref.values())
                kept += sum((ref & new).values())
                b_kept += sum((ref & old).values())
                b_out += sum(old.values())
                a_out += sum(new.values())
                b_extra += sum((old - ref).values())
                a_extra += sum((new - ref).values())
        removed = b_chars - a_chars
        line = (
            f"{name:<18} {len(files):>5} {b_chars:>10,} {a_chars:>10,} "
            f"{removed:>10,} ({removed / max(b_chars, 1):>4.0%})"
        )
        if ref_total:
            line += (
                f" {b_kept / ref_total:>6.1%} {kept / ref_total:>6.1%} {b_extra / max(b_out, 1):>14.1%} "
                f"{a_extra / max(a_out, 1):>6.1%}"
            )
        print(line, flush=True)
    print("(characters: non-space characters of the text read; kept/residue: words)")


if __name__ == "__main__":
    sys.exit(main())
