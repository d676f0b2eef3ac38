"""CJK sentences as units (issue 37): which unit rule for Chinese and Japanese, chosen
leave-one-language-out on the shipped calibration set, never on the held-out handbook.

Variants of ``ragsift.embedders.evidence``'s rule (patched in this process only):

- ``units-2``: the rule before: sentences end at ``. ! ? …`` and whitespace only, a run of
  Han/kana is one word (so a CJK paragraph is one unit);
- ``stops``: CJK sentence ends (。！？), a run of Han/kana still one word (short CJK
  sentences join their neighbours again: ``MIN_WORDS``);
- ``k1`` … ``k4``: CJK sentence ends and a word of Han/kana ``k`` characters
  (``CJK_WORD_CHARS``).

For each variant the Chinese and Japanese sets are indexed with the multilingual model and
ranked by the engine (``calibration.run.gather``), scored with the shipped models read through
the English-only map (English units do not change with any variant: the map is fitted once).
Reported per language and mode: first hit right with no threshold (the top candidate is the
query's passage), and answered / first admitted right / off-topic admitted at the calibrated
default. The choice for each language is the variant best on the *other* language
(leave-one-language-out).

    .venv/bin/python -m bench.bench_cjk_units [--variants units-2,stops,k1,k2,k3,k4]
"""

from __future__ import annotations

import argparse
import re
import time

OLD_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")


def patch(variant: str) -> None:
    from ragsift.embedders import evidence
    from ragsift.sources.units import SENTENCE_END

    cjk = evidence._CJK
    if variant == "units-2":
        evidence._SENTENCE_END, evidence._WORD = OLD_END, re.compile(r"\S+")
    elif variant == "stops":
        evidence._SENTENCE_END, evidence._WORD = SENTENCE_END, re.compile(r"\S+")
    else:
        k = int(variant[1:])
        evidence._SENTENCE_END = SENTENCE_END
        evidence._WORD = re.compile(f"[{cjk}]{{1,{k}}}|[^\\s{cjk}]+")


def top1(cases, orders) -> float:
    ans = [q for q in cases if q.answerable]
    return sum(bool(q.label[orders[id(q)][0][0]]) for q in ans) / max(len(ans), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="units-2,stops,k1,k2,k3,k4")
    args = ap.parse_args()

    from ragsift.calibration.fit import align_map, mapped, rates, scored
    from ragsift.calibration.run import gather
    from ragsift.embedders import load_embedder
    from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS, MODELS

    with open("/proc/loadavg") as f:
        print("load before", f.read().strip())
    emb = load_embedder("multilingual")
    ref = load_embedder(None)
    t0 = time.perf_counter()
    own = gather(emb, "multilingual", languages=("en",))["dense"]
    dmap = align_map(own, gather(ref, None, languages=("en",))["dense"])
    print(f"map a {dmap.a:.4f} b {dmap.b:+.4f} ({time.perf_counter() - t0:.1f} s)")
    results: dict[str, dict] = {}
    for variant in args.variants.split(","):
        patch(variant)
        t0 = time.perf_counter()
        cases = gather(emb, "multilingual", languages=("zh", "ja"))
        row = {}
        for mode in ("hybrid", "dense"):
            model = mapped(MODELS[mode], dmap)
            for lang in ("zh", "ja"):
                qs = [q for q in cases[mode] if q.fold == lang]
                orders = {id(q): scored(q, mode, model) for q in qs}
                r = rates(qs, orders, DEFAULT_THRESHOLDS[mode])
                row[mode, lang] = (top1(qs, orders), r)
        results[variant] = row
        print(f"{variant}: {time.perf_counter() - t0:.1f} s", flush=True)
    print(
        "\n| variant | mode | zh top1 | zh answered / first admitted / off-topic | ja top1 | "
        "ja answered / first admitted / off-topic |\n|---|---|---:|---|---:|---|"
    )
    for variant, row in results.items():
        for mode in ("hybrid", "dense"):
            cells = []
            for lang in ("zh", "ja"):
                t1, r = row[mode, lang]
                cells += [
                    f"{100 * t1:.1f}",
                    f"{100 * r.answered:.1f} / {100 * r.first_right:.1f} / "
                    f"{round(r.false * r.unanswerable)}/{r.unanswerable}",
                ]
            print(f"| {variant} | {mode} | " + " | ".join(cells) + " |")
    # leave-one-language-out: for each language, the variant best on the other (hybrid top1,
    # then answered, then fewer off-topic admitted; ties to the earlier variant)
    for held, other in (("zh", "ja"), ("ja", "zh")):

        def key(v, lang=other):
            t1, r = results[v]["hybrid", lang]
            return (t1, r.answered, -r.false)

        pick = max(results, key=key)
        t1, r = results[pick]["hybrid", held]
        print(
            f"held out {held}: chosen on {other}: {pick}; on {held}: top1 {100 * t1:.1f}, "
            f"answered {100 * r.answered:.1f}, off-topic {round(r.false * r.unanswerable)}"
        )
    with open("/proc/loadavg") as f:
        print("load after", f.read().strip())


if __name__ == "__main__":
    main()
