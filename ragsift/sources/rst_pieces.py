"""A long ``.rst`` file cut into pieces that docutils parses one at a time (issue 30).

Why: docutils' work is not linear in a document's size. Each section, list and explicit
markup block hands its nested parser a copy of the rest of the document's lines (a
``StringList`` slice), so time grows with (blocks × lines): ×2.1–2.4 per doubling, a 10 MB
file 3.6× the time of the same bytes read as text. Its doctree costs ~300× the bytes of a
table (a node per cell), and all of it is alive until the whole file is rendered.

What: ``pieces(text)`` cuts the text at lines where the parser is back at the document's
top level, so that parsing each piece alone renders what parsing the whole would:

- a **cut point** is a line at column 0 after a blank line (or a section title there),
  outside a simple table (which may hold blank lines) and not an enumerated list item (a
  list cut in two would number its second half from 1);
- a piece ends at the first cut point after ``PIECE_CHARS`` characters or ``PIECE_LINES``
  lines (a table's rows are short and cost a node per cell), and before any
  section title shallower than the piece's first title. Title levels come from this file's
  own scan, in order of first appearance (as docutils assigns them), and a piece is
  rendered at its first title's depth, so headings keep their ``#`` count across pieces;
- a table longer than ``PIECE_ROWS`` lines (docutils keeps ~7 KiB per row of it) is cut
  between rows too: a piece ends at its first row past ``PIECE_ROWS`` lines, closed by the
  table's border (a simple table) or the row separator there (a grid table), and the next
  piece starts with that border (a line that is not the file's: ``Piece.lead``) or at that
  separator; each row renders as in the whole table, the header rows once, at the lines
  docutils numbers its cells with (see "long tables" below). Only a well-formed table is
  cut, and none in a document with footnotes, citations or anonymous targets (which pieces
  would number or match on their own);
- pieces are exact slices of the text, split on ``str.splitlines`` line ends (what docutils
  and the renderer count), so the line map stays exact: a piece's line n is line
  ``first_line + n`` of the file (after its ``lead`` lines; a piece cut in a simple table
  ends with the border, a line that is not the file's).

Bounds: a file whose lines nest deeper than ``MAX_DEPTH`` indentation levels, or with a
stretch between two cut points longer than ``MAX_BLOCK_LINES`` lines or ``MAX_BLOCK_CHARS``
characters (one table of 100k rows, a 10 MB indented block), is not given to docutils:
``pieces`` raises ``ValueError`` naming the place and the loader reads the file as plain
text, with one warning (a long table counts as one stretch there, cut or not). Measured
(bench/RESULTS.md, "Bounded work per document"): a piece of 64 KiB parses at the rate of
small files; a simple table takes ~7 KiB of memory per row in docutils, so a piece of a long
table ~350 KiB, and a table that is not cut up to ~30 MB (4,000 rows).

References across pieces: a piece that refers to a name defined in another piece (a
section title, ``.. _target:``, a ``|substitution|``) gets, after its own lines, a stub
target of that name or a copy of the substitution's definition, so the reference renders
as it would in the whole document (targets and definitions render as nothing, and nothing
before them moves). Not carried across: auto-numbered footnotes (``[#]_`` numbers restart
in each piece) and anonymous targets. A document within ``PIECE_CHARS`` and ``PIECE_LINES``
and without a table longer than ``PIECE_ROWS`` lines is one piece: parsed exactly as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

PIECE_CHARS = 64 * 1024  # a piece ends at the first cut point past this many characters
PIECE_LINES = 500  # ... or lines (a table's short rows cost a node each: ~7 KiB per row)
PIECE_ROWS = 50  # ... or, inside a long table, at the first row past this many lines
MAX_BLOCK_LINES = 4_000  # an uncuttable stretch longer than this: the file is read as text
MAX_BLOCK_CHARS = 1024 * 1024
MAX_DEPTH = 32  # indentation levels: docutils recurses (and copies lines) once per level
# docutils' line_length_limit (rst._base_settings passes it): past it docutils parses nothing
# and says so only in the doctree (the file rendered empty); its inline parser is quadratic
# in a line's length, which is why the limit exists
MAX_LINE_CHARS = 10_000

# a line of one repeated 7-bit punctuation character: a title's adornment (docutils' rule)
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1* *$")
# a simple table's border: columns of "=" separated by spaces (two columns at least)
_TABLE_BORDER = re.compile(r"=+( +=+)+ *$")
# an enumerated list item: "1. ", "#) ", "(a) ", "iv. "
_ENUMERATED = re.compile(r"(\(?([0-9]+|[a-zA-Z]|#|[ivxlcdmIVXLCDM]+)[.)])( |$)")


@dataclass(frozen=True)
class Piece:
    """``text`` is lines ``first_line + 1 …`` of the file (1-based); ``depth``: the
    nesting depth of its first section title (0 for the top level). ``lead``: how many of
    its first lines are not the file's (a long table's border before its next rows: line
    ``n`` of ``text`` is still line ``first_line + n`` of the file for ``n > lead``)."""

    text: str
    first_line: int
    depth: int
    lead: int = 0


def pieces(text: str, piece_chars: int | None = None) -> list[Piece]:
    """The pieces of ``text`` (see the module docstring); one piece when it is short.
    ``piece_chars``: the target size (default ``PIECE_CHARS``)."""
    piece_chars = PIECE_CHARS if piece_chars is None else piece_chars
    _check_depth(text)
    lines = text.splitlines(keepends=True)
    _check_lines(lines)
    if len(text) <= piece_chars and len(lines) <= PIECE_ROWS:  # (no long table either)
        return [Piece(text, 0, 0)]
    cuts, levels = _cut_points(lines)
    _check_blocks(lines, cuts)
    rows = _table_rows(text, lines, cuts)
    if rows:
        cuts = sorted({*cuts, *rows})
    out: list[Piece] = []
    start, size, first_level, prev = 0, 0, levels.get(0), 0
    for cut in cuts:
        size += sum(len(line) for line in lines[prev:cut])
        prev = cut
        level = levels.get(cut)
        if cut > start and (
            size >= piece_chars
            or cut - start >= PIECE_LINES
            or (cut in rows and cut - start >= PIECE_ROWS)
            or (level is not None and first_level is not None and level < first_level)
        ):
            out.append(_piece(lines, start, cut, first_level, rows))
            start, size, first_level = cut, 0, None
        if level is not None and first_level is None:
            first_level = level
    out.append(_piece(lines, start, len(lines), first_level, rows))
    if len(out) > 1:
        out = _with_references(out, lines, levels)
    return out


def _piece(
    lines: list[str], start: int, end: int, first_level: int | None, rows: dict[int, str | None]
) -> Piece:
    """Lines ``start`` to ``end``; where either is a row of a long table, with the border
    that makes the rows there a table of their own (``_table_rows``)."""
    text = "".join(lines[start:end])
    lead = 0
    if end in rows:  # (a simple table's border after its rows; a grid table's separator)
        text += rows[end] or lines[end]
    border = rows.get(start)
    if border:  # a simple table's border before its rows: a line that is not the file's
        text, lead = border + text, 1
    return Piece(text, start - lead, (first_level or 1) - 1, lead)


# names a piece defines and names it refers to (docutils' reference-name syntax, simplified):
# a target is ``.. _name:`` at a line's start, or an inline ``_`name``` not after a word
# character or a backtick; a substitution is defined by ``.. |name|`` at a line's start. (One
# pattern, r"^\.\. _(`[^`]+`|[^:`\n][^:\n]*):|(?<![\w`])_`([^`\n]+)`" in MULTILINE mode, is
# what ``_targets`` finds; it was tried at every position of the text, twice per piece: most
# of this function's time. Patterns that start with a literal are searched for fast.)
_TARGET_LINE = re.compile(r"\.\. _(`[^`]+`|[^:`\n][^:\n]*):")  # at the text's start,
_TARGET_AFTER_LINE = re.compile(r"\n\.\. _(`[^`]+`|[^:`\n][^:\n]*):")  # or after a "\n"
_INLINE_TARGET = re.compile(r"_`([^`\n]+)`")
_SUBSTITUTION = re.compile(r"\.\. \|([^|\n]+)\|")
_SUBSTITUTION_AFTER_LINE = re.compile(r"\n\.\. \|([^|\n]+)\|")
_PHRASE_REF = re.compile(r"`([^`<>]+)`__?(?![\w`])")
_WORD_REF = re.compile(r"(?<![\w`|])([A-Za-z0-9]+(?:[-._+:][A-Za-z0-9]+)*)__?$")
_REF_END = re.compile(r"_(?![\w`])")  # where a word reference can end: found fast, then
# the word before it is read (a scan for the word pattern at every position was most of
# this module's time)


def _word_refs(text: str) -> set[str]:
    found: set[str] = set()
    for m in _REF_END.finditer(text):
        ref = _WORD_REF.search(text, max(0, m.start() - 200), m.end())
        if ref is not None:
            found.add(_name(ref.group(1)))
    return found


_SUBSTITUTION_REF = re.compile(r"\|([^|\s][^|\n]*)\|")


def _at_line_starts(
    first: re.Pattern[str], after_line: re.Pattern[str], text: str
) -> list[re.Match[str]]:
    """The matches of ``first`` at the start of a line of ``text`` (``after_line`` is the
    same pattern after a "\n"), left to right, none inside another: those of ``^first`` in
    MULTILINE mode."""
    found: list[re.Match[str]] = []
    m = first.match(text)
    if m is not None:
        found.append(m)
    found += after_line.finditer(text, m.end() if m is not None else 0)
    return found


def _targets(text: str) -> set[str]:
    """The names of the targets ``text`` defines (see ``_TARGET_LINE``): the line targets,
    then the inline ones outside them, found as one left-to-right scan would."""
    names: set[str] = set()
    spans: list[tuple[int, int]] = []
    for m in _at_line_starts(_TARGET_LINE, _TARGET_AFTER_LINE, text):
        names.add(_name(m.group(1)))
        spans.append((m.start(1) - 4, m.end()))  # (from the line's "..")
    k, pos = 0, 0
    while (m := _INLINE_TARGET.search(text, pos)) is not None:
        at = m.start()
        while k < len(spans) and spans[k][1] <= at:
            k += 1
        if k < len(spans) and spans[k][0] <= at:  # inside a line target: the scan goes on
            pos = spans[k][1]  # after it
        elif at and not _starts_inline(text, at):
            pos = at + 1
        else:
            names.add(_name(m.group(1)))
            pos = m.end()
    return names


def _starts_inline(text: str, at: int) -> bool:
    """Whether inline markup may start at ``at`` (docutils' rule: after whitespace, an
    opening bracket or quote, or a delimiter such as ``-``, ``/``, ``:``)."""
    return bool(_inline_start().match(text, at - 1))


@cache
def _inline_start() -> re.Pattern[str]:
    from docutils.utils import punctuation_chars

    return re.compile(rf"\s|[{punctuation_chars.openers}{punctuation_chars.delimiters}]")


def _name(text: str) -> str:
    """docutils' ``fully_normalize_name``: lower case, whitespace runs as one space."""
    return " ".join(text.strip("`").split()).lower()


