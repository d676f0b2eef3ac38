"""The sources layer: discovery, decoding, every reader's text and provenance maps, units.

The fixture corpus (``fixtures/``, original prose written for this project, ~3,400 words):

- ``beekeeping/handbook.md``  markdown: nested headings, a GFM table of hive types,
  ``<page_break page=N>`` tags for pages 2–4; answers "How long does honey take to
  crystallise?" (two to eight weeks for most summer honeys) and "when to treat for varroa".
- ``lantern/guide.md``        markdown docs of a fictional CLI, with code fences and a table.
- ``tidepools.html``          HTML with ``<style>``, ``<script>``, ``<noscript>`` to drop,
  h1–h3 headings, a list and a table.
- ``recipes.json``            an object holding an array of recipe objects and a nested
  ``notes`` object of strings.
- ``kitchen-notes.jsonl``     dated notes, one JSON object per line.
- ``sourdough.rst``           reStructuredText, parsed by docutils (section titles are trails).
- ``field-notes.txt``         plain text: a year of garden and bee notes.
- ``legacy/market-notes.txt`` cp1252 bytes (curly quotes, é, £, €): decoded with a warning.
- ``bad/empty.txt`` (0 bytes), ``bad/broken.json`` (a syntax error on line 3): each is
  skipped with a one-line reason; ``bad/blob.bin`` (NUL bytes) is not a document type, so a
  walk ignores it (counted) and reading it by name skips it. ``--exclude 'bad/*'`` leaves the
  good part.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import sys
from pathlib import Path

import pytest

from ragsift.errors import RagsiftError, SkipFile
from ragsift.sources import (
    Document,
    SourceFile,
    discover,
    json_units,
    load_document,
    read_bytes,
    reading,
    render_markdown_tables,
    text_units,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _write(root: Path, rel: str, content: str | bytes = "text\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return p


def _rels(paths: list[str], **kw) -> list[str]:
    files, _ = discover(paths, **kw)
    return [f.relpath for f in files]


def _load(path: Path, relpath: str | None = None) -> Document:
    st = path.stat()
    return load_document(SourceFile(path, relpath or path.name, st.st_size, st.st_mtime))


def _line_of(path: Path, needle: str) -> int:
    """1-based line of the first line of ``path`` containing ``needle``."""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(f"{needle!r} not in {path}")


# -- discovery -----------------------------------------------------------------------------


def test_discover_sorted_skips_defaults_and_prefixes_root(tmp_path, monkeypatch):
    for rel in [
        "b.md",
        "a/x.md",
        "a-b/y.md",
        "a/deep/z.txt",
        ".hidden.md",
        ".config/c.md",
        "node_modules/m.js",
        "__pycache__/p.txt",
        "venv/v.txt",
        ".venv/v.txt",
        "myenv/pyvenv.cfg",
        "myenv/lib.txt",
        "sub/.git/HEAD",
    ]:
        _write(tmp_path, rel)
    monkeypatch.chdir(tmp_path)
    expected = ["a/deep/z.txt", "a/x.md", "a-b/y.md", "b.md"]
    assert _rels(["."]) == expected
    monkeypatch.chdir(tmp_path.parent)
    assert _rels([tmp_path.name + "/"]) == [f"{tmp_path.name}/{r}" for r in expected]


def test_explicit_hidden_file_missing_path_dedupe_and_stdin(tmp_path, monkeypatch):
    _write(tmp_path, ".hidden.md")
    _write(tmp_path, "a.md")
    monkeypatch.chdir(tmp_path)
    files, skipped = discover([".hidden.md", ".", "./a.md", "-", "-"])
    assert [f.relpath for f in files] == [".hidden.md", "a.md", "-"]
    assert files[-1].path is None
    assert skipped == []
    # a path argument that does not exist is a usage error, not a skip (issue 9 item 1)
    with pytest.raises(RagsiftError, match="^nope.md: no such file or directory$") as err:
        discover([".hidden.md", "nope.md", "."])
    assert err.value.exit_code == 2


def test_gitignore_subset(tmp_path, monkeypatch):
    _write(
        tmp_path,
        ".gitignore",
        "# comment\n\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/**/*.tmp\nfile?.md\n",
    )
    for rel in [
        "a.log",
        "keep.log",
        "build/out.md",
        "src/build",
        "top.txt",
        "src/top.txt",
        "docs/x.tmp",
        "docs/a/b/y.tmp",
        "file1.md",
        "file10.md",
        "sub/secret.md",
        "other/secret.md",
        "sub/inner/deep.md",
        "sub/inner/keep.md",
    ]:
        _write(tmp_path, rel)
    # A nested .gitignore applies to its subtree only and can override its parent.
    _write(tmp_path, "sub/.gitignore", "secret.md\n/inner/*\n!/inner/keep.md\n")
    monkeypatch.chdir(tmp_path)
    # --include '*': every type, so only the .gitignore rules decide here
    files, _ = discover(["."], include=["*"])
    assert [f.relpath for f in files] == [
        "file10.md",
        "keep.log",
        "other/secret.md",
        "src/build",
        "src/top.txt",
        "sub/inner/keep.md",
    ]


def test_gitignore_of_enclosing_work_tree_applies_to_a_subfolder_root(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    _write(tmp_path, ".gitignore", "drafts/\n")
    _write(tmp_path, "docs/drafts/a.md")
    _write(tmp_path, "docs/b.md")
    monkeypatch.chdir(tmp_path / "docs")
    assert _rels(["."]) == ["b.md"]


def test_symlink_loop_terminates_and_is_reported(tmp_path, monkeypatch):
    _write(tmp_path, "a/x.md")
    _write(tmp_path, "b/y.md")
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")  # a/loop → a
    os.symlink(tmp_path / "b", tmp_path / "link-to-b")  # a second name for b
    os.symlink(tmp_path / "a" / "x.md", tmp_path / "b" / "x-again.md")
    monkeypatch.chdir(tmp_path)
    files, skipped = discover(["."])
    assert [f.relpath for f in files] == ["a/x.md", "b/y.md"]
    assert [(s.path, s.reason) for s in skipped] == [("a/loop", "symlink loop (not followed)")]


def test_include_exclude_globs(tmp_path, monkeypatch):
    for rel in ["a.md", "notes.txt", "docs/b.md", "docs/drafts/c.md", "docs/drafts/d.txt"]:
        _write(tmp_path, rel)
    monkeypatch.chdir(tmp_path)
    assert _rels(["."], include=["*.md"]) == ["a.md", "docs/b.md", "docs/drafts/c.md"]
    assert _rels(["."], include=["**/*.md"], exclude=["drafts"]) == ["a.md", "docs/b.md"]
    assert _rels(["."], exclude=["docs/*"]) == ["a.md", "notes.txt"]
    assert _rels(["docs"], include=["drafts/*.txt"]) == ["docs/drafts/d.txt"]
    # The root prefix as displayed also matches, and explicit files are filtered too.
    assert _rels(["docs", "a.md"], exclude=["docs/drafts/*"]) == ["docs/b.md", "a.md"]
    assert _rels(["a.md"], include=["*.txt"]) == []
    # Folders above the root never match: the root's own parents are not "inside" it.
    root = str(tmp_path / "docs")
    assert _rels([root], exclude=[tmp_path.parent.name[:3] + "*"]) == [
        f"{root}/b.md",
        f"{root}/drafts/c.md",
        f"{root}/drafts/d.txt",
    ]
    assert _rels([root], exclude=[f"{root}/drafts"]) == [f"{root}/b.md"]


def test_read_bytes_reads_stdin_once(monkeypatch):
    monkeypatch.setattr(reading, "_stdin_cache", None)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"# T\n\nhello\n")))
    sf = SourceFile(None, "-", 0, 0.0)
    assert read_bytes(sf) == read_bytes(sf) == b"# T\n\nhello\n"
    doc = load_document(sf)
    assert doc.format == "markdown" and doc.path == "-" and doc.headings_at(5) == ("T",)


# -- markdown ------------------------------------------------------------------------------

HANDBOOK = FIXTURES / "beekeeping" / "handbook.md"


def test_markdown_text_lines_headings_pages():
    doc = _load(HANDBOOK, "beekeeping/handbook.md")
    raw = HANDBOOK.read_text(encoding="utf-8")
    assert doc.text == raw and doc.format == "markdown"
    at = doc.text.index("How long it takes depends")
    assert doc.line_at(at) == _line_of(HANDBOOK, "How long it takes depends")
    assert doc.headings_at(at) == ("A Small Beekeeping Handbook", "Honey", "Crystallisation")
    assert doc.headings_at(doc.text.index("Swarming is how")) == (
        "A Small Beekeeping Handbook",
        "Inspections",
        "Swarm control",
    )
    assert doc.headings_at(doc.text.index("The varroa mite")) == (
        "A Small Beekeeping Handbook",
        "Varroa",
    )
    assert doc.page_at(0) == 1
    assert doc.page_at(doc.text.index("| National")) == 1
    assert doc.page_at(doc.text.index("## Inspections")) == 2
    assert doc.page_at(doc.text.index("The varroa mite")) == 3
    assert doc.page_at(len(doc.text) - 1) == 4


def test_markdown_code_fence_is_not_a_heading_and_no_tags_no_pages():
    text = "# Title\n\n```sh\n# not a heading\n```\n\nSetext\n------\n\nbody\n"
    path_doc = _markdown(text)
    trails = set(path_doc.headings.values)
    assert trails == {("Title",), ("Title", "Setext")}  # `------` underlines a level 2
    assert path_doc.headings_at(text.index("body")) == ("Title", "Setext")
    assert path_doc.pages is None


def _markdown(text: str) -> Document:
    from ragsift.sources.markdown import parse_markdown

    return parse_markdown(text, "t.md")


def test_render_markdown_tables_keeps_original_lines_and_remaps_maps():
    doc = _load(HANDBOOK, "beekeeping/handbook.md")
    out = render_markdown_tables(doc)
    assert "| National" not in out.text
    row = (
        "1. hive: National; frames: 11; strengths: common in the UK, parts easy to find; "
        "drawbacks: brood box is small for prolific queens"
    )
    assert row in out.text
    assert "4. hive: Warré; frames: 8" in out.text
    at = out.text.index(row)
    assert out.line_at(at) == _line_of(HANDBOOK, "| National")
    assert out.line_at(out.text.index("3. hive: Top bar")) == _line_of(HANDBOOK, "| Top bar")
    assert out.headings_at(at) == ("A Small Beekeeping Handbook", "Equipment")
    # Text after the table keeps its own lines, headings and pages.
    later = out.text.index("The varroa mite")
    assert out.line_at(later) == doc.line_at(doc.text.index("The varroa mite"))
    assert out.page_at(later) == 3
    assert out.headings_at(later) == ("A Small Beekeeping Handbook", "Varroa")
    # Unchanged text outside the table is identical.
    assert out.text.endswith(doc.text[doc.text.index("Light the smoker") :])


def test_render_markdown_tables_without_tables_is_identity():
    doc = _markdown("# A\n\nno table here\n")
    assert render_markdown_tables(doc) is doc


# -- plain text, rst, html -----------------------------------------------------------------


def test_plain_text_and_rst():
    doc = _load(FIXTURES / "sourdough.rst")  # through docutils: tests/test_rst.py
    assert doc.format == "rst" and doc.pages is None
    at = doc.text.index("A basic loaf")
    assert doc.headings_at(at) == ("Sourdough in one week", "A basic loaf")
    assert doc.line_at(at) == _line_of(FIXTURES / "sourdough.rst", "A basic loaf")
    txt = _load(FIXTURES / "field-notes.txt")
    assert txt.format == "text" and txt.text == (FIXTURES / "field-notes.txt").read_text()


def test_html_visible_text_headings_and_source_lines():
    path = FIXTURES / "tidepools.html"
    doc = _load(path)
    assert doc.format == "html"
    for hidden in ("window.visits", "font-family", "Enable JavaScript", "Analytics"):
        assert hidden not in doc.text
    # the page's <nav> ("Zones Safety") is chrome, not text (issue 41 item 4)
    assert doc.text.startswith("Exploring Tide Pools\n\n") and "Zones Safety" not in doc.text
    at = doc.text.index("Sea stars")
    assert doc.line_at(at) == _line_of(path, "<h3>Sea stars</h3>")
    assert doc.headings_at(at) == ("Exploring Tide Pools", "Who lives in a pool", "Sea stars")
    # A paragraph spanning source lines: each word run points at its own line.
    assert doc.line_at(doc.text.index("just far enough")) == _line_of(path, "just far enough")
    assert doc.headings_at(doc.text.index("Check the tide table")) == (
        "Exploring Tide Pools",
        "Visiting safely",
    )
    assert "Tide table | to know when the water turns\n" in doc.text
    assert "The high zone is covered only by the highest tides." in doc.text


def test_html_pre_keeps_whitespace_and_lines():
    src = "<p>a</p>\n<pre>\nx  = 1\n  y\n</pre>\n<p>b</p>\n"
    from ragsift.sources.html import parse_html

    doc = parse_html(src, "t.html")
    assert doc.text == "a\n\nx  = 1\n  y\n\nb\n"
    assert doc.line_at(doc.text.index("  y")) == 4
    assert doc.line_at(doc.text.index("b\n")) == 6


# -- json ----------------------------------------------------------------------------------


def test_json_units_document_and_line_map():
    path = FIXTURES / "recipes.json"
    doc = _load(path)
    assert doc.format == "json"
    lines = doc.text.splitlines()
    assert lines[0] == "title: Recipes from the honey shed; updated: 2024-09-14"
    crumpets = next(u for u in lines if u.startswith("name: Sourdough crumpets"))
    assert crumpets.startswith("name: Sourdough crumpets; serves: 8; minutes: 30; method: Stir")
    assert doc.line_at(doc.text.index(crumpets)) == _line_of(path, '"Sourdough crumpets"')
    assert doc.line_at(doc.text.index("250 g rolled oats")) == _line_of(path, "250 g rolled oats")
    storage = doc.text.index("storage: Flapjacks")
    assert doc.line_at(storage) == _line_of(path, '"storage"')
    assert "origin: Written for the ragsift fixture corpus.; licence: No rights reserved." in lines


def test_jsonl_units_point_at_their_record_line():
    path = FIXTURES / "kitchen-notes.jsonl"
    doc = _load(path)
    at = doc.text.index("date: 2024-06-21")
    assert doc.line_at(at) == 4
    assert "tide_height_m: 0.3" in doc.text.splitlines()[3]


def test_bad_json_reports_line_and_column(tmp_path):
    with pytest.raises(SkipFile, match=r"unparsable JSON: Expecting value at line 3 column 18"):
        _load(FIXTURES / "bad" / "broken.json")
    p = _write(tmp_path, "bad.jsonl", '{"a": 1}\n\n{"b": }\n')
    with pytest.raises(SkipFile, match=r"at line 3 column 7"):
        _load(p)
    p = _write(tmp_path, "deep.json", "[" * 5000 + "]" * 5000)
    with pytest.raises(SkipFile, match="nested too deeply"):
        _load(p)
    with pytest.raises(SkipFile, match="no text"):
        _load(_write(tmp_path, "nothing.json", '{"a": null, "b": [true, ""]}'))


def test_json_units_rules():
    assert json_units("One. Two!\n  Three  \n\nFour? five") == [
        "One.",
        "Two!",
        "Three",
        "Four?",
        "five",
    ]
    record = {
        "name": "Ada",
        "born": 1815,
        "alive": False,
        "spouse": None,
        "note": "",
        "bio": "Wrote notes.\nPublished 1843.",
    }
    assert json_units([record]) == ["name: Ada; born: 1815; bio: Wrote notes. Published 1843."]
    nested = {"a": 1, "b": {"c": "d", "e": [{"f": 2.5}, "g h. i"]}, "years": [1, 2, 3], "z": "w"}
    assert json_units(nested) == ["a: 1; z: w", "c: d", "f: 2.5", "g h.", "i", "years: 1, 2, 3"]
    assert json_units([None, True, False, "", "   ", [], {}]) == []
    assert json_units([1, 2, "x", float("nan")]) == ["1, 2", "x"]
    assert json_units(42) == [] and json_units(None) == []


def test_json_units_max_and_max_length():
    assert json_units(["a", "b", "c"], max=2) == ["a", "b"]
    assert json_units(["a"], max=0) == []
    cut = json_units("abcdefghij klm", max_length=5)
    assert cut == ["abcd…"] and len(cut[0]) == 5
    assert json_units("abcde", max_length=5) == ["abcde"]
    assert json_units("abcdef", max_length=1) == ["…"]
    assert text_units("A. " * 30) == ["A."] * 12
    assert all(len(u) <= 200 for u in text_units("word " * 500))
    assert text_units("x" * 300, max_length=10) == ["xxxxxxxxx…"]


def test_json_units_cycles_and_deep_nesting_never_raise():
    d: dict = {"name": "loop"}
    d["self"] = d
    lst: list = ["item"]
    lst.append(lst)
    assert json_units(d) == ["name: loop"]
    assert json_units(lst) == ["item"]
    deep: object = "bottom"
    for i in range(10_000):
        deep = [deep] if i % 2 else {"k": deep, "n": i}
    units = json_units(deep)
    assert "bottom" not in units and 0 < len(units) <= 100


# -- encodings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bom,encoding",
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ],
)
def test_bom_encodings_strip_the_bom(tmp_path, bom, encoding):
    text = "# Café\n\nNaïve “quotes”.\n"
    p = _write(tmp_path, "f.md", bom + text.encode(encoding))
    doc = _load(p)
    assert doc.text == text and doc.encoding == encoding and doc.warnings == ()
    assert doc.headings_at(0) == ("Café",)


def test_cp1252_fixture_decodes_with_a_warning():
    doc = _load(FIXTURES / "legacy" / "market-notes.txt")
    assert doc.encoding == "cp1252"
    assert doc.warnings == ("not UTF-8; decoded as cp1252",)
    assert "eleven o’clock" in doc.text and "café" in doc.text and "“the dark one”" in doc.text
    assert "£6.50" in doc.text and "€5" in doc.text


def test_latin1_and_declared_fallbacks_warn(tmp_path):
    doc = _load(_write(tmp_path, "l.txt", "Caf\xe9 cr\xe8me\n".encode("latin-1")))
    assert doc.text == "Café crème\n" and doc.warnings == ("not UTF-8; decoded as latin-1",)
    html = '<html><head><meta charset="windows-1251"></head><body><p>Привет</p></body></html>'
    doc = _load(_write(tmp_path, "r.html", html.encode("cp1251")))
    assert doc.text == "Привет\n"
    assert doc.warnings == ("not UTF-8; decoded as cp1251 (declared)",)
    coded = "# -*- coding: iso-8859-15 -*-\nprice: 5 €\n"
    doc = _load(_write(tmp_path, "c.txt", coded.encode("iso-8859-15")))
    assert doc.text == coded and doc.encoding == "iso8859-15"


# -- unusable files ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,reason",
    [
        ("blob.bin", "binary file (NUL bytes)"),
        ("empty.txt", "empty file"),
    ],
)
def test_bad_fixtures_are_skipped_with_a_reason(name, reason):
    with pytest.raises(SkipFile) as exc:
        _load(FIXTURES / "bad" / name)
    assert exc.value.reason == reason


def test_other_unusable_files(tmp_path, monkeypatch):
    with pytest.raises(SkipFile, match=r"^empty file \(only whitespace\)$"):
        _load(_write(tmp_path, "w.md", " \n\t\n"))
    with pytest.raises(SkipFile, match="binary file"):
        _load(_write(tmp_path, "ctl.txt", bytes([0x01, 0x02, 0x03, 0xFF] * 50)))
    with pytest.raises(SkipFile, match="undecodable"):
        _load(_write(tmp_path, "odd.txt", codecs.BOM_UTF16_LE + b"a\x00b"))
    with pytest.raises(SkipFile, match="no visible text"):
        _load(_write(tmp_path, "s.html", "<script>only()</script>"))
    with pytest.raises(SkipFile, match=r"binary file \(\.png"):
        _load(_write(tmp_path, "i.png", b"\x89PNG"))
    p = _write(tmp_path, "locked.md", "secret")

    real_open = os.open

    def denied(path, *args, **kwargs):  # tests run as root: chmod 000 would not stop a read
        if str(path) == str(p):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(SkipFile, match="^unreadable: permission denied$"):
        _load(p)


# -- pdf -----------------------------------------------------------------------------------


def _make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF with one Helvetica text line per entry."""
    n = len(pages)
    font = 3 + 2 * n
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{' '.join(f'{3 + 2 * i} 0 R' for i in range(n))}] "
        f"/Count {n} >>".encode(),
    ]
    for i, lines in enumerate(pages):
        content = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({t}) Tj T*" for t in lines) + " ET"
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources "
            f"<< /Font << /F1 {font} 0 R >> >> /Contents {4 + 2 * i} 0 R >>".encode()
        )
        objs.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream".encode())
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for k, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{k} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def test_pdf_pages_and_page_relative_lines(tmp_path):
    pytest.importorskip("pypdf")
    p = _write(tmp_path, "d.pdf", _make_pdf([["Bees fly.", "Honey sets."], ["Tides turn."]]))
    doc = _load(p)
    assert doc.format == "pdf"
    assert "Bees fly." in doc.text and "\n\nTides turn." in doc.text
    assert doc.page_at(doc.text.index("Honey sets.")) == 1
    assert doc.line_at(doc.text.index("Honey sets.")) == 2
    at = doc.text.index("Tides turn.")
    assert doc.page_at(at) == 2 and doc.line_at(at) == 1
    with pytest.raises(SkipFile, match="unreadable PDF"):
        _load(_write(tmp_path, "broken.pdf", b"%PDF-1.4\nnot really"))


