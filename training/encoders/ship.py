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


ENCODER_OF_KEY = {"emb": "speaker", "emb_whisper": "whisper"}


def ship(recs: list[dict], keys: list[str], manifest: Path = MANIFEST) -> dict:
    heads = [G.fit_head(recs, k) for k in keys]
    loco = G.loco_views(recs, keys, EVERY)
    picked = [i for i, r in enumerate(recs) if r["source"] in G.UNHEARD_BY_NET]
    fusion = G.fit_fusion([recs[i] for i in picked], [loco[i] for i in picked])
    m = json.loads(manifest.read_text())
    previous = m["version"]
    m["version"] = VERSION
    m["views"] = {
        "schedule": {"window_steps": WINDOW_STEPS, "every": EVERY, "min_voiced_steps": MIN_VOICED_STEPS, "gate_db": GATE_DB},
        "encoders": [{"encoder": ENCODER_OF_KEY[k], "head": {"weights": [round(float(x), 7) for x in c], "bias": round(b, 7)}}
                     for k, (c, b) in zip(keys, heads)],
        "fusion": {"net": round(fusion[0], 6), "views": [round(w, 6) for w in fusion[1]], "bias": round(fusion[2], 6)},
    }
    m.setdefault("training", {})["encoder_view"] = {
        "network": f"gender {previous} (model.onnx, unchanged)",
        "heads": f"one logistic regression per encoder ({', '.join(ENCODER_OF_KEY[k] for k in keys)}) on its window embeddings, speaker- and gender-balanced, "
                f"L2 {G.HEAD_L2}, every labelled corpus clean and through telephone codecs ({len(recs)} clip versions)",
        "fusion": f"logistic regression of (network log-odds, each head's log-odds) over voiced steps of {', '.join(G.UNHEARD_BY_NET)} "
                  "(never heard by the network), head outputs leave-one-corpus-out",
        "sources": sorted({r['source'] for r in recs}),
        "reproduce": f"python -m training.encoders.embed && python -m training.encoders.gender evaluate --views {','.join(keys)} && python -m training.encoders.gender ship --views {','.join(keys)}",
    }
    manifest.write_text(json.dumps(m, indent=2) + "\n")
    return m["views"]["fusion"]