def _with_references(parts: list[Piece], lines: list[str], levels: dict[int, int]) -> list[Piece]:
    """Each piece with stubs for the names it refers to that another piece defines. Each
    piece's text is scanned once for each kind of name."""
    targets: set[str] = {
        _name(lines[i + 1] if _ADORNMENT.match(lines[i].rstrip()) else lines[i]) for i in levels
    }
    substitutions: dict[str, str] = {}
    defined: list[tuple[set[str], set[str]]] = []  # each piece's targets and substitutions
    for part in parts:
        own = _targets(part.text)
        targets |= own
        own_subs: set[str] = set()
        for m in _at_line_starts(_SUBSTITUTION, _SUBSTITUTION_AFTER_LINE, part.text):
            name = _name(m.group(1))
            own_subs.add(name)
            substitutions.setdefault(name, _definition(part.text, m.start(1) - 4))
        defined.append((own, own_subs))
    out: list[Piece] = []
    for part, (own, own_subs) in zip(parts, defined):
        wanted = {_name(m.group(1)) for m in _PHRASE_REF.finditer(part.text)}
        wanted |= _word_refs(part.text)
        stubs = [
            f".. _`{name}`: #"
            for name in sorted((wanted & targets) - own)
            if "`" not in name and "\\" not in name
        ]
        used = {_name(m.group(1)) for m in _SUBSTITUTION_REF.finditer(part.text)}
        stubs += [substitutions[name] for name in sorted(used - own_subs) if name in substitutions]
        if stubs:
            part = Piece(
                part.text.rstrip("\n") + "\n\n" + "\n\n".join(stubs) + "\n",
                part.first_line,
                part.depth,
                part.lead,
            )
        out.append(part)
    return out