def test_pdf_without_pypdf_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)  # makes `import pypdf` raise ImportError
    with pytest.raises(SkipFile) as exc:
        _load(_write(tmp_path, "d.pdf", _make_pdf([["x"]])))
    assert exc.value.reason == "PDF support needs the pdf extra: pip install 'ragsift[pdf]'"


# -- through the pipeline ------------------------------------------------------------------


def test_pipeline_iter_documents_on_fixtures(monkeypatch):
    from ragsift.ingest import ChunkSummary, iter_documents

    monkeypatch.chdir(FIXTURES.parent)
    summary = ChunkSummary()
    docs = list(iter_documents(["fixtures/"], summary=summary))
    assert [d.path for d in docs] == [
        "fixtures/beekeeping/handbook.md",
        "fixtures/field-notes.txt",
        "fixtures/kitchen-notes.jsonl",
        "fixtures/lantern/guide.md",
        "fixtures/legacy/market-notes.txt",
        "fixtures/recipes.json",
        "fixtures/sourdough.rst",
        "fixtures/tidepools.html",
    ]
    assert {s.path: s.reason for s in summary.skipped} == {
        "fixtures/bad/broken.json": "unparsable JSON: Expecting value at line 3 column 18",
        "fixtures/bad/empty.txt": "empty file",
    }
    assert summary.ignored == {"not a document type": 1}  # fixtures/bad/blob.bin
    assert summary.files == 10 and summary.parsed == 8
    words = sum(len(d.text.split()) for d in docs)
    assert words > 2500
    assert (
        json.dumps([d.warnings for d in docs if d.warnings]) == '[["not UTF-8; decoded as cp1252"]]'
    )
