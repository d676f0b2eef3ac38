"""Ingestion faults and doc folders as they are (issue 9 items 1, 2, 8, 9, 10, 11, 13, 14;
issue 10 section 1): real files in tmp_path, the real CLI, the real model where embedding is
involved. Each test fails on the code before these changes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from ragsift.cli._common import flag_name
from ragsift.errors import SkipFile, worded
from ragsift.sources import SourceFile, load_document, read_bytes, walk
from tests.conftest import run_cli


def _w(root: Path, rel: str | bytes, content: str | bytes = "# Title\n\nSome words here.\n"):
    if isinstance(rel, bytes):
        path = Path(os.fsdecode(os.path.join(os.fsencode(root), rel)))
    else:
        path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def _skip_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("ragsift: skipped ")]


def _docs(index: Path) -> list[str]:
    from ragsift.index import open_index

    with open_index(index) as store:
        return sorted(store.paths())


@pytest.fixture
def guard():
    """Fail instead of hanging if a read ever blocks (a FIFO opened without O_NONBLOCK)."""

    def boom(*_):
        raise TimeoutError("blocked on a read")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# -- item 1: a PATH that does not exist is a usage error ---------------------------------------


def test_missing_path_is_a_usage_error_and_leaves_the_index_alone(tmp_path):
    docs = tmp_path / "docs"
    _w(docs, "a.md", "# Bees\n\nHoneybees live in colonies.\n")
    index = tmp_path / "docs.db"
    proc = run_cli("embed", str(docs), "--index", str(index))
    assert proc.returncode == 0, proc.stderr
    before = index.read_bytes()

    proc = run_cli("embed", str(tmp_path / "typo"), "--index", str(index))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"ragsift: {tmp_path / 'typo'}: no such file or directory"
    ]
    assert _docs(index) == [f"{docs}/a.md"]
    assert index.read_bytes() == before

    # one good and one missing argument: still refused as a whole
    proc = run_cli("embed", str(docs), str(tmp_path / "typo"), "--index", str(index))
    assert proc.returncode == 2 and _docs(index) == [f"{docs}/a.md"]

    new = tmp_path / "new.db"
    proc = run_cli("embed", str(tmp_path / "nonexist"), "--index", str(new))
    assert proc.returncode == 2 and not new.exists()
    assert not list(tmp_path.glob("new.db*"))

    proc = run_cli("chunk", str(tmp_path / "nonexist"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr


def test_invalid_include_or_exclude_glob_is_one_usage_line(tmp_path):
    _w(tmp_path / "d", "a.md")
    for flag in ("--include", "--exclude"):
        proc = run_cli("chunk", str(tmp_path / "d"), flag, "[z-a]")
        assert proc.returncode == 2
        assert proc.stderr.splitlines() == [
            f"ragsift: {flag}: invalid pattern '[z-a]': bad character range z-a"
        ]
    new = tmp_path / "new.db"
    proc = run_cli("embed", str(tmp_path / "d"), "--include", "[z-a]", "--index", str(new))
    assert proc.returncode == 2 and not new.exists()


# -- item 2: prune only what is certainly gone ---------------------------------------------------


def test_unlistable_folder_is_kept_and_reported_vanished_file_is_pruned(tmp_path, monkeypatch):
    from ragsift.ingest import BuildHooks, BuildRequest, build_index

    docs = tmp_path / "docs"
    _w(docs, "keep/a.md", "# Alpha\n\nAnemones live in tide pools.\n")
    _w(docs, "keep/b.md", "# Beta\n\nBees make honey from nectar.\n")
    _w(docs, "top.md", "# Top\n\nA lantern needs a trimmed wick.\n")
    _w(docs, "gone.md", "# Gone\n\nThis file will be deleted.\n")
    index = tmp_path / "i.db"
    first = build_index(BuildRequest.of(index, [str(docs)]))
    assert first.parsed == 4 and not first.skipped

    (docs / "gone.md").unlink()
    real_scandir = os.scandir
    broken = {str(docs / "keep")}

    def scandir(path="."):
        # Tests run as root, where chmod 000 does not stop a listing: fail it here instead.
        if os.fspath(path) in broken:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    skipped = []
    second = build_index(BuildRequest.of(index, [str(docs)]), BuildHooks(on_skip=skipped.append))
    assert [(s.path, s.reason) for s in skipped] == [(f"{docs}/keep", "permission denied")]
    assert second.removed == 1  # gone.md: its folder was listed and it is not there
    assert _docs(index) == [f"{docs}/keep/a.md", f"{docs}/keep/b.md", f"{docs}/top.md"]

    # the same for a folder that vanished between being seen and being listed
    def vanished(path="."):
        if os.fspath(path) in broken:
            raise FileNotFoundError(2, "No such file or directory", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", vanished)
    third = build_index(BuildRequest.of(index, [str(docs)]))
    assert third.removed == 0 and len(third.skipped) == 1
    assert _docs(index) == [f"{docs}/keep/a.md", f"{docs}/keep/b.md", f"{docs}/top.md"]

    # once the folder really is gone from a listed parent, its documents go
    monkeypatch.setattr(os, "scandir", real_scandir)
    for p in (docs / "keep").iterdir():
        p.unlink()
    (docs / "keep").rmdir()
    fourth = build_index(BuildRequest.of(index, [str(docs)]))
    assert fourth.removed == 2 and _docs(index) == [f"{docs}/top.md"]


def test_walk_reports_listed_folders_and_may_prune(tmp_path, monkeypatch):
    _w(tmp_path, "a/x.md")
    _w(tmp_path, "b/y.md")
    real_scandir = os.scandir
    monkeypatch.setattr(
        os,
        "scandir",
        lambda p=".": (
            (_ for _ in ()).throw(OSError(5, "Input/output error"))
            if os.fspath(p) == str(tmp_path / "b")
            else real_scandir(p)
        ),
    )
    w = walk([str(tmp_path)])
    assert str(tmp_path) in w.listed and str(tmp_path / "a") in w.listed
    assert str(tmp_path / "b") not in w.listed
    assert [(s.path, s.reason) for s in w.skipped] == [(f"{tmp_path}/b", "input/output error")]
    assert w.may_prune(str(tmp_path / "a" / "old.md"))
    assert w.may_prune(str(tmp_path / "c" / "deep" / "old.md"))  # c/ is gone from a listing
    assert not w.may_prune(str(tmp_path / "b" / "y.md"))
    assert not w.may_prune(str(tmp_path / "b" / "sub" / "z.md"))


# -- item 8: one bad file never stops a run --------------------------------------------------------


def _messy(root: Path) -> None:
    _w(root, "good.md", "# Good\n\nHoneybees store nectar as honey in wax combs.\n")
    _w(root, "other.txt", "Tide pools hold anemones and crabs.\n")
    _w(root, b"latin\xe9-\xff.md", "# Latin\n\nA file whose name is not UTF-8.\n")
    _w(root, ".gitignore", "[z-a]\n*.tmp\n")
    _w(root, "scratch.tmp", "ignored by .gitignore\n")
    _w(root, "escape.txt", b"# -*- coding: unicode_escape -*-\n\\ud800 caf\xe9 notes\n")
    _w(root, "big.json", '{"n": ' + "7" * 5000 + ', "note": "a very long number"}')


def test_messy_folder_one_line_per_problem_and_the_rest_is_indexed(tmp_path):
    docs = tmp_path / "docs"
    _messy(docs)
    proc = run_cli("chunk", str(docs))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    records = [
        json.loads(line) for line in proc.stdout.encode("utf-8").decode("utf-8").splitlines()
    ]
    paths = sorted({r["path"] for r in records})
    assert paths == sorted(
        f"{docs}/{n}"
        for n in ("good.md", "other.txt", "latin\\xe9-\\xff.md", "escape.txt", "big.json")
    )
    assert any("7" * 5000 in r["text"] for r in records)
    assert (
        f"ragsift: warning: {docs}/.gitignore: line 1: invalid pattern '[z-a]': bad "
        "character range z-a (pattern ignored)" in proc.stderr.splitlines()
    )
    assert "scratch.tmp" not in proc.stdout  # the file's other patterns still apply
    escape = [r for r in records if r["path"].endswith("escape.txt")]
    assert "\\ud800" in escape[0]["text"]  # text as written, never a lone surrogate

    index = tmp_path / "m.db"
    proc = run_cli("embed", str(docs), "--index", str(index), "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["parsed"] == 5 and s["skipped"] == []
    assert f"{docs}/latin\\xe9-\\xff.md" in _docs(index)
    again = run_cli("embed", str(docs), "--index", str(index), "--json")
    assert json.loads(again.stdout)["unchanged"] == 5 and again.returncode == 0


def test_chunk_jsonl_is_valid_utf8_for_undecodable_names(tmp_path):
    _w(tmp_path, b"caf\xe9.md", "# Caf\n\nCoffee notes.\n")
    proc = run_cli("chunk", str(tmp_path))
    assert proc.returncode == 0
    rec = json.loads(proc.stdout.splitlines()[0])
    assert rec["path"] == f"{tmp_path}/caf\\xe9.md" and rec["id"].startswith(rec["path"])


def test_huge_json_integer_is_kept_as_written(tmp_path):
    p = _w(tmp_path, "n.json", "[" + "9" * 5000 + "]")
    doc = load_document(SourceFile(p, "n.json", p.stat().st_size, 0.0))
    assert "9" * 5000 in doc.text


def test_declared_unicode_escape_never_yields_surrogates(tmp_path):
    p = _w(tmp_path, "e.txt", b"# coding: unicode_escape\n\\ud800 \xff\n")
    doc = load_document(SourceFile(p, "e.txt", 0, 0.0))
    doc.text.encode("utf-8")  # raises on a lone surrogate
    assert doc.warnings and "unicode" not in doc.encoding


# -- item 9: only regular files, bounded reads ---------------------------------------------------


def test_devices_are_refused_and_fifos_never_block(tmp_path, guard):
    proc = run_cli("chunk", "/dev/zero", timeout=120)
    assert proc.returncode == 3
    assert (
        proc.stderr.splitlines()[0]
        == "ragsift: skipped /dev/zero: not a regular file (character device)"
    )

    docs = tmp_path / "docs"
    _w(docs, "a.md")
    os.mkfifo(docs / "pipe.md")
    (docs / "zero.md").symlink_to("/dev/zero")
    (docs / "rand.txt").symlink_to("/dev/urandom")
    proc = run_cli("chunk", str(docs), timeout=120)
    assert proc.returncode == 3
    assert _skip_lines(proc.stderr) == [
        (f"ragsift: skipped {docs}/pipe.md: not a regular file (FIFO)")
    ]
    assert "2 ignored: symlink out of the folder (see --follow-links)" in proc.stderr
    proc = run_cli("chunk", str(docs), "--follow-links", timeout=120)
    assert sorted(_skip_lines(proc.stderr)) == sorted(
        f"ragsift: skipped {docs}/{n}: not a regular file ({k})"
        for n, k in (
            ("pipe.md", "FIFO"),
            ("zero.md", "character device"),
            ("rand.txt", "character device"),
        )
    )


def test_a_file_replaced_by_a_fifo_after_listing_is_skipped(tmp_path, guard):
    _w(tmp_path, "a.md")
    w = walk([str(tmp_path)])
    (tmp_path / "a.md").unlink()
    os.mkfifo(tmp_path / "a.md")  # nobody will ever write to it
    with pytest.raises(SkipFile, match=r"^not a regular file \(FIFO\)$"):
        read_bytes(w.files[0])


def test_size_cap_skips_with_one_line_and_a_flag_raises_it(tmp_path):
    _w(tmp_path, "small.md", "# S\n\nShort.\n")
    _w(tmp_path, "big.txt", "word " * 1000)  # 5,000 bytes
    proc = run_cli("chunk", str(tmp_path), "--max-file-size", "4k")
    assert proc.returncode == 3
    assert _skip_lines(proc.stderr) == [
        (
            f"ragsift: skipped {tmp_path}/big.txt: too large (4.9 KiB; the cap is 4 KiB; "
            "--max-file-size raises it)"
        )
    ]
    assert run_cli("chunk", str(tmp_path), "--max-file-size", "8k").returncode == 0
    assert run_cli("chunk", str(tmp_path), "--max-file-size", "lots").returncode == 2


def test_explicit_fifo_argument_is_read_as_a_stream(tmp_path):
    import subprocess

    fifo = tmp_path / "notes.md"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"printf '# Notes\\n\\nFrom a pipe.\\n' > {fifo}"])
    try:
        proc = run_cli("chunk", str(fifo), timeout=120)
    finally:
        writer.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"].startswith("# Notes")


# -- item 10: embed - records --------------------------------------------------------------------


def test_stdin_records_with_surrogates_huge_numbers_or_bad_bytes_are_one_line_each(tmp_path):
    index = tmp_path / "s.db"
    good = {"path": "a", "index": 0, "text": "Honeybees make honey."}
    lines = [
        json.dumps(good),
        json.dumps({**good, "index": 1, "text": "bad \ud800 text"}),
        json.dumps({**good, "index": 2, "page": 10**30}),
        json.dumps({**good, "index": 3, "level": -(10**40)}),
    ]
    data = ("\n".join(lines) + "\n").encode() + b'{"path": "b\xff", "index": 0}\n'
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "ragsift", "embed", "-", "--index", str(index)],
        input=data,
        capture_output=True,
        timeout=300,
        check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "internal error" not in err
    assert _skip_lines(err) == [
        (
            "ragsift: skipped stdin line 2: field 'text' holds a lone surrogate (\\ud800-\\udfff "
            "is not text)"
        ),
        "ragsift: skipped stdin line 3: field 'page' is out of range (31 digits)",
        "ragsift: skipped stdin line 4: field 'level' is out of range (41 digits)",
        (
            "ragsift: skipped stdin line 5: not UTF-8 (byte 11); expected records as printed by "
            "`ragsift chunk`"
        ),
    ]
    assert _docs(index) == ["a"]


# -- item 11: pypdf stays quiet ------------------------------------------------------------------


def test_broken_pdf_is_one_skip_line(tmp_path):
    pytest.importorskip("pypdf")
    _w(tmp_path, "a.md")
    _w(tmp_path, "junk.pdf", b"this is not a pdf at all\n" * 20)
    _w(tmp_path, "cut.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n")
    proc = run_cli("chunk", str(tmp_path))
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert all(ln.startswith("ragsift: ") for ln in lines), lines
    assert [ln.split(":")[1] for ln in _skip_lines(proc.stderr)] == [
        f" skipped {tmp_path}/cut.pdf",
        f" skipped {tmp_path}/junk.pdf",
    ]
    assert len(lines) == 3  # two skips and the summary


# -- item 14: symlink policy ---------------------------------------------------------------------


def test_links_inside_the_tree_are_followed_links_out_need_follow_links(tmp_path):
    outside = tmp_path / "outside"
    _w(outside, "secret.md", "# Secret\n\nOutside the docs folder.\n")
    docs = tmp_path / "docs"
    _w(docs, "real/page.md", "# Page\n\nInside.\n")
    _w(docs, "notes.md", "# Notes\n\nAlso inside.\n")
    (docs / "alias.md").symlink_to(docs / "notes.md")  # same file: listed once
    (docs / "link-in").symlink_to(docs / "real")  # a folder already walked: once
    (docs / "link-out").symlink_to(outside)
    (docs / "out.md").symlink_to(outside / "secret.md")
    w = walk([str(docs)])
    # first sighting wins (entries sorted by name): link-in/ comes before real/
    assert [f.relpath for f in w.files] == [f"{docs}/alias.md", f"{docs}/link-in/page.md"]
    # the reason names the parameter: the API's words as the key, the CLI's flag worded
    assert w.ignored_counts() == {"symlink out of the folder (see follow_links)": 2}
    (reason,) = w.ignored_counts()
    assert worded(reason, flag_name) == "symlink out of the folder (see --follow-links)"
    w = walk([str(docs)], follow_links=True)
    assert [f.relpath for f in w.files] == [
        f"{docs}/alias.md",
        f"{docs}/link-in/page.md",
        f"{docs}/out.md",
    ]  # = link-out/secret.md
    # a link named as an argument is what the user asked for
    assert [f.relpath for f in walk([str(docs / "out.md")]).files] == [f"{docs}/out.md"]


# -- issue 10 §1: doc folders as they are ----------------------------------------------------


def _docs_with_assets(root: Path) -> None:
    _w(root, "index.md", "# Guide\n\nRun the tool with a required option.\n")
    _w(root, "usage.adoc", "= Usage\n\nAsciiDoc is read as text.\n")
    _w(root, "img/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64))
    _w(root, "img/icon.svg", "<svg xmlns='http://www.w3.org/2000/svg'><text>x</text></svg>")
    _w(root, "css/site.css", "body { color: red; }\n")
    _w(root, "js/app.js", "console.log('hello');\n")


def test_assets_are_ignored_counted_and_do_not_change_the_exit_code(tmp_path):
    docs = tmp_path / "docs"
    _docs_with_assets(docs)
    proc = run_cli("chunk", str(docs))
    assert proc.returncode == 0, proc.stderr
    paths = sorted({json.loads(x)["path"] for x in proc.stdout.splitlines()})
    assert paths == [f"{docs}/index.md", f"{docs}/usage.adoc"]
    assert _skip_lines(proc.stderr) == []
    assert "0 skipped, 4 ignored: not a document type" in proc.stderr
    # --include widens (and replaces) the default set; containers stay out
    proc = run_cli(
        "chunk", str(docs), "--include", "*.css", "--include", "*.md", "--include", "*.png"
    )
    paths = sorted({json.loads(x)["path"] for x in proc.stdout.splitlines()})
    assert paths == [f"{docs}/css/site.css", f"{docs}/index.md"] and proc.returncode == 0
    # named on the command line: always read
    proc = run_cli("chunk", str(docs / "css/site.css"))
    assert proc.returncode == 0 and json.loads(proc.stdout)["path"].endswith("site.css")


def test_make_step_green_when_complete_red_on_a_real_failure(tmp_path):
    docs = tmp_path / "docs"
    _docs_with_assets(docs)
    index = tmp_path / "docs.db"
    for _ in range(2):  # a Makefile step re-run: green both times
        proc = run_cli("embed", str(docs), "--index", str(index))
        assert proc.returncode == 0, proc.stderr
        assert "4 ignored: not a document type" in proc.stderr
    _w(docs, "broken.json", "{ not json")
    proc = run_cli("embed", str(docs), "--index", str(index))
    assert proc.returncode == 3  # a document that failed to parse is still a skip
    assert _skip_lines(proc.stderr) == [
        (
            f"ragsift: skipped {docs}/broken.json: unparsable JSON: Expecting property name "
            "enclosed in double quotes at line 1 column 3"
        )
    ]
    proc = run_cli("embed", str(docs), "--index", str(index), "--skips-ok")
    assert proc.returncode == 0 and len(_skip_lines(proc.stderr)) == 1
    proc = run_cli("embed", str(tmp_path / "nope"), "--index", str(index), "--skips-ok")
    assert proc.returncode == 2  # --skips-ok never hides a usage error


def test_chunk_prints_exactly_what_embed_indexes(tmp_path, fixtures_dir):
    from ragsift.index import open_index

    index = tmp_path / "fx.db"
    args = [str(fixtures_dir), "--exclude", "bad"]
    proc = run_cli("embed", *args, "--index", str(index))
    assert proc.returncode == 0, proc.stderr
    chunked = run_cli("chunk", *args)
    assert chunked.returncode == 0, chunked.stderr
    printed = [json.loads(x) for x in chunked.stdout.splitlines()]
    with open_index(index) as store:
        rowids, _ = store.load_matrix()
        stored = store.chunks([int(r) for r in rowids])
    fields = list(printed[0])

    def key(r):
        return (r["path"], r["index"])

    assert [{f: r[f] for f in fields} for r in sorted(stored, key=key)] == sorted(printed, key=key)
    assert max(r["tokens"] for r in printed) <= 256  # the model's max length, not 512 cl100k


def test_gitignore_that_is_a_fifo_never_blocks_and_is_named(tmp_path, guard):
    _w(tmp_path, "a.md")
    os.mkfifo(tmp_path / ".gitignore")
    w = walk([str(tmp_path)])
    assert [f.relpath for f in w.files] == [f"{tmp_path}/a.md"]
    assert w.warnings == [(f"{tmp_path}/.gitignore", "not applied: not a regular file (FIFO)")]


def test_files_left_out_by_the_rules_are_pruned_like_deleted_ones(tmp_path):
    docs = tmp_path / "docs"
    _docs_with_assets(docs)
    index = tmp_path / "docs.db"
    proc = run_cli("embed", str(docs), "--index", str(index), "--include", "*", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ignored"] == 1  # the .png: a container, even with '*'
    assert len(_docs(index)) == 5
    # the default set: CSS, JS and SVG are now ignored, so their documents go
    proc = run_cli("embed", str(docs), "--index", str(index), "--json")
    s = json.loads(proc.stdout)
    assert proc.returncode == 0 and s["removed"] == 3 and s["ignored"] == 4
    assert _docs(index) == [f"{docs}/index.md", f"{docs}/usage.adoc"]


def test_pdfs_are_ignored_with_a_reason_when_the_extra_is_missing(tmp_path, monkeypatch):
    from ragsift.sources import formats

    _w(tmp_path, "a.md")
    _w(tmp_path, "b.pdf", b"%PDF-1.4\n")
    monkeypatch.setattr(formats, "_PDF", [False])  # as if pypdf were not installed
    w = walk([str(tmp_path)])
    assert [f.relpath for f in w.files] == [f"{tmp_path}/a.md"]
    assert w.ignored_counts() == {"PDF (needs the pdf extra: pip install 'ragsift[pdf]')": 1}
    monkeypatch.setattr(formats, "_PDF", [True])
    assert [f.relpath for f in walk([str(tmp_path)]).files] == [
        f"{tmp_path}/a.md",
        f"{tmp_path}/b.pdf",
    ]