def _definition(text: str, at: int) -> str:
    """The substitution definition starting at ``at``: its line and the indented ones after."""
    rows = text[at:].split("\n", 64)[:64]  # a definition is a few lines
    block = [rows[0]]
    for row in rows[1:]:
        if row.strip() and not row[0].isspace():
            break
        block.append(row)
    return "\n".join(block).rstrip()


def _cut_points(lines: list[str]) -> tuple[list[int], dict[int, int]]:
    """Line indexes where a piece may start (after the first line), and the title level of
    every title at such a line (the first line included)."""
    cuts: list[int] = []
    levels: dict[int, int] = {}
    styles: list[object] = []
    in_table = False
    n = len(lines)
    for i in range(n):
        line = lines[i].rstrip()
        if in_table:
            # a simple table ends at a border followed by a blank line or the end
            if _TABLE_BORDER.match(line) and (i + 1 >= n or not lines[i + 1].strip()):
                in_table = False
            continue
        if (i and lines[i - 1].strip()) or not line or line[0].isspace():
            continue
        if _TABLE_BORDER.match(line):  # a simple table starts: no cut until it ends
            in_table = True
            if i:
                cuts.append(i)
            continue
        if _ENUMERATED.match(line):
            continue
        style = _title_style(lines, i)
        if style is not None:
            if style not in styles:
                styles.append(style)
            levels[i] = styles.index(style) + 1
        if i:
            cuts.append(i)
    return cuts, levels


