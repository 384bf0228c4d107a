"""test/fixtures/speakers_golden.json: cases the TypeScript speaker map must reproduce exactly.

Each case is a slice of a cached simulated conversation (real speaker-encoder embeddings of two or three voices):
its step levels rounded to 0.1 dB, the embedded windows (from those rounded levels) and their embeddings rounded
to 5 decimals; the expected labels are computed by cluster.py from exactly those rounded numbers. The slices are
searched so that the cases between them exercise agglomerative merges, refine moving windows, dissolve removing a
cluster, a given speaker count, and a stream opening a new speaker.

  python -m training.diarization.golden           # needs training/runs/diarization/cache and chosen.json
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from training.diarization import cluster as C

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "test/fixtures/speakers_golden.json"
PARAM_KEYS = list(C.Params().as_dict())


def expected(case: dict) -> tuple[dict, dict]:
    p = C.Params(**{k: case[k] for k in PARAM_KEYS})
    levels = np.asarray(case["levels"], dtype=np.float64)
    win = np.asarray(case["embedded"], dtype=int)
    E = np.asarray(case["embeddings"], dtype=np.float64).reshape(len(win), 256)
    f = C.file_map(levels, win, E, p, case.get("num_speakers"))
    o = C.stream_map(levels, win, E, p)
    return f, o


def trace(case: dict) -> dict:
    """What the case exercises (stage by stage cluster counts, windows moved by refine, dissolved clusters)."""
    p = C.Params(**{k: case[k] for k in PARAM_KEYS})
    win = np.asarray(case["embedded"], dtype=int)
    E = C.normalise(np.asarray(case["embeddings"], dtype=np.float64))
    target = case.get("num_speakers")
    seg = C.segments(win, E, p.segment_threshold)
    ag = C.agglomerate(E, seg, p.merge_threshold, p.max_speakers, target)
    rf = C.refine(E, ag, p.refine_iterations)
    ds = C.dissolve(E, rf, p.hop_steps, p.min_speaker_s, target)
    before = {i: k for k, c in enumerate(ag) for i in c}
    after = {i: k for k, c in enumerate(rf) for i in c}
    moved = sum(before[i] != after[i] for i in before) if len(rf) == len(ag) else -1
    k, _ = C.online_assign(E, p)
    return {"segments": len(seg), "after_merge": len(ag), "after_refine": len(rf), "refine_moved": moved,
            "after_dissolve": len(ds), "online_speakers": int(k.max()) + 1 if len(k) else 0}


def make_case(rec: dict, offset: int, steps: int, p: C.Params, num_speakers: int | None = None, note: str = "") -> dict:
    assert offset % p.hop_steps == 0 or p.hop_steps == 25 and offset % 25 == 0
    levels = np.round(np.asarray(rec["levels"][offset:offset + steps], dtype=np.float64), 1)
    win = C.embedded_windows(levels, p)
    row = {int(s): i for i, s in enumerate(rec["starts"])}
    E = C.normalise(np.stack([rec["emb"][row[offset + int(j) * p.hop_steps]] for j in win]).astype(np.float64))
    case = {"note": note, "source": f"{rec['meta']['key']} steps {offset}..{offset + steps}", **p.as_dict(), "steps": steps,
            "levels": [float(x) for x in levels], "embedded": [int(j) for j in win],
            "embeddings": [[round(float(x), 5) for x in e] for e in E]}
    if num_speakers is not None:
        case["num_speakers"] = num_speakers
    f, o = expected(case)
    case["expected_file"] = {"labels": [int(x) for x in f["labels"]], "K": int(f["K"]),
                             "probs_first_10_steps": [[round(float(x), 6) for x in r] for r in f["probs"][:10]]}
    case["expected_online"] = {"labels": [int(x) for x in o["labels"]]}
    case["exercises"] = trace(case)
    return case


def check(case: dict) -> None:
    f, o = expected(case)
    assert [int(x) for x in f["labels"]] == case["expected_file"]["labels"]
    assert int(f["K"]) == case["expected_file"]["K"]
    assert np.allclose(f["probs"][:10], case["expected_file"]["probs_first_10_steps"], atol=2e-6)
    assert [int(x) for x in o["labels"]] == case["expected_online"]["labels"]


def _search(recs, p, steps, want, num_speakers=None, stride=None):
    stride = stride or (p.hop_steps if p.hop_steps != 25 else 25)
    if p.hop_steps != 25:
        stride = max(stride // 6 * 6, 6)
    for rec in recs:
        for off in range(0, len(rec["levels"]) - steps, stride * 4):
            case = make_case(rec, off, steps, p, num_speakers)
            if want(case["exercises"], case):
                return case
    raise SystemExit(f"no slice found for a golden case ({p})")


def main() -> None:
    from training.diarization.validate import load, RUNS
    chosen = C.Params(**json.load(open(RUNS / "chosen.json"))["params"])
    recs = [r for r in load(["speechocean", "nemo"], ["clean"]) if r["meta"]["speakers"] in (2, 3)]
    cases = []
    # 1. the chosen parameters: merges, refine moving windows, a dissolved cluster, a second online speaker
    p1 = replace(chosen, hop_steps=12, merge_threshold=min(chosen.merge_threshold, 0.85), min_speaker_s=3.0)
    c = _search(recs, p1, 360, lambda x, c: x["after_merge"] < x["segments"] and x["refine_moved"] > 0
                and x["after_dissolve"] < x["after_refine"] and x["after_dissolve"] >= 2 and x["online_speakers"] >= 2)
    c["note"] = "hop 12, chosen parameters but merge_threshold <= 0.85 and min_speaker_s 3: merges, refine moves windows, dissolve removes a cluster, streams open a second speaker"
    cases.append(c)
    # 2. hop 25 with the speaker count given (merges forced down to 2 regardless of merge_threshold)
    p2 = replace(chosen, hop_steps=25, merge_threshold=0.99)
    c = _search(recs, p2, 250, lambda x, c: x["after_dissolve"] == 2 and x["segments"] > 3 and x["online_speakers"] >= 2,
                num_speakers=2)
    c["note"] = "hop 25, num_speakers 2 given, merge_threshold 0.99 (only the count stops merging); no dissolve below the count"
    cases.append(c)
    # 3. hop 6, a gap of unvoiced steps (segments cut, rule 3's fallbacks), no refine, online cap
    p3 = replace(chosen, hop_steps=6, refine_iterations=0, max_speakers=3)
    c = _search(recs, p3, 96, lambda x, c: x["online_speakers"] >= 2 and len(c["embedded"]) < C.num_windows(96, 6)
                and x["after_merge"] >= 2)
    c["note"] = "hop 6, refine 0, max_speakers 3: unvoiced windows not embedded (segments cut, steps without a covering window)"
    cases.append(c)
    # 4. nothing embedded: K = 1, every step's probs [0]
    quiet = {"note": "no window embedded (all steps below gate_db): K 1, probs [0], label speaker_1, confidence 0",
             "source": "synthetic", **replace(chosen, hop_steps=12).as_dict(), "steps": 30,
             "levels": [-80.0] * 30, "embedded": [], "embeddings": []}
    f, o = expected(quiet)
    quiet["expected_file"] = {"labels": [int(x) for x in f["labels"]], "K": 1,
                              "probs_first_10_steps": [[0.0] for _ in range(10)]}
    quiet["expected_online"] = {"labels": [int(x) for x in o["labels"]]}
    cases.append(quiet)
    doc = {"spec": "speaker map v1 (/work/speakers-spec.md); generated by python -m training.diarization.golden",
           "rounding": "levels 0.1 dB, embeddings 5 decimals (normalise again after reading), probs 6 decimals",
           "labels": "0-based speaker index per step, before the silence / no_speech rules", "cases": cases}
    OUT.write_text(json.dumps(doc, separators=(",", ":")))
    for c in cases:
        check(c)
        print(c["note"], c.get("exercises"), len(c["embedded"]), "windows")
    print(f"wrote {OUT}: {OUT.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
