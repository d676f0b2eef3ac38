"""``ragsift calibrate`` measured (issue 37, part 3): what it fits, how it holds out, what it costs.

1. **MiniLM recalibrated** from the shipped set (``ragsift.calibration``): its thresholds
   beside the shipped ``DEFAULT_THRESHOLDS``, and admission per language (answered / first
   admitted hit right / off-topic admitted at k 3) for the calibrated model and threshold
   held out by language, for the calibrated one in-sample, and for the shipped
   ``MODELS``/``DEFAULT_THRESHOLDS`` on the same cases;
2. **the multilingual model calibrated**: the same table (held out by language: the figures
   for a language the fit did not see);
3. **cost**: ``ragsift calibrate --index IDX --quiet`` as a whole command, a new process per
   run, for an index of ``fixtures/`` built with each model (best and every run).

The calibration set is the package's own; nothing from FastAPI's documentation is used.

    .venv/bin/python -m bench.bench_calibrate [--repeats 3] [--models minilm,multilingual]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def table(name: str, model_dir: str | None) -> None:
    from ragsift.calibration.data import LANGUAGES
    from ragsift.calibration.fit import rates, scored
    from ragsift.calibration.run import fit_all, gather
    from ragsift.embedders import load_embedder
    from ragsift.retrieval.engine import MODES
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS, MODELS

    emb = load_embedder(model_dir)
    t0 = time.perf_counter()
    cases = gather(emb, model_dir)
    t1 = time.perf_counter()
    models, thresholds, folds, in_sample = fit_all(cases, LANGUAGES)
    t2 = time.perf_counter()
    print(f"\n### {name} ({emb.fingerprint})\n\nevidence {t1 - t0:.1f} s (index + queries), "
          f"fit {t2 - t1:.1f} s\n")
    print("| mode | calibrated threshold | shipped default (MiniLM) | difference |\n"
          "| --- | ---: | ---: | ---: |")
    for mode in MODES:
        print(f"| {mode} | {thresholds[mode]:.2f} | {DEFAULT_THRESHOLDS[mode]:.2f} | "
              f"{thresholds[mode] - DEFAULT_THRESHOLDS[mode]:+.2f} |")
    print("\nAdmission at k 3, per language: answered / first admitted hit right / off-topic "
          "admitted (%), answerable n / off-topic n\n")
    print("| mode | language | held out: threshold | held out | in-sample | shipped MiniLM "
          "model + default |\n| --- | --- | ---: | --- | --- | --- |")
    for mode in MODES:
        qs = cases[mode]
        orders = {id(q): scored(q, mode, MODELS[mode]) for q in qs}
        for lang in LANGUAGES:
            held = next(f for f in folds if f.mode == mode and f.held_out == lang)
            ins = next(f for f in in_sample if f.mode == mode and f.held_out == lang)
            r = rates([q for q in qs if q.fold == lang], orders, DEFAULT_THRESHOLDS[mode])

            def cell(a: float, b: float, c: float) -> str:
                return f"{100 * a:.0f} / {100 * b:.0f} / {100 * c:.0f}"

            print(f"| {mode} | {lang} | {held.threshold:.2f} | "
                  f"{cell(held.answered, held.first_right, held.false)} | "
                  f"{cell(ins.answered, ins.first_right, ins.false)} | "
                  f"{cell(r.answered, r.first_right, r.false)} ({r.answerable} / "
                  f"{r.unanswerable}) |")
    for mode in MODES:
        m = models[mode]
        print(f"\n{mode}: Model({m.bias:.4f}, "
              + "{" + ", ".join(f"{k!r}: {v:.4f}" for k, v in m.weights.items()) + "})")


def wall(models: list[str], repeats: int) -> None:
    exe = [sys.executable, "-m", "ragsift"]
    with tempfile.TemporaryDirectory(prefix="bench-calibrate-") as tmp:
        print("\n### `ragsift calibrate` as a whole command (a new process per run)\n\n"
              "| model | index | runs s | best s |\n| --- | --- | --- | ---: |")
        for name in models:
            index = str(Path(tmp) / f"{name}.db")
            flags = [] if name == "minilm" else ["--model", name]
            built = subprocess.run([*exe, "embed", str(REPO / "fixtures"), "--index", index,
                                    "--quiet", "--no-calibrate", *flags], capture_output=True,
                                   check=False)
            assert built.returncode in (0, 3), built.stderr  # 3: fixtures/ holds unusable files
            runs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                subprocess.run([*exe, "calibrate", "--index", index, "--quiet"], check=True,
                               capture_output=True)
                runs.append(time.perf_counter() - t0)
            print(f"| {name} | fixtures/ | {', '.join(f'{r:.2f}' for r in runs)} | "
                  f"{min(runs):.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="minilm,multilingual")
    args = ap.parse_args()
    models = args.models.split(",")
    for name in models:
        table(name, None if name == "minilm" else name)
    wall(models, args.repeats)


if __name__ == "__main__":
    main()