def _title_style(lines: list[str], i: int) -> object | None:
    """docutils' style of the section title starting at line ``i``: the underline character,
    or (overline, underline) for a title with an overline; None when it is not a title."""
    if i + 1 >= len(lines):
        return None
    first = lines[i].rstrip()
    second = lines[i + 1].rstrip()
    if _ADORNMENT.match(first):
        third = lines[i + 2].rstrip() if i + 2 < len(lines) else ""
        if second.strip() and third == first and not _ADORNMENT.match(second.strip()):
            return (first[0], third[0])
        return None
    if _ADORNMENT.match(second) and (len(second) >= 4 or len(second) >= len(first)):
        return second[0]
    return None


# -- long tables ---------------------------------------------------------------------------
# A table is one block however long, and docutils keeps ~7 KiB per row of it: a table longer
# than PIECE_ROWS lines is cut between rows, and each piece's rows made a table of their own
# (a simple table gets its top border before its next rows and after the rows before them; a
# grid table is cut at a row separator, which ends one piece and starts the next). Every row
# renders as it would in the whole table (the header rows once, in the first piece).
#
# Where a row's rendered lines are said to come from: docutils numbers what a table's cells
# hold (a paragraph: its first line), and the renderer (rst._Renderer._row_spans) gives a
# row the lines from the first to the last its cells' text is on. Those numbers are the same
# whether the row is parsed in the whole table or in a piece of it (a piece is the file's
# lines, its first line's number known), so a cut table says the same lines, as long as
# docutils numbers something in every row: a table is cut only when every row has a cell
# with words in it, and no cell line is explicit markup (``..``: a comment is not numbered)
# or a line without a word (``::``, a title's adornment, a border: what a cell may not hold
# or holds unnumbered); any other table is parsed whole, as before. (No row says a line past
# its own last, so a piece cut in a table ends with its border and needs no line after it.)

# footnotes and citations (numbered per document, and found by name across it) and anonymous
# targets (matched by their order): pieces would number and match them each on its own, so
# a document with any of them keeps its tables whole, its pieces those it had before
_NUMBERED = ("\n.. [", "\n.. __:", "\n__ ")
_GRID_TOP = re.compile(r"\+-[-+]+-\+ *$")  # docutils' grid_table_top_pat
_SIMPLE_BORDER = re.compile(r"=+[ =]*$")  # docutils' simple_table_border_pat
_SPAN_LINE = re.compile(r"-[ -]*$")  # a simple table's column span underline
_WORD = re.compile(r"\w")


