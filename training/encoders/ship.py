"""Writes gender 2.0: gender 1.3.0's network (model.onnx and its streaming graphs, unchanged)
plus the encoder view (views.ts): the head fitted on every corpus, the fusion weights fitted on
the corpora the network never heard with leave-one-corpus-out head outputs (gender.py)."""
from __future__ import annotations

import json
from pathlib import Path

from training.encoders import gender as G
from training.encoders.windows import GATE_DB, MIN_VOICED_STEPS, WINDOW_STEPS

MANIFEST = G.ROOT / "models/gender/manifest.json"
VERSION = "2.0.0"
EVERY = 4


def ship(recs: list[dict], manifest: Path = MANIFEST) -> dict:
    coef, bias = G.fit_head(recs)
    views, picked = [], []
    for s in G.UNHEARD_BY_NET:
        c, b = G.fit_head([r for r in recs if r["source"] != s])
        for r in recs:
            if r["source"] == s:
                views.append(G.step_view_logits(r, c, b, EVERY))
                picked.append(r)
    fusion = G.fit_fusion(picked, views)
    m = json.loads(manifest.read_text())
    previous = m["version"]
    m["version"] = VERSION
    m["views"] = {
        "encoder": "speaker",
        "schedule": {"window_steps": WINDOW_STEPS, "every": EVERY, "min_voiced_steps": MIN_VOICED_STEPS, "gate_db": GATE_DB},
        "head": {"weights": [round(float(x), 7) for x in coef], "bias": round(bias, 7)},
        "fusion": {"net": round(fusion[0], 6), "view": round(fusion[1], 6), "bias": round(fusion[2], 6)},
    }
    m.setdefault("training", {})["encoder_view"] = {
        "network": f"gender {previous} (model.onnx, unchanged)",
        "head": "logistic regression on the speaker encoder's window embeddings (Resemblyzer 0.1.4), speaker- and gender-balanced, "
                f"L2 {G.HEAD_L2}, every labelled corpus clean and through telephone codecs ({len(recs)} clip versions)",
        "fusion": f"logistic regression of (network log-odds, head log-odds) over voiced steps of {', '.join(G.UNHEARD_BY_NET)} "
                  "(never heard by the network), head outputs leave-one-corpus-out",
        "sources": sorted({r['source'] for r in recs}),
        "reproduce": "python -m training.encoders.embed && python -m training.encoders.gender evaluate && python -m training.encoders.gender ship",
    }
    manifest.write_text(json.dumps(m, indent=2) + "\n")
    return m["views"]["fusion"]
