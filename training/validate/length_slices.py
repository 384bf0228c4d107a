"""The shipped arousal and emotions networks by utterance length, on corpora they never heard.

    python -m training.validate.length_slices      # -> models/{arousal,emotions}/length_slices.json (rendered into the cards)

Reads the clip versions that training/encoders/embed_affect.py cached (training/runs/encoders/affect*.pkl: the shipped
network's per-step probabilities of every clip, clean and through a telephone codec, and of a 0.5-1.2 s crop of it
placed anywhere on the step grid). A clip is decided as a speech segment reads: the mean of its voiced steps'
probabilities (steps >= -50 dBFS), argmax; it falls in the length slice of its voiced seconds (< 1.2 s: mostly the
crops; 1.2-3 s; > 3 s). Only corpora the network never heard are scored (arousal 1.0.1: ASED, emospeech, ETTSDB,
nEMO, URDU; emotions 1.1.0: emospeech), so every figure is what a new kind of recording gets. (The arousal prior shift
was chosen on four of those five corpora: slightly optimistic there; emospeech is unseen by every choice.)
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from training.encoders import affect as A

ROOT = Path(__file__).resolve().parents[2]
SLICES = ("clean", "telephone", *A.LENGTHS)
TARGETS = {"arousal": {"<1.2 s": 0.60}, "emotions": {}}  # issue 34: arousal >= 0.60 on utterances under 1.2 s


def report(recs: list[dict], task: str) -> dict:
    rs = [r for r in A.task_recs(recs, task) if r["source"] in A.UNHEARD[task]]
    decisions = [A.clip_decision(r, np.exp(A.net_logp(r, task, r["levels"].size))) for r in rs]
    t = A.table(rs, task, decisions)
    corpora = sorted({r["source"] for r in rs})
    per = {c: {s: t[f"{c}/{s}"] for s in SLICES if f"{c}/{s}" in t} for c in corpora}
    # the table's own means over the unheard corpora that have the slice
    mean = {s: {"uar": t[f"mean unheard/{s}"]["uar"], "corpora": [c for c in corpora if s in per[c]],
                "clips": t[f"mean unheard/{s}"]["clips"]} for s in SLICES}
    version = json.loads((ROOT / "models" / task / "manifest.json").read_text())["version"]
    return {"task": task, "version": version, "classes": A.CLASSES[task], "corpora": corpora, "slices": list(SLICES),
            "per_corpus": per, "mean": mean, "command": "python -m training.validate.length_slices",
            "min_clips": 10, "targets": TARGETS[task]}


def main() -> None:
    recs = A.load()
    for task in ("arousal", "emotions"):
        rep = report(recs, task)
        out = ROOT / "models" / task / "length_slices.json"
        out.write_text(json.dumps(rep, indent=1) + "\n")
        print(f"{out}: " + ", ".join(f"{s} {rep['mean'][s]['uar']:.3f}" for s in SLICES))


if __name__ == "__main__":
    main()
