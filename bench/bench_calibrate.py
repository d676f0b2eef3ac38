"""``ragsift calibrate`` measured (issue 37, part 3): which design transfers, how it holds out, what it costs.

Designs, each measured on the same evidence (the shipped set, ``ragsift.calibration``, ranked
by the engine with the model; the English set also with the reference MiniLM):

- **align** (what ships): the shipped ``MODELS``/``DEFAULT_THRESHOLDS`` read through the map
  ``a·d + b`` of the model's dense evidence that puts its two levels (best relevant, best
  unrelated candidate, averaged over the English queries: ``fit.contrast``) onto MiniLM's
  (``fit.align_map``). Chinese and Japanese are held out by construction (the map sees
  English only); the English row is not held out.
- **align-pool**: the same, the model's levels taken on the other two languages (MiniLM's on
  English), leave-one-language-out;
- **align-lik**: the same, with (a, b) maximising the likelihood of the labels, every other
  coefficient held at MiniLM's (``fit.likelihood_map``, dense mode), leave-one-language-out.
- **refit**: every coefficient and the threshold refitted per mode on the set
  (``run.fit_all``, the design of d8f7446), leave-one-language-out.

Reported: for MiniLM, the calibrated thresholds and models against the shipped ones (and,
with ``--set``, admission per fold of the English admission set, ``bench/bench_relevance.py``'s
folds, shipped against calibrated); for each model, answered / first admitted hit right /
off-topic admitted per language at k 3 for every design; and ``ragsift calibrate --index IDX
--quiet`` as a whole command, a new process per run, for an index of ``fixtures/`` built with
each model. Nothing from FastAPI's documentation is used.

    .venv/bin/python -m bench.bench_calibrate [--repeats 3] [--models minilm,multilingual]
        [--set /tmp/i37/set4.pkl]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cell(r) -> str:
    if r is None:
        return "n/a"
    return (
        f"{100 * r.answered:.0f} / {100 * r.first_right:.0f} / "
        f"{100 * r.false:.1f} ({round(r.false * r.unanswerable)}/{r.unanswerable})"
    )


def designs(cases: dict, ref_en: list, languages) -> dict:
    """Design → mode → language → (threshold, Rates, map or None)."""
    from ragsift.calibration.fit import (
        align_map,
        choose_threshold,
        fit_model,
        likelihood_map,
        mapped,
        rates,
        scored,
    )
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS, MODELS
    from ragsift.retrieval.request import MODES

    out: dict = {"align": {}, "align-pool": {}, "align-lik": {}, "refit": {}}
    own_en = [q for q in cases["dense"] if q.fold == "en"]
    amap = align_map(own_en, ref_en)
    lik = {
        held: likelihood_map(
            [q for q in cases["dense"] if q.fold != held], "dense", MODELS["dense"]
        )
        for held in languages
    }
    pool = {}
    for held in languages:
        try:
            pool[held] = align_map([q for q in cases["dense"] if q.fold != held], ref_en)
        except ValueError:  # MiniLM on zh + ja: nothing to align (it cannot read them)
            pool[held] = None
    for mode in MODES:
        qs = cases[mode]
        model = mapped(MODELS[mode], amap)
        orders = {id(q): scored(q, mode, model) for q in qs}
        out["align"][mode] = {
            lang: (
                DEFAULT_THRESHOLDS[mode],
                rates([q for q in qs if q.fold == lang], orders, DEFAULT_THRESHOLDS[mode]),
                amap,
            )
            for lang in languages
        }
        out["align-lik"][mode], out["refit"][mode], out["align-pool"][mode] = {}, {}, {}
        for held in languages:
            test = [q for q in qs if q.fold == held]
            if pool[held] is not None:
                model = mapped(MODELS[mode], pool[held])
                orders = {id(q): scored(q, mode, model) for q in test}
                out["align-pool"][mode][held] = (
                    DEFAULT_THRESHOLDS[mode],
                    rates(test, orders, DEFAULT_THRESHOLDS[mode]),
                    pool[held],
                )
            else:
                out["align-pool"][mode][held] = (None, None, None)
            model = mapped(MODELS[mode], lik[held])
            orders = {id(q): scored(q, mode, model) for q in test}
            out["align-lik"][mode][held] = (
                DEFAULT_THRESHOLDS[mode],
                rates(test, orders, DEFAULT_THRESHOLDS[mode]),
                lik[held],
            )
            train = [q for q in qs if q.fold != held]
            model = fit_model(train, mode)
            orders = {id(q): scored(q, mode, model) for q in qs}
            t = choose_threshold(train, orders, [f for f in languages if f != held])
            out["refit"][mode][held] = (t, rates(test, orders, t), None)
    return out


def table(name: str, model_dir: str | None, ref_en: list, admission: str | None) -> None:
    from ragsift.calibration.data import LANGUAGES
    from ragsift.calibration.run import align_all, calibrate, fit_all, gather
    from ragsift.embedders import load_embedder
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS, MODELS
    from ragsift.retrieval.request import MODES

    emb = load_embedder(model_dir)
    t0 = time.perf_counter()
    cases = gather(emb, model_dir)
    t1 = time.perf_counter()
    got = designs(cases, ref_en, LANGUAGES)
    print(
        f"\n### {name} ({emb.fingerprint})\n\nevidence {t1 - t0:.1f} s (index + queries); "
        f"{len(cases['hybrid'])} queries, of them off-topic: "
        + ", ".join(
            f"{lang} {sum(not q.answerable for q in cases['hybrid'] if q.fold == lang)}"
            for lang in LANGUAGES
        )
        + "\n"
    )
    amap = got["align"]["hybrid"]["en"][2]
    print(
        f"align map: a {amap.a:.4f}, b {amap.b:+.4f}; held out (fitted on the other two "
        "languages): "
        + "; ".join(
            f"{d} "
            + ", ".join(
                f"{h}: a {m.a:.3f} b {m.b:+.3f}" if m else f"{h}: n/a"
                for h, (_, _, m) in got[d]["hybrid"].items()
            )
            for d in ("align-pool", "align-lik")
        )
        + "\n"
    )
    print(
        "| mode | shipped threshold | align | refit (all three languages) |\n"
        "| --- | ---: | ---: | ---: |"
    )
    _, refit_t, _, _ = fit_all(cases, LANGUAGES)
    align_models, align_t, _ = align_all(cases, amap, LANGUAGES)
    for mode in MODES:
        print(
            f"| {mode} | {DEFAULT_THRESHOLDS[mode]:.2f} | {align_t[mode]:.2f} | "
            f"{refit_t[mode]:.2f} |"
        )
    print(
        f"\nalign models equal the shipped MODELS: "
        f"{all(align_models[m] == MODELS[m] for m in MODES)}"
    )
    print(
        "\nAdmission at k 3 per language: answered / first admitted hit right / off-topic "
        "admitted % (count / n); threshold in brackets where the design chose one\n"
    )
    print(
        "| mode | language | align | align-pool (held out) | align-lik (held out) | refit "
        "(held out) |\n| --- | --- | --- | --- | --- | --- |"
    )
    for mode in MODES:
        for lang in LANGUAGES:
            a = got["align"][mode][lang][1]
            lk = got["align-lik"][mode][lang][1]
            pl = got["align-pool"][mode][lang][1]
            t, rf, _ = got["refit"][mode][lang]
            print(
                f"| {mode} | {lang}{' (map fitted on it)' if lang == 'en' else ''} | "
                f"{cell(a)} | {cell(pl)} | {cell(lk)} | {cell(rf)} [{t:.2f}] |"
            )
    if name == "minilm":
        t2 = time.perf_counter()
        cal = calibrate(emb, model_dir, reference=emb)
        print(
            f"\n`calibrate` in-process: {time.perf_counter() - t2:.1f} s; thresholds "
            f"{cal.thresholds} (shipped {DEFAULT_THRESHOLDS}); map {cal.dense_map}; models "
            f"identical to the shipped: {cal.models == MODELS}"
        )
        if admission:
            admission_folds(admission, cal.models, cal.thresholds)


def admission_folds(path: str, models: dict, thresholds: dict) -> None:
    """The English admission set (bench_relevance's folds): the shipped MODELS and thresholds
    against MiniLM's calibration, in-sample per fold, every mode."""
    from bench import bench_relevance as br
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS, MODELS
    from ragsift.retrieval.units import UNIT_DEPTH

    br.UNIT_DEPTH = UNIT_DEPTH
    qs = br.load(path)
    print(
        "\nEnglish admission set, per fold (answered % / falsely admitted %, k 3): the "
        "shipped model and default against MiniLM calibrated by `calibrate`\n\n"
        "| mode | fold | shipped | calibrated | same admitted sets |\n"
        "| --- | --- | --- | --- | --- |"
    )
    for mode in ("hybrid", "dense", "lexical"):
        ship = br._scored(qs, mode, MODELS[mode])
        mine = br._scored(qs, mode, models[mode])
        for f in br.FOLDS:
            test = [q for q in qs if q.fold == f]
            a = br.admission_rates(test, ship, DEFAULT_THRESHOLDS[mode])
            b = br.admission_rates(test, mine, thresholds[mode])
            same = all(
                br.admitted(*ship[id(q)], DEFAULT_THRESHOLDS[mode]).tolist()
                == br.admitted(*mine[id(q)], thresholds[mode]).tolist()
                for q in test
            )
            print(
                f"| {mode} | {f} | {100 * a[0]:.1f} / {100 * a[1]:.1f} | "
                f"{100 * b[0]:.1f} / {100 * b[1]:.1f} | {same} |"
            )


def wall(models: list[str], repeats: int) -> None:
    exe = [sys.executable, "-m", "ragsift"]
    with tempfile.TemporaryDirectory(prefix="bench-calibrate-") as tmp:
        print(
            "\n### `ragsift calibrate` as a whole command (a new process per run)\n\n"
            "| model | index | runs s | best s |\n| --- | --- | --- | ---: |"
        )
        for name in models:
            index = str(Path(tmp) / f"{name}.db")
            flags = [] if name == "minilm" else ["--model", name]
            built = subprocess.run(
                [
                    *exe,
                    "embed",
                    str(REPO / "fixtures"),
                    "--index",
                    index,
                    "--quiet",
                    "--no-calibrate",
                    *flags,
                ],
                capture_output=True,
                check=False,
            )
            assert built.returncode in (0, 3), built.stderr  # 3: fixtures/ holds unusable files
            runs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                subprocess.run(
                    [*exe, "calibrate", "--index", index, "--quiet"],
                    check=True,
                    capture_output=True,
                )
                runs.append(time.perf_counter() - t0)
            print(
                f"| {name} | fixtures/ | {', '.join(f'{r:.2f}' for r in runs)} | {min(runs):.2f} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="minilm,multilingual")
    ap.add_argument("--set", default=None, help="the admission set (bench.admission_set)")
    args = ap.parse_args()
    from ragsift.calibration.run import gather
    from ragsift.embedders import load_embedder

    ref_en = gather(load_embedder(None), None, languages=("en",))["dense"]
    models = args.models.split(",")
    for name in models:
        table(name, None if name == "minilm" else name, ref_en, args.set)
    if args.repeats:
        wall(models, args.repeats)


if __name__ == "__main__":
    main()
