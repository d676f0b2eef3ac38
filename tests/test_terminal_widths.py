"""``explain`` and ``info`` read at 80 and 120 columns (issue 31, "the terminal details").

Snapshot-style, but of properties rather than bytes, so a change of model scores does not
break them: run as a user runs them (subprocesses with ``COLUMNS`` set, the real model), on
the ``fixtures/`` index and on a messy docs folder made here (long folder and file names,
spaces, brackets, CJK names, a word longer than a line, nested headings), and check that

- no line is wider than the terminal, and k 3 with the default reject window takes at most 60;
- every candidate's ``path:line`` sits whole on one line, or cut in the middle with one "…"
  (never wrapped mid-word);
- every number is labelled: a column header (``score``, ``margin``, the 0–1 axis; from 100
  columns also ``unit · cos``, ``lexical``, ``via``), ``unit 0.61 · cos 0.58 #3, lex 0.70 #1``
  in words below 100 columns, ``unit 0.612 share 20%`` for a closest unit, no bare percentage;
- the bars are on the score's 0–1 scale (each bar's length is its score, ``┃`` the threshold);
- the header's counts agree (candidates = k + reject window; admitted + rejected = candidates;
  the rejected title splits them into the top k and the reject window);
- each hit's best unit is marked (``»…«`` in output without styles) within a few lines of text;
- each rejected row keeps a one-line preview of its text.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from rich.cells import cell_len

from tests.conftest import run_cli
from tests.test_query_cli import BEES, fixture_index

WIDTHS = (80, 120)
BLOCKS = "█▏▎▍▌▋▊▉"
HEAD = re.compile(r"^\s*(\d+) (\d\.\d{3})\s+([+−]\d\.\d{2}) (.+)$")

MESSY = {
    "docs/patterns/very_long_directory_name_for_testing_wrapping/javascript_fetch_examples.rst": "JavaScript fetch examples\n=========================\n\n"
    "Handling errors\n---------------\n\n"
    "A ``fetch`` promise only rejects on network failure. An HTTP error status such as 404\n"
    "still resolves; check ``response.ok`` before reading the body. Timeouts need an\n"
    "``AbortController``: call ``controller.abort()`` after a delay and pass\n"
    "``controller.signal`` to ``fetch``.\n\n"
    "Streaming responses\n-------------------\n\n"
    "``response.body`` is a readable stream. Read it chunk by chunk with ``getReader()``.\n",
    "docs/patterns/javascript.rst": "JavaScript, fetch, and JSON\n===========================\n\n"
    "You may want to make your HTML page dynamic, by changing data without reloading the\n"
    "entire page. Instead of submitting a form, add JavaScript that calls fetch and\n"
    "replaces content on the page. fetch takes a URL and an object with other options.\n",
    "docs/api reference [v2]/request handling (draft).md": "# Request handling\n\n## Reading JSON bodies\n\n`request.get_json()` parses the body "
    "as JSON when the mimetype is `application/json`.\n\n## Timeouts\n\nThe development "
    "server has no request timeout. Behind a production server, set the timeout in the "
    "server's own configuration.\n",
    "docs/日本語ガイド/はじめに_とても長いファイル名のドキュメント.md": "# はじめに\n\nこのガイドでは fetch を使って JSON を送信する方法を説明します。"
    "fetch の timeout は AbortController で設定します。\n",
    "docs/reference/extremely/deeply/nested/folder/structure/that/keeps/going/"
    "an_unreasonably_long_file_name_for_the_fetch_api_timeout_options.md": "# Fetch API\n\n## Options\n\n### Timeouts and cancellation in long running requests\n\n"
    "There is no timeout option in fetch itself. Use an AbortController and call abort "
    "after a delay; the promise then rejects with an AbortError.\n\n"
    + "Supercalifragilisticexpialidocious" * 4
    + " is one word longer than a line.\n",
    **{
        f"docs/patterns/other pattern {i} (notes).md": f"# Pattern {i}\n\nThis pattern covers caching, blueprints and request handling {i} "
        "with views and templates; fetch calls a view and a timeout guards it.\n"
        for i in range(10)
    },
}
FETCH = "how do I set a timeout on fetch"


@pytest.fixture(scope="session")
def fixtures_index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


@pytest.fixture(scope="session")
def messy_index(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("messy site")
    for name, text in MESSY.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    db = str(tmp_path_factory.mktemp("messy-db") / "messy.db")
    proc = run_cli("embed", str(root / "docs"), "--index", db)  # absolute: long stored paths
    assert proc.returncode == 0, proc.stderr
    return db


def explain(index: str, query: str, width: int | None, *args: str):
    env = {"COLUMNS": str(width or 80)}
    return run_cli("explain", query, "-i", index, "-k", "3", *args, env=env)


def three_admitted(index: str, query: str, *args: str) -> tuple[list[str], dict]:
    """Options that admit exactly 3 (a floor just under the 3rd candidate's score, whatever
    the model scores today), and the JSON record they give."""
    rec = json.loads(explain(index, query, None, "--threshold", "none", "--json", *args).stdout)
    third = rec["candidates"][2]["score"]
    opts = ["--threshold", f"{math.floor(third * 1000) / 1000:.3f}", *args]
    rec = json.loads(explain(index, query, None, *opts, "--json").stdout)
    assert len([c for c in rec["candidates"] if c["admitted"]]) == 3
    return opts, rec


def location(c: dict) -> str:
    loc = c["path"]
    if c.get("line_start") is not None:
        loc += f":{c['line_start']}"
        if c.get("line_end") is not None and c["line_end"] != c["line_start"]:
            loc += f"-{c['line_end']}"
    if c.get("page") is not None:
        loc += f" p.{c['page']}"
    return loc


def flat(text: str) -> str:
    return " ".join(text.split())


def blocks(stdout: str) -> dict[int, list[str]]:
    """Each candidate's lines: its head line and the lines below it up to the next heading."""
    out: dict[int, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        head = HEAD.match(line)
        if head:
            current = int(head.group(1))
            out[current] = [line]
        elif current is not None and line.startswith(" " * 6):
            out[current].append(line)
        else:
            current = None
    return out


def shown_whole_or_cut(loc: str, lines: list[str]) -> bool:
    """``loc`` on one of ``lines`` (after the indent): whole, or as ``head…tail`` of it."""
    for line in lines:
        field = line[6:].split("  ")[0]
        if field == loc:
            return True
        if field.count("…") == 1:
            head, tail = field.split("…")
            if loc.startswith(head) and loc.endswith(tail) and len(head) + len(tail) < len(loc):
                return True
    return False


def check_layout(stdout: str, rec: dict, width: int) -> None:
    lines = stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= width, stdout
    assert len(lines) <= 60, stdout
    cells = 20 if width >= 100 else 10
    k, window = rec["k"], rec["reject_window"]
    cands = rec["candidates"]
    admitted = [c for c in cands if c["admitted"]]
    text = "\n".join(lines)

    # the header's counts, and what they mean
    counts = re.search(
        r"^(\d+) candidates = k (\d+) \+ reject window (\d+) · (\d+) admitted · "
        r"(\d+) rejected$",
        text,
        re.MULTILINE,
    )
    assert counts, stdout
    n, kk, ww, a, rj = map(int, counts.groups())
    assert (n, kk, ww, a, rj) == (len(cands), k, window, len(admitted), len(cands) - a)
    assert n == k + window  # the messy site and fixtures/ both have more chunks than that
    assert f"admitted ({a})" in text if a else "nothing admitted" in text
    if rj:
        title = re.search(r"^rejected \((\d+)\) = (.+)$", text, re.MULTILINE)
        assert title and int(title.group(1)) == rj, stdout
        top = sum(1 for c in cands if not c["admitted"] and c["rank"] <= k)
        parts = ([f"{top} of the top {k}"] if top else []) + [f"{n - k} past k"]
        assert title.group(2) == " + ".join(parts)

    # labels: a header over the numbers, the 0–1 axis, every percentage a share
    header = next(line for line in lines if re.match(r"^\s*# score margin ", line))
    assert "0" + "─" * (cells - 2) + "1" in header
    if width >= 100:
        assert "unit · cos" in header and "lexical" in header and "via" in header
    else:
        assert header.rstrip().endswith("evidence")
    assert "0–1" in text and "bars: -" not in text and "┃ = threshold" in text
    assert re.findall(r"\d+%", text) == re.findall(r"share (\d+%)", text)

    by_rank = blocks(stdout)
    assert sorted(by_rank) == [c["rank"] for c in cands]
    for c in cands:
        block = by_rank[c["rank"]]
        head = HEAD.match(block[0])
        assert head.group(2) == f"{c['score']:.3f}"
        margin = c["score"] - rec["threshold"]
        assert head.group(3) == ("+" if margin >= 0 else "−") + f"{abs(margin):.2f}"
        # the bar: `cells` cells on the 0–1 scale, ┃ where the threshold lies
        bar = head.group(4)[:cells]
        assert bar.index("┃") == min(cells - 1, int(rec["threshold"] * cells)), block[0]
        filled = sum(1 for ch in bar if ch in BLOCKS)
        assert abs(filled - c["score"] * cells) <= 2, (block[0], c["score"])
        if width < 100:  # the evidence in words
            words = " ".join(block[:2])
            assert f"cos {c['dense_score']:.2f}" in words
            if c["lexical_rank"] is not None:
                assert f"lex {c['lexical_share']:.2f} #{c['lexical_rank']}" in words
        else:
            assert f"{c['dense_score']:.2f}" in block[0]
        # the path: never wrapped, whole or cut in the middle
        assert shown_whole_or_cut(location(c), block[1:]), (location(c), block)
        if c["admitted"]:
            # a few lines of text, the best unit marked
            assert len(block) <= 1 + 2 + 1 + 3 + 3, block
            unit = c.get("unit_text")
            if unit:
                squashed = "".join("".join(block).split())
                assert "»" + "".join(unit.split())[:20] in squashed, (unit, block)
        else:
            # one line of preview beside the path
            assert len(block) <= 3, block
            rest = block[-1][6:].split("  ", 1)
            assert len(rest) == 2, block
            preview = rest[1].strip()
            assert len(preview) >= 8, block
            assert flat(c["text"]).startswith(preview.rstrip("…").rstrip()), block


@pytest.mark.parametrize("width", WIDTHS)
def test_explain_on_the_fixtures(fixtures_index, width):
    opts, rec = three_admitted(fixtures_index, BEES)
    proc = explain(fixtures_index, BEES, width, *opts)
    assert proc.returncode == 0, proc.stderr
    check_layout(proc.stdout, rec, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_explain_on_a_messy_docs_site(messy_index, width):
    opts, rec = three_admitted(messy_index, FETCH)
    assert any(len(location(c)) > width - 6 for c in rec["candidates"])  # paths to cut
    proc = explain(messy_index, FETCH, width, *opts)
    assert proc.returncode == 0, proc.stderr
    check_layout(proc.stdout, rec, width)
    assert "┏" not in proc.stdout and "│" not in proc.stdout  # no table folding the paths


@pytest.mark.parametrize("width", WIDTHS)
def test_explain_default_threshold_fits(messy_index, width):
    """With the measured default threshold (whatever it admits today) the same holds."""
    rec = json.loads(explain(messy_index, FETCH, None, "--json").stdout)
    proc = explain(messy_index, FETCH, width)
    assert proc.returncode in (0, 1), proc.stderr
    check_layout(proc.stdout, rec, width)


def test_the_header_wraps_between_phrases_at_80_columns(fixtures_index):
    """Issue 41 item 6: with fewer candidates than k + the reject window, the counts line
    ("24 candidates: all there are (k 3 + reject window 30 allow 33) · 1 admitted · 23
    rejected") is longer than 80 columns; it was wrapped by words ("· 23" / "rejected")."""
    proc = explain(fixtures_index, BEES, 80, "--reject-window", "30")
    assert proc.returncode == 0, proc.stderr
    head = proc.stdout.splitlines()[:6]
    counts = [line for line in head if "admitted" in line or "rejected" in line]
    assert any("all there are (k 3 + reject window 30 allow 33)" in line for line in head), head
    assert any(re.search(r"\b\d+ admitted", line) for line in counts), head
    assert any(re.search(r"\b\d+ rejected", line) for line in counts), head
    for line in head:
        assert cell_len(line) <= 80 and not re.search(r"(·|\d)$", line.rstrip()), head
        assert not line.startswith(("rejected", "admitted")), head


# -- info --------------------------------------------------------------------------------------

INFO_KEYS = {
    "path",
    "documents",
    "chunks",
    "vectors",
    "truncated",
    "tokens",
    "blocks",
    "dead_vectors",
    "size_bytes",
    "free_bytes",  # added by issue 40 (SQLite's freed pages; docs/cli.md, info)
    "schema_version",
    "writer_pid",
    "threshold",
    "threshold_origin",
    "threshold_from",
    "model",
    "model_fingerprint",
    "dimensions",
    "embedder_options",
    "chunker",
    "chunker_options",
    "written_by",
    "model_source",
    "model_source_kind",
    "min_writer_version",
    "index_from",
    "project",
}


@pytest.mark.parametrize("width", WIDTHS)
def test_info_prints_aligned_key_value_lines(fixtures_index, width):
    proc = run_cli("info", "-i", fixtures_index, env={"COLUMNS": str(width)})
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(run_cli("info", "-i", fixtures_index, "--json").stdout)
    lines = proc.stdout.splitlines()
    assert not any(ch in proc.stdout for ch in "┌│┏┃")  # no table
    rows = [re.match(r"^(\s*\S.*?)(\s{2,})(\S.*)$", line) for line in lines]
    assert all(rows), proc.stdout
    # one column for the values
    assert len({len(m.group(1)) + len(m.group(2)) for m in rows}) == 1, proc.stdout
    values: dict[str, str] = {}
    for m in rows:  # the first of a name: a project's "  index" comes after the index's own
        values.setdefault(m.group(1).strip(), m.group(3))
    assert values["index"] == rec["path"]
    assert values["documents"] == f"{rec['documents']:,}"
    assert values["model"] == rec["model"]
    assert values["threshold"].startswith(f"{rec['threshold']:.2f}")
    # the chunker's options readable, one per line, not raw JSON
    assert values["chunker"].startswith(rec["chunker"])
    opts = rec["chunker_options"]
    assert values["size"] == str(opts["size"])
    assert values["rules"].startswith(opts["rules"]["name"])
    assert not any(ch in proc.stdout for ch in '{}"')


def test_info_json_is_unchanged(fixtures_index):
    rec = json.loads(run_cli("info", "-i", fixtures_index, "--json").stdout)
    assert set(rec) == INFO_KEYS
    assert isinstance(rec["chunker_options"], dict) and "rules" in rec["chunker_options"]


# -- the building blocks (no model) -------------------------------------------------------------


def test_fit_location_cuts_folders_in_the_middle():
    from ragsift.cli.render import cut_middle, fit_location

    loc = "docs/patterns/very_long_directory_name/javascript_fetch_examples.rst:12-40"
    assert fit_location(loc, 200) == loc
    cut = fit_location(loc, 50)
    assert cell_len(cut) <= 50 and cut.count("…") == 1
    assert cut.endswith("/javascript_fetch_examples.rst:12-40") and cut.startswith("docs/")
    tiny = fit_location(loc, 20)  # the file name itself too long: cut in its middle
    assert cell_len(tiny) <= 20 and tiny.count("…") == 1 and tiny.endswith(":12-40")
    wide = "docs/日本語ガイド/はじめに_とても長いファイル名のドキュメント.md:1-7"
    for width in (20, 30, 40):
        assert cell_len(fit_location(wide, width)) <= width
    assert cut_middle("abc", 3) == "abc" and cell_len(cut_middle("abcdefgh", 5)) == 5


def test_bar_is_on_the_zero_to_one_scale():
    from ragsift.cli.render import axis, bar

    assert bar(0.5, None, 10).plain == "█████     "
    assert bar(0.5, 0.2, 10).plain == "██┃██     "
    assert bar(0.05, 0.2, 10).plain == "▌ ┃       "
    assert bar(1.0, 1.0, 10).plain == "█████████┃"
    assert bar(0.0, 0.0, 10).plain == "┃         "
    assert axis(10) == "0────────1" and len(axis(20)) == 20


def test_window_bounds_the_text_and_marks_the_best_unit():
    from rich.console import Console
    from rich.text import Text

    from ragsift.cli.render import UNIT_STYLE, window

    before = "word " * 200
    unit = "The unit that matched the query best."
    text = Text(before + unit + " after" * 200)
    text.stylize(UNIT_STYLE, len(before), len(before) + len(unit))
    console = Console(width=80, color_system=None)
    lines = window(console, text, 60, 3, marks=True)
    assert len(lines) == 3 and all(line.cell_len <= 60 for line in lines)
    joined = " ".join(line.plain for line in lines)
    assert joined.startswith("…") and joined.endswith("…")
    assert "»" + unit + "«" in joined
    styled = window(console, text, 60, 3)
    assert "»" not in " ".join(line.plain for line in styled)
    assert any(str(s.style) == UNIT_STYLE for line in styled for s in line.spans)


def test_counts_line_and_rejected_title_agree():
    from ragsift.cli.render import counts_line, rejected_title
    from ragsift.retrieval.topk import TopK
    from tests.records import retrieval

    recs = [{"id": f"d.md#{i}", "path": "d.md", "text": f"chunk {i}"} for i in range(13)]
    scores = [0.9, 0.3, 0.2] + [0.1] * 10
    r = retrieval(
        TopK(k=3, threshold=0.5, reject_window=10),
        scores=scores,
        records=recs,
        dimensions=3,
        model="m",
        searched=40,
    )
    assert counts_line(r) == "13 candidates = k 3 + reject window 10 · 1 admitted · 12 rejected"
    assert rejected_title(r) == "rejected (12) = 2 of the top 3 + 10 past k"
    few = retrieval(
        TopK(k=3, threshold=0.5, reject_window=10),
        scores=scores[:5],
        records=recs[:5],
        dimensions=3,
        model="m",
        searched=5,
    )
    assert counts_line(few).startswith("5 candidates: all there are (k 3 + reject window 10")


def test_info_value_words():
    from ragsift.cli.info import readable

    assert readable(None) == "-" and readable(True) == "yes" and readable("") == "(empty)"
    assert readable({"name": "default", "levels": [1, 2, 3]}) == "default (3 levels)"
    assert readable(["*.md", "*.rst"]) == "*.md, *.rst"
    assert readable({"a": 1, "b": "x"}) == "a 1, b x"


def test_a_heading_trail_loses_its_outer_headings_first():
    from ragsift.cli.render import fit_trail

    trail = ("A Small Beekeeping Handbook", "Inspections", "Swarm control")
    assert fit_trail(trail, 80) == "A Small Beekeeping Handbook › Inspections › Swarm control"
    assert fit_trail(trail, 35) == "… › Inspections › Swarm control"
    assert fit_trail(trail, 20) == "… › Swarm control"
    assert fit_trail(trail, 8) == "…control"


def test_the_best_unit_comes_from_the_candidates_own_offsets():
    """``unit_start``/``unit_end`` are document offsets; the chunk's ``start`` is their base."""
    from ragsift.cli.explain import highlighted
    from ragsift.cli.render import UNIT_STYLE
    from ragsift.retrieval.topk import Candidate

    text = "Intro sentence here. Split the colony before it swarms. Closing words."
    s = text.index("Split")
    e = text.index("swarms.") + len("swarms.")
    c = Candidate(
        id="h#1",
        rowid=1,
        score=0.5,
        rank=1,
        admitted=True,
        reason=None,
        path="h.md",
        start=1000,
        end=1000 + len(text),
        text=text,
        unit_score=0.6,
        unit_start=1000 + s,
        unit_end=1000 + e,
        unit_text=text[s:e],
    )
    out = highlighted(c, None)
    [span] = [sp for sp in out.spans if str(sp.style) == UNIT_STYLE]
    assert out.plain[span.start : span.end] == "Split the colony before it swarms."