def _table_rows(text: str, lines: list[str], cuts: list[int]) -> dict[int, str | None]:
    """The rows where a long table may be cut: line index -> the border line that starts
    the piece there (a simple table) or None (a grid table, cut at a row separator)."""
    found: dict[int, str | None] = {}
    numbered = None
    for top in [0, *cuts]:
        line = lines[top].rstrip()
        if line.startswith("+") and _GRID_TOP.match(line):
            table = _grid_rows(lines, top)
        elif line.startswith("=") and _TABLE_BORDER.match(line):
            table = _simple_rows(lines, top)
        else:
            table = None
        if table is not None:
            starts, cut_at, border = table  # every row's first line; where it may be cut
            if numbered is None:
                numbered = any(mark in text or text.startswith(mark[1:]) for mark in _NUMBERED)
            if numbered:
                return {}
            if len(starts) > 1 and starts[-1] - top > PIECE_ROWS:
                found.update(dict.fromkeys(cut_at, border))
    return found


def _simple_rows(lines: list[str], top: int):
    """A simple table at ``top`` as ``(row starts, cut points, border)``, or None when it is
    not one that is cut: not closed by a border and a blank line, a border or header rule
    not the top border's, a column span, text in a column margin, a line that is not part
    of a row, or a row whose cells docutils may number nothing in (``_numbered``)."""
    border = lines[top].rstrip()
    n = len(lines)
    seps: list[int] = []
    end = None
    for i in range(top + 1, n):
        line = lines[i].rstrip()
        if _SIMPLE_BORDER.match(line):
            if line != border:
                return None
            seps.append(i)
            if len(seps) == 2 or i + 1 >= n or not lines[i + 1].strip():
                end = i
                break
    if end is None or (end + 1 < n and lines[end + 1].strip()):
        return None
    columns = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
    first = columns[0]
    starts: list[int] = []  # each row's first line
    for i in range(top + 1, end):
        line = lines[i].rstrip()
        if i in seps:
            continue
        if _SPAN_LINE.match(line) or not _fixed_width(line):
            return None
        if any(line[a:b].strip() for (_, a), (b, _) in zip(columns, columns[1:])):
            return None  # text in a column margin: docutils rejects the table
        if line[first[0] : first[1]].strip():
            starts.append(i)
        elif line and (not starts or any(s > starts[-1] for s in seps if s < i)):
            return None  # text outside every row (docutils drops it)
    for k, a in enumerate(starts):
        b = starts[k + 1] if k + 1 < len(starts) else end
        b = min([b, *(s for s in seps if a < s < b)])
        if not _numbered(
            [
                lines[i].rstrip()[x : y if c + 1 < len(columns) else None]
                for i in range(a, b)
                for c, (x, y) in enumerate(columns)
            ]
        ):
            return None
    body = seps[0] if len(seps) == 2 else top  # (rows after the header rule)
    cut_at = [a for a in starts if a > body][1:]
    return starts, cut_at, lines[top]


def _grid_rows(lines: list[str], top: int):
    """A grid table at ``top`` as ``(row starts, cut points, None)``, or None when it is not
    one that is cut: every line must be a row separator with the top border's corners, or a
    row line with a ``|`` at each of them (no cell spans rows or columns), the last one a
    separator followed by a blank line, and docutils must number something in every row
    (``_numbered``)."""
    border = lines[top].rstrip()
    corners = [k for k, ch in enumerate(border) if ch == "+"]
    width = len(border)
    n = len(lines)
    seps: list[int] = [top]
    head = None
    i = top + 1
    while i < n and lines[i].strip():
        line = lines[i].rstrip()
        if len(line) != width or not _fixed_width(line):
            return None
        if line[0] == "+":
            fill = line[1]
            if fill not in "-=" or line != "".join(
                "+" if k in corners else fill for k in range(width)
            ):
                return None
            if fill == "=":
                if head is not None:
                    return None
                head = i
            seps.append(i)
        elif any(line[k] != "|" for k in corners):
            return None
        i += 1
    if seps[-1] != i - 1 or head == i - 1 or len(seps) < 3:
        return None
    for a, b in zip(seps, seps[1:]):
        if not _numbered(
            [
                lines[j].rstrip()[x + 1 : y]
                for j in range(a + 1, b)
                for x, y in zip(corners, corners[1:])
            ]
        ):
            return None
    cut_at = [s for s in seps[1:-1] if s > (head or top)][1:]
    return [a + 1 for a in seps[:-1]], cut_at, None


