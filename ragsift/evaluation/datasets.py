"""Labelled evaluation sets: format detection and loaders.

Two layouts (see ``../shared/eval/README.md``):

- **span references** (Chroma's chunking evaluation): ``corpora/<corpus_id>.md`` read as UTF-8
  and ``questions.csv`` with columns ``question``, ``references`` (a JSON list of
  ``{content, start_index, end_index}``, code-point offsets, end exclusive) and ``corpus_id``.
- **BEIR**: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
  ``text``) and ``qrels/<split>.tsv`` (``query-id  corpus-id  score`` with a header line).

Loaders validate what the metrics rely on (reference offsets match their content, judged queries
exist) and raise ``RagsiftError`` with a message the user can act on.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from ragsift.errors import RagsiftError

SPANS = "spans"
BEIR = "beir"


@dataclass(frozen=True)
class SpanQuestion:
    question: str
    corpus_id: str
    references: tuple[tuple[int, int], ...]


@dataclass
class SpanDataset:
    """Corpora of documents and questions answered by character spans in them."""

    root: Path
    corpora: dict[str, Path]  # corpus_id -> file
    questions: list[SpanQuestion]
    format: str = SPANS

    @property
    def name(self) -> str:
        return self.root.name


@dataclass
class BeirDataset:
    """A BEIR-layout set: documents, queries and relevance judgements of one split."""

    root: Path
    split: str
    docs: dict[str, str]  # doc id -> the indexed string, title + " " + text
    queries: dict[str, str]  # query id -> text, only queries judged in this split
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    format: str = BEIR

    @property
    def name(self) -> str:
        return f"{self.root.name}/{self.split}"


def detect_format(root: Path) -> str:
    """``"spans"`` or ``"beir"`` from the files present; ``RagsiftError`` if neither."""
    if not root.exists():
        raise RagsiftError(
            f"dataset not found: {root} (the shared evaluation sets live in ../shared/eval)"
        )
    if not root.is_dir():
        raise RagsiftError(f"dataset must be a folder: {root}")
    if (root / "questions.csv").is_file() and (root / "corpora").is_dir():
        return SPANS
    if (
        (root / "corpus.jsonl").is_file()
        and (root / "queries.jsonl").is_file()
        and (root / "qrels").is_dir()
    ):
        return BEIR
    raise RagsiftError(
        f"{root}: unknown dataset layout; expected corpora/*.md + questions.csv (span "
        "references) or corpus.jsonl + queries.jsonl + qrels/*.tsv (BEIR)"
    )


def load_dataset(root: str | Path, split: str | None = None) -> SpanDataset | BeirDataset:
    root = Path(root)
    fmt = detect_format(root)
    if fmt == SPANS:
        return load_span_dataset(root)
    return load_beir_dataset(root, split)


def load_span_dataset(root: Path) -> SpanDataset:
    corpora = {p.stem: p for p in sorted((root / "corpora").iterdir()) if p.is_file()}
    if not corpora:
        raise RagsiftError(f"{root / 'corpora'}: no corpus files")
    texts: dict[str, str] = {}
    questions: list[SpanQuestion] = []
    with open(root / "questions.csv", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"question", "references", "corpus_id"} - set(reader.fieldnames or [])
        if missing:
            raise RagsiftError(f"{root / 'questions.csv'}: missing columns {sorted(missing)}")
        for line, row in enumerate(reader, start=2):
            cid = row["corpus_id"]
            if cid not in corpora:
                raise RagsiftError(f"questions.csv line {line}: unknown corpus_id {cid!r}")
            if cid not in texts:
                # newline="" keeps the file's own line endings, so offsets are the file's.
                with open(corpora[cid], encoding="utf-8", newline="") as cf:
                    texts[cid] = cf.read()
            try:
                refs = json.loads(row["references"])
                spans = tuple((int(r["start_index"]), int(r["end_index"])) for r in refs)
            except (ValueError, KeyError, TypeError) as exc:
                raise RagsiftError(f"questions.csv line {line}: bad references ({exc})") from None
            for r, (s, e) in zip(refs, spans):
                if texts[cid][s:e] != r.get("content", texts[cid][s:e]):
                    raise RagsiftError(
                        f"questions.csv line {line}: reference [{s}:{e}] does not match the "
                        f"text of {corpora[cid].name}"
                    )
            questions.append(SpanQuestion(row["question"], cid, spans))
    if not questions:
        raise RagsiftError(f"{root / 'questions.csv'}: no questions")
    return SpanDataset(root, corpora, questions)


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as exc:
                    raise RagsiftError(f"{path}:{n}: not JSON ({exc})") from None
    return rows


def qrels_splits(root: Path) -> list[str]:
    return sorted(p.stem for p in (root / "qrels").glob("*.tsv"))


def load_beir_dataset(root: Path, split: str | None = None) -> BeirDataset:
    splits = qrels_splits(root)
    if split is None:
        split = "test" if "test" in splits else (splits[0] if len(splits) == 1 else "")
        if not split:
            raise RagsiftError(
                "{root}: several qrels splits {splits}; choose one with {split}",
                param="split",
                values={"root": root, "splits": splits},
            )
    if split not in splits:
        raise RagsiftError(f"{root}: no qrels/{split}.tsv (available: {', '.join(splits)})")
    qrels: dict[str, dict[str, int]] = {}
    with open(root / "qrels" / f"{split}.tsv", encoding="utf-8", newline="") as fh:
        for n, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or (n == 1 and not row[-1].strip().lstrip("-").isdigit()):
                continue  # header line
            if len(row) < 3:
                raise RagsiftError(f"qrels/{split}.tsv:{n}: expected query-id, corpus-id, score")
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    docs = {}
    for d in _read_jsonl(root / "corpus.jsonl"):
        title = (d.get("title") or "").strip()
        text = d.get("text") or ""
        docs[str(d["_id"])] = f"{title} {text}" if title else text
    all_queries = {str(q["_id"]): q.get("text", "") for q in _read_jsonl(root / "queries.jsonl")}
    queries = {qid: all_queries[qid] for qid in qrels if qid in all_queries}
    unknown = [qid for qid in qrels if qid not in all_queries]
    if unknown:
        raise RagsiftError(f"qrels/{split}.tsv: {len(unknown)} query ids not in queries.jsonl")
    if not queries:
        raise RagsiftError(f"qrels/{split}.tsv: no judged queries")
    return BeirDataset(root, split, docs, queries, qrels)
