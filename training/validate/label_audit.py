"""Speaker-level audit of the gender labels: which labelled speakers every independent judge calls the other gender.

    /tmp/teachers/bin/python -m training.validate.label_audit embed    # d-vectors of the audited clips (teacher venv, teachers.py)
    python -m training.validate.label_audit report [--runs training/runs/loco]   # -> training/validate/label_audit.csv

A leave-one-corpus-out figure is only as good as the labels it is scored against.  Two judges that never learnt
the corpus they judge give an opinion per speaker:
- a linear probe on the speaker encoder's d-vectors (Resemblyzer 0.1.4, training time only; distill.fit_probe),
  trained on the labelled speakers of the *other* corpora;
- our own leave-one-corpus-out gender model (training/validate/loco.py's fold files): its clip decisions on the corpus it
  never heard.
A speaker is flagged when both judges disagree with the label on most of its clips (FLAG_SHARE).  The flagged
speakers are not dropped from training or validation: loco.py reports its figures as labelled and, beside them,
without the flagged speakers, so the reader sees how much of a shortfall is the labels'.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import os
import sys

import numpy as np

from training.data import clips as D
from training.data import speakers as SD

EMB = os.path.join(D.CACHE, "audit_dvec.npz")
OUT = os.path.join(D.HERE, "validate", "label_audit.csv")
PER_SPEAKER = 8       # clips per speaker embedded: enough for a speaker-level opinion
FLAG_SHARE = 0.8      # both judges call at least this share of the speaker's clips the other gender


def audited_clips(clips):
    """Up to PER_SPEAKER clips (fixed hash order) of every gender-labelled speaker of the speaker corpora."""
    per, use = {}, []
    for c, _ in sorted(SD.clips_of("gender", clips), key=lambda cy: hashlib.md5(cy[0].path.encode()).hexdigest()):
        if per.get(c.speaker, 0) < PER_SPEAKER:
            per[c.speaker] = per.get(c.speaker, 0) + 1
            use.append(c)
    return sorted(use, key=lambda c: c.idx)


def embed():
    """d-vectors of the audited clips (needs the teacher venv: Resemblyzer + torch)."""
    from resemblyzer import VoiceEncoder
    from training.data.teachers import dvector, middle
    clips = D.load_clips()
    use = audited_clips(clips)
    store = D.AudioStore(clips)
    enc = VoiceEncoder(device="cpu", verbose=False)
    idx, emb = [], []
    for k, c in enumerate(use):
        e = dvector(enc, middle(store.get(c)))
        if np.isfinite(e).all():
            idx.append(c.idx)
            emb.append(e)
        if (k + 1) % 500 == 0:
            print(f"[audit] {k + 1}/{len(use)}", flush=True)
    np.savez(EMB, idx=np.array(idx), emb=np.stack(emb), rows=D.rows_sha256(use)[:16])
    print(f"[audit] {len(idx)} d-vectors -> {EMB}")


def probe_opinions(clips):
    """clip idx -> P(label's class is wrong) from a d-vector probe trained without the clip's corpus."""
    from training.data.distill import fit_probe, probe_female
    z = np.load(EMB)
    by_idx = {c.idx: c for c in clips}
    idx, E = z["idx"], z["emb"] / np.linalg.norm(z["emb"], axis=1, keepdims=True)
    y = np.array([SD.GENDER_CLASSES.index(by_idx[int(i)].gender) for i in idx])
    src = np.array([by_idx[int(i)].source for i in idx])
    wrong = {}
    for corpus in SD.CORPORA:
        held = src == corpus
        if not held.any():
            continue
        w = fit_probe(E[~held], y[~held])
        pf = probe_female(w, E[held])
        for i, p, yy in zip(idx[held], pf, y[held]):
            wrong[int(i)] = float(p if yy == 1 else 1 - p)
    return wrong


def model_opinions(runs):
    """clip idx -> 1 when the leave-one-corpus-out model (never trained on the clip's corpus) calls it wrong."""
    wrong = {}
    for corpus in SD.CORPORA:
        fn = os.path.join(runs, "gender", f"{corpus}.npz")
        if os.path.exists(fn):
            z = np.load(fn)
            for i, y, p in zip(z["idx"], z["y"], z["clean"]):
                if np.isfinite(p).all():
                    wrong[int(i)] = float(np.argmax(p) != y)
    return wrong


def report(runs):
    clips = D.load_clips()
    by_idx = {c.idx: c for c in clips}
    probe, model = probe_opinions(clips), model_opinions(runs)
    speakers: dict = {}
    for c, _ in SD.clips_of("gender", clips):
        s = speakers.setdefault(c.speaker, {"corpus": c.source, "label": c.gender, "probe": [], "model": []})
        if c.idx in probe:
            s["probe"].append(probe[c.idx] > 0.5)
        if c.idx in model:
            s["model"].append(model[c.idx])
    rows = []
    for spk, s in sorted(speakers.items()):
        if not s["probe"] or not s["model"]:
            continue
        pw, mw = float(np.mean(s["probe"])), float(np.mean(s["model"]))
        if pw >= FLAG_SHARE and mw >= FLAG_SHARE:
            rows.append([spk, s["corpus"], s["label"], len(s["model"]), round(pw, 3), round(mw, 3)])
    with open(OUT, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["speaker", "corpus", "label", "clips", "probe_says_other", "model_says_other"])
        w.writerows(rows)
    for r in rows:
        print(*r)
    print(f"[audit] {len(rows)} of {len(speakers)} speakers flagged -> {OUT}")


def flagged_speakers() -> set:
    """The speakers training/validate/label_audit.csv flags (empty when there is no audit)."""
    if not os.path.exists(OUT):
        return set()
    with open(OUT) as fh:
        return {r["speaker"] for r in csv.DictReader(fh)}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=("embed", "report"))
    ap.add_argument("--runs", default=os.path.join(D.HERE, "runs", "loco"), help="folder of the fold files (<runs>/gender/*.npz)")
    a = ap.parse_args(argv)
    embed() if a.step == "embed" else report(a.runs)


if __name__ == "__main__":
    main(sys.argv[1:])
