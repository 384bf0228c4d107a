"""Gender label audit: speakers whose corpus label three witnesses (pitch and two models) all contradict.

  python -m training.encoders.label_audit        # ~1 min on 2 cores -> models/gender/label_audit.json

Corpus gender labels are metadata typed by people (spk2gender files, file-name codes), and a few are wrong:
in speechocean762 three "female" speakers read at a median F0 of 107-119 Hz and three "male" ones at 215-230 Hz.
A speaker is *suspect* when, over their clean clips, all three say the other gender:
- pitch: the median F0 (WORLD DIO + StoneMask) of up to 4 clips, neutral ones first where the corpus has
  emotions: a "male" label at >= 180 Hz, a "female" one at <= 150 Hz (adult speaking F0 meets near 165 Hz);
  pitch alone misleads on shouted and sad speech, which is why it is never the only witness;
- gender 1.3.0's network: mean P(other gender) >= 0.75 over the voiced steps;
- the speaker-encoder head fitted WITHOUT the speaker's corpus (leave-one-corpus-out): mean P(other) >= 0.75.
Suspect speakers are left out of the heads' and the fusion's training (gender.py) and scored apart: the card
shows accuracy as labelled first, then with them left out, and lists each one with its evidence.
"""
from __future__ import annotations

import json
import multiprocessing as mp

import numpy as np

from training.encoders import corpora
from training.encoders import gender as G

OUT = G.AUDIT_JSON
F0_MALE_MIN = 180.0  # a "male" label with a median F0 at or above this contradicts it
F0_FEMALE_MAX = 150.0
P_AGAINST = 0.75
CLIPS_PER_SPEAKER = 4
NEUTRAL = {"neutral", "calm", "level1", ""}


def _f0(refs: list[tuple]) -> float:
    from training.data.pitch import median_f0
    vals = [median_f0(corpora.load(corpora.Voice(*ref))) for ref in refs]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.median(vals)) if vals else float("nan")


def speaker_evidence(recs: list[dict], views: list[list[np.ndarray]], workers: int = 2) -> dict[str, dict]:
    """Per speaker: label, corpus, clips, median F0, mean P(male) of the network and of the LOCO speaker view."""
    by: dict[str, dict] = {}
    for r, v in zip(recs, views):
        if r["channel"] != "clean":
            continue
        e = by.setdefault(r["speaker"], {"source": r["source"], "label": r["gender"], "net": [], "view": [], "refs": []})
        voiced = r["levels"][: v[0].size] >= G.GATE_DB
        if voiced.any():
            e["net"].append(float((1 / (1 + np.exp(-r["net"][: v[0].size][voiced]))).mean()))
            z = v[0][voiced]
            z = z[~np.isnan(z)]
            if z.size:
                e["view"].append(float((1 / (1 + np.exp(-z))).mean()))
        e["refs"].append((r["source"], r["speaker"], r["gender"], r["ref"], r["emotion"]))
    speakers = sorted(by)
    jobs = []
    for s in speakers:
        refs = sorted(by[s]["refs"], key=lambda ref: (ref[4].lower() not in NEUTRAL, ref[3]))
        jobs.append(refs[:CLIPS_PER_SPEAKER])
    with mp.Pool(workers) as pool:
        f0s = pool.map(_f0, jobs, chunksize=8)
    out = {}
    for s, f0 in zip(speakers, f0s):
        e = by[s]
        out[s] = {"source": e["source"], "label": e["label"], "clips": len(e["refs"]), "median_f0_hz": round(f0, 1),
                  "net_p_male": round(float(np.mean(e["net"])), 3) if e["net"] else None,
                  "view_p_male": round(float(np.mean(e["view"])), 3) if e["view"] else None}
    return out


def witnesses_against(e: dict) -> dict[str, bool]:
    male = e["label"] == "male"
    f0 = e["median_f0_hz"]

    def against(p):
        return p is not None and (1 - p if male else p) >= P_AGAINST

    return {"pitch": bool(np.isfinite(f0) and (f0 >= F0_MALE_MIN if male else f0 <= F0_FEMALE_MAX)),
            "network": against(e["net_p_male"]), "speaker view": against(e["view_p_male"])}


def audit(evidence: dict[str, dict]) -> dict:
    suspect = {s: e for s, e in evidence.items() if all(witnesses_against(e).values())}
    per_source: dict[str, dict] = {}
    for s, e in evidence.items():
        c = per_source.setdefault(e["source"], {"speakers": 0, "suspect": 0})
        c["speakers"] += 1
        c["suspect"] += s in suspect
    # how often each witness alone contradicts a label: pitch alone is no proof (shouted men, sad women)
    alone = {w: sum(witnesses_against(e)[w] for e in evidence.values()) for w in ("pitch", "network", "speaker view")}
    return {"rule": {"f0_male_min_hz": F0_MALE_MIN, "f0_female_max_hz": F0_FEMALE_MAX, "p_against": P_AGAINST,
                     "clips_per_speaker_for_f0": CLIPS_PER_SPEAKER},
            "speakers_audited": len(evidence), "each_witness_alone_against": alone, "per_source": per_source,
            "suspect": dict(sorted(suspect.items()))}


def main() -> None:
    recs = G.load()
    # the view as leave-one-corpus-out, with heads fitted on every label (the audit must not depend on itself)
    views = G.loco_views(recs, ["emb"], G.EVERY)
    report = audit(speaker_evidence(recs, views))
    OUT.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "suspect"}, indent=1))
    for s, e in report["suspect"].items():
        print(s, e)


if __name__ == "__main__":
    main()