def _fixed_width(line: str) -> bool:
    """No character docutils widens or narrows when it lines columns up (tabs are expanded,
    East Asian wide characters padded, combining characters not counted)."""
    if line.isascii():
        return "\t" not in line
    import unicodedata

    return "\t" not in line and not any(
        unicodedata.combining(ch) or unicodedata.east_asian_width(ch) in "WF"
        for ch in line
        if ord(ch) > 127
    )


def _numbered(cells: list[str]) -> bool:
    """Whether docutils surely numbers something in a row whose cells' lines are these:
    one holds words, and none is explicit markup (a comment is not numbered, a directive's
    lines are its own) or a line without a word but an escaped blank (``::``, a title's
    adornment, a border, a bare bullet: markup that may leave a cell without a numbered
    paragraph). (A conservative test, checked on random tables of such lines.)"""
    words = False
    for cell in cells:
        text = cell.strip()
        if not text:
            continue
        if text.startswith("..") or (text != "\\" and not _WORD.search(text)):
            return False
        words = words or text != "\\"
    return words


def _check_blocks(lines: list[str], cuts: list[int]) -> None:
    """``ValueError`` naming the first stretch between cut points past the bound."""
    bounds = [0, *cuts, len(lines)]
    for a, b in zip(bounds, bounds[1:]):
        chars = sum(len(x) for x in lines[a:b])
        if b - a > MAX_BLOCK_LINES or chars > MAX_BLOCK_CHARS:
            raise ValueError(
                f"lines {a + 1}-{b} are one block of {b - a:,} lines ({chars:,} characters), "
                f"past the reStructuredText reader's bound of {MAX_BLOCK_LINES:,} lines or "
                f"{MAX_BLOCK_CHARS // 1024:,} KiB per block"
            )


def _check_lines(lines: list[str]) -> None:
    """``ValueError`` naming the first line longer than ``MAX_LINE_CHARS`` (tabs expanded,
    as docutils counts)."""
    for n, line in enumerate(lines, start=1):
        if (
            len(line) > MAX_LINE_CHARS // 8
            and len(line.rstrip("\r\n").expandtabs(8)) > MAX_LINE_CHARS
        ):
            raise ValueError(
                f"line {n:,} is {len(line.rstrip()):,} characters long, past the "
                f"reStructuredText reader's bound of {MAX_LINE_CHARS:,} per line (docutils')"
            )


def _check_depth(text: str) -> None:
    """``ValueError`` when lines nest deeper than ``MAX_DEPTH`` indentation levels (a list in
    a list in ...): docutils holds a copy of the nested lines per level, and fails with a
    ``RecursionError`` at about a hundred."""
    stack: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.lstrip()
        if not body:
            continue
        indent = len(line) - len(body)
        while stack and stack[-1] > indent:
            stack.pop()
        if not stack or stack[-1] < indent:
            stack.append(indent)
        # list markers on one line (``- - - x``) open a list each, as deeper lines would
        inline = _inline_markers(body)
        if len(stack) + inline > MAX_DEPTH + 1:  # (column 0 is the top level, not a nesting)
            raise ValueError(
                f"line {number} is nested more than {MAX_DEPTH} indentation levels deep, "
                f"past the reStructuredText reader's bound of {MAX_DEPTH}"
            )


_MARKER = re.compile(r"(?:[-*+\u2022\u2023\u2043]|\(?(?:\d+|#|[A-Za-z])[.)]) +")


def _inline_markers(body: str) -> int:
    """How many lists a line's leading markers open after its first (``- - x``: 1)."""
    count, pos = 0, 0
    while (m := _MARKER.match(body, pos)) is not None:
        count, pos = count + 1, m.end()
    return max(0, count - 1)
