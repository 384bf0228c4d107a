"""Gender 2.x's encoder view: a linear head on a speaker encoder's window embeddings (2.1: CAM++'s), fused
step by step with gender 1.3.0's network (src/inference/view-fusion.ts), chosen and scored
leave-one-corpus-out on the embeddings of training/encoders/embed.py.

  python -m training.encoders.gender evaluate   # LOCO tables -> models/gender/encoder_view.json
  python -m training.encoders.gender evaluate --speech-gate none --out /tmp/g.json  # 2.1.0's schedule (no speech gate)
  python -m training.encoders.gender ship       # head on every corpus + fusion -> models/gender/manifest.json "views"

Speakers the label audit (label_audit.py, models/gender/label_audit.json) finds suspect are left out of every
head and fusion fit, and scored apart (`tables_audited`).

Scoring is per clip as the service decides a speech segment: the mean of the fused per-step
probabilities over its voiced steps (segment.ts), `unknown` under 0.55 (counted as wrong).
"""
from __future__ import annotations

import argparse
import json
import pickle
from pathlib import Path

import numpy as np

from training.encoders.heads import balanced_weights, logistic
from training.encoders.windows import GATE_DB, MIN_VOICED_STEPS, WINDOW_STEPS

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "training/runs/encoders/gender.pkl"
MOVED_CACHE = ROOT / "training/runs/encoders/gender_pitch.pkl"  # pitch_moved.py: scored, never fitted on
MOVED = "pitch-moved"
VARIANTS_CACHE = ROOT / "training/runs/encoders/gender_variants.pkl"  # pitch_moved.py --train: heads may fit on them
VARIANT = "variant"
OUT_JSON = ROOT / "models/gender/encoder_view.json"
AUDIT_JSON = ROOT / "models/gender/label_audit.json"  # written by label_audit.py
HEAD_L2 = 1e-4
UNKNOWN = 0.55  # the service's GENDER_UNKNOWN_THRESHOLD (src/analysis/policies.ts)
# corpora gender 1.3.0 never heard: the fusion weights are fitted on these alone, so the network's
# weight is not inflated by its own training data
UNHEARD_BY_NET = ("speechocean", "audiomnist_az")
LOW_AROUSAL = {"sad", "calm", "level0", "sadness"}
HIGH_AROUSAL = {"angry", "happy", "fearful", "surprised", "fear", "anger", "happiness", "surprise", "level2"}


def suspect_speakers(path: Path = AUDIT_JSON) -> set[str]:
    """The committed label audit's suspect speakers (label_audit.py; empty when there is no audit yet)."""
    return set(json.loads(path.read_text())["suspect"]) if path.exists() else set()


def load(path: Path = CACHE) -> list[dict]:
    with open(path, "rb") as f:
        return pickle.load(f)["records"]


def fitted_on(r: dict, untrusted: frozenset) -> bool:
    """Whether a head may fit a record: not a doubted speaker's, not a pitch-moved re-synthesis."""
    return r["speaker"] not in untrusted and r["channel"] != MOVED


def fusion_fitted_on(r: dict, untrusted: frozenset) -> bool:
    """Whether the fusion may fit a record: a real clip of a corpus the network never heard (no WORLD variant)."""
    return r["source"] in UNHEARD_BY_NET and fitted_on(r, untrusted) and r["channel"] != VARIANT


def window_table(recs: list[dict], key: str):
    X = np.concatenate([r[key] for r in recs])
    y = np.concatenate([np.full(len(r["windows"]), r["gender"] == "male", np.float64) for r in recs])
    spk = np.concatenate([np.full(len(r["windows"]), r["speaker"]) for r in recs])
    return X, y, spk


def fit_head(recs: list[dict], key: str = "emb", l2: float = HEAD_L2) -> tuple[np.ndarray, float]:
    """The head on one encoder's window embeddings (`key`: "emb" = the speaker encoder, "emb_<name>" others)."""
    X, y, spk = window_table(recs, key)
    return logistic(X, y, balanced_weights(spk, y), l2)


def speech_gated(r: dict, k: int, gate: tuple[int, int] | None) -> bool:
    """Whether window k passes the service's speech gate `gate` = (first steps, min speech steps): at least
    min of the window's first steps are speech (embed.py's "speech"; steps past the clip's end are not).
    None: no gate (2.1.0's schedule)."""
    if gate is None:
        return True
    first, least = gate
    return int(r["speech"][k * WINDOW_STEPS: k * WINDOW_STEPS + first].sum()) >= least


def view_schedule(r: dict, every: int = 1, gate: tuple[int, int] | None = None) -> list[int | None]:
    """Per window: the window whose embedding is in force (None where none), by the service's carry rule: in a
    run of consecutive eligible windows every `every`-th is embedded, the others carry the run's last; a window
    that is not eligible (not voiced, or failing the speech gate) has none and ends the run."""
    eligible = set(r["windows"].tolist())
    out: list[int | None] = []
    cur, run = None, 0
    for k in range(-(-r["levels"].size // WINDOW_STEPS)):
        if k not in eligible or not speech_gated(r, k, gate):
            cur, run = None, 0
        else:
            if run % every == 0:
                cur = k
            run += 1
        out.append(cur)
    return out


def embedded_windows(r: dict, every: int = 1, gate: tuple[int, int] | None = None) -> int:
    """How many windows the service runs the encoder on (the view's cost)."""
    return sum(j == k for k, j in enumerate(view_schedule(r, every, gate)))


def step_view_logits(r: dict, coef: np.ndarray, bias: float, every: int = 1, key: str = "emb",
                     gate: tuple[int, int] | None = None) -> np.ndarray:
    """The view's log-odds in force at each step (NaN where none), with the service's carry rule."""
    out = np.full(r["levels"].size, np.nan)
    z = dict(zip(r["windows"].tolist(), (r[key] @ coef + bias).tolist()))
    for k, j in enumerate(view_schedule(r, every, gate)):
        out[k * WINDOW_STEPS:(k + 1) * WINDOW_STEPS] = np.nan if j is None else z[j]
    return out


def fused_steps(r: dict, views: list[np.ndarray], fusion: tuple[float, list[float], float] | None) -> np.ndarray:
    """Per-step P(male): the network alone where no view (or fusion None), else the fused log-odds."""
    net = r["net"][: views[0].size]
    if fusion is None:
        z = net
    else:
        a, b, c = fusion
        z = np.where(np.isnan(views[0]), net, a * net + sum(w * np.nan_to_num(v) for w, v in zip(b, views)) + c)
    return 1 / (1 + np.exp(-z))


def clip_decision(r: dict, p: np.ndarray) -> str:
    voiced = r["levels"][: p.size] >= GATE_DB
    m = float(p[voiced].mean()) if voiced.any() else float(p.mean())
    if max(m, 1 - m) < UNKNOWN:
        return "unknown"
    return "male" if m > 0.5 else "female"


def fit_fusion(recs: list[dict], views: list[list[np.ndarray]]) -> tuple[float, list[float], float]:
    """(net, [view weights], bias) by logistic regression over voiced steps that have a view."""
    rows, ys, spks = [], [], []
    for r, vs in zip(recs, views):
        m = (~np.isnan(vs[0])) & (r["levels"][: vs[0].size] >= GATE_DB)
        if m.any():
            rows.append(np.stack([r["net"][: vs[0].size][m], *[v[m] for v in vs]], 1))
            ys.append(np.full(m.sum(), r["gender"] == "male", np.float64))
            spks.append(np.full(m.sum(), r["speaker"]))
    X, y, spk = np.concatenate(rows), np.concatenate(ys), np.concatenate(spks)
    coef, bias = logistic(X, y, balanced_weights(spk, y), 1e-4)
    return float(coef[0]), [float(c) for c in coef[1:]], bias


def loco_views(recs: list[dict], keys: list[str], every: int, l2: float = HEAD_L2,
               untrusted: frozenset = frozenset(), gate: tuple[int, int] | None = None) -> list[list[np.ndarray]]:
    """Each clip's per-step view log-odds, one array per encoder, from heads fitted without its corpus
    (and without the `untrusted` speakers: label_audit.py), on the schedule `every` / speech `gate`. The heads
    fit every voiced window either way: the gate changes which windows the service embeds, not what one means."""
    out: list[list[np.ndarray]] = [[] for _ in recs]
    for s in sorted({r["source"] for r in recs}):
        heads = [fit_head([r for r in recs if r["source"] != s and fitted_on(r, untrusted)], k, l2) for k in keys]
        for i, r in enumerate(recs):
            if r["source"] == s:
                out[i] = [step_view_logits(r, c, b, every, k, gate) for (c, b), k in zip(heads, keys)]
    return out


def slices(r: dict) -> list[str]:
    if r["channel"] == MOVED:
        return ["pitch moved"]
    out = ["telephone" if r["channel"] != "clean" else "clean"]
    emo = r["emotion"].lower()
    if r["gender"] == "female" and emo in LOW_AROUSAL:
        out.append("low-arousal women")
    if r["gender"] == "male" and emo in HIGH_AROUSAL:
        out.append("high-arousal men")
    return out


def score(recs: list[dict], decisions: list[str], left_out: frozenset = frozenset()) -> dict:
    """Accuracy per corpus x channel and per stress slice (unknown counts as wrong), `left_out` speakers not scored."""
    cells: dict[str, list[int]] = {}
    for r, d in zip(recs, decisions):
        if r["speaker"] in left_out or r["channel"] == VARIANT:
            continue
        ok = int(d == r["gender"])
        ch = "clean" if r["channel"] == "clean" else "telephone"
        keys = slices(r) if r["channel"] == MOVED else (f"{r['source']}/{ch}", *slices(r), "all")
        for key in keys:
            cells.setdefault(key, []).append(ok)
    return {k: {"accuracy": round(float(np.mean(v)), 4), "clips": len(v)} for k, v in sorted(cells.items())}


def evaluate(recs: list[dict], every: int, keys: list[str], untrusted: frozenset = frozenset(),
             gate: tuple[int, int] | None = None) -> dict:
    """Leave-one-corpus-out: heads (and fusion) fitted without the held-out corpus and without the `untrusted`
    speakers. Columns: the network, each view alone, the speaker view fused (gender 2.0), every view fused.
    `tables` score every clip as labelled; `tables_audited` leave the untrusted speakers out. `gate`: the speech
    gate (speech_gated), fusion refitted under it; "embedded_windows" counts the encoder runs it costs."""
    views = loco_views(recs, keys, every, untrusted=untrusted, gate=gate)
    sources = sorted({r["source"] for r in recs})
    variants = {"speaker fused": [0], **({"all fused": list(range(len(keys)))} if len(keys) > 1 else {})}
    fusions: dict[str, dict] = {name: {} for name in variants}
    for name, idx in variants.items():
        for s in sources:
            pick = [i for i, r in enumerate(recs) if r["source"] != s and fusion_fitted_on(r, untrusted)]
            fusions[name][s] = fit_fusion([recs[i] for i in pick], [[views[i][j] for j in idx] for i in pick])
    out = {"every": every, "views": keys, "untrusted_speakers": sorted(untrusted), "fusion_per_fold": fusions,
           **({"speech_gate": {"first_steps": gate[0], "min_speech_steps": gate[1]}} if gate else {}),
           "embedded_windows": sum(embedded_windows(r, every, gate) for r in recs if r["channel"] not in (VARIANT, MOVED)),
           "tables": {}, "tables_audited": {}}
    columns = {"net": None, **{f"view {k}": j for j, k in enumerate(keys)}, **variants}
    for name, sel in columns.items():
        dec = []
        for r, v in zip(recs, views):
            if sel is None:
                p = fused_steps(r, v, None)
            elif isinstance(sel, int):
                p = fused_steps(r, [v[sel]], (0.0, [1.0], 0.0))
            else:
                p = fused_steps(r, [v[j] for j in sel], fusions[name][r["source"]])
            dec.append(clip_decision(r, p))
        out["tables"][name] = score(recs, dec)
        out["tables_audited"][name] = score(recs, dec, untrusted)
    return out


def print_table(ev: dict, which: str = "tables") -> None:
    t = ev[which]
    cols = list(t)
    print(f"{'cell':28s} {'clips':>6s} " + " ".join(f"{c[-12:]:>12s}" for c in cols))
    for k in t[cols[0]]:
        print(f"{k:28s} {t[cols[0]][k]['clips']:6d} " + " ".join(f"{t[c][k]['accuracy']:12.3f}" for c in cols))


# ---- shipping: gender 2.0 = gender 1.3.0's network (model.onnx and its streaming graphs, unchanged) plus the views

MANIFEST = ROOT / "models/gender/manifest.json"
VERSION = "2.3.0"
EVERY = 16
# the service's speech gate since 2.1.1 (views.schedule.speech_gate): a window is embedded only when >= 4 of its
# first 13 steps are speech, so the encoder never runs on music or noise (LOCO 0.943 against 0.942 without it)
SPEECH_GATE = (13, 4)


PREVIOUS_COLUMN = "2.0.1 (Resemblyzer view fused)"
ENCODER_OF_KEY = {"emb": "speaker", "emb_whisper": "whisper", "emb_campplus": "campplus", "emb_campplus_int8": "campplus_int8"}


# the speaker map's encoder: gender ships a head on its embeddings for each speaker's gender in the map's summary
# (src/speakers/speaker-gender.ts), since 2.3's view (CAM++ up to 4.2 kHz, in int8) lives in another space
SPEAKER_HEAD_KEYS = ["emb_campplus"]


def head_json(coef: np.ndarray, bias: float) -> dict:
    return {"weights": [round(float(x), 7) for x in coef], "bias": round(bias, 7)}


def ship(recs: list[dict], keys: list[str], manifest: Path = MANIFEST, version: str = VERSION, every: int = EVERY,
         l2: float = HEAD_L2, untrusted: frozenset = frozenset(), gate: tuple[int, int] | None = SPEECH_GATE,
         speaker_keys: list[str] | None = None) -> dict:
    """Writes the views into `manifest` (a network's folder), with its version; `untrusted` speakers (the label
    audit's suspects) take no part in any fit; the fusion is fitted on the steps the speech `gate` gives a view.
    `speaker_keys` (default SPEAKER_HEAD_KEYS, those the cache holds and `keys` lacks): heads for the speaker map's
    summary only ("speaker_heads"), fitted like the views' on the same windows."""
    trusted = [r for r in recs if fitted_on(r, untrusted)]
    heads = [fit_head(trusted, k, l2) for k in keys]
    speaker_keys = [k for k in (SPEAKER_HEAD_KEYS if speaker_keys is None else speaker_keys)
                    if k not in keys and all(k in r for r in recs)]
    speaker_heads = [fit_head(trusted, k, l2) for k in speaker_keys]
    loco = loco_views(recs, keys, every, l2, untrusted, gate)
    picked = [i for i, r in enumerate(recs) if fusion_fitted_on(r, untrusted)]
    fusion = fit_fusion([recs[i] for i in picked], [loco[i] for i in picked])
    m = json.loads(manifest.read_text())
    # the network inside: named once, when the views were first added (a re-ship keeps the name)
    network = m.get("training", {}).get("encoder_view", {}).get("network", f"gender {m['version']} (model.onnx, unchanged)")
    m["version"] = version
    m["views"] = {
        "schedule": {"window_steps": WINDOW_STEPS, "every": every, "min_voiced_steps": MIN_VOICED_STEPS, "gate_db": GATE_DB,
                     **({"speech_gate": {"steps": gate[0], "min_speech_steps": gate[1]}} if gate else {})},
        "encoders": [{"encoder": ENCODER_OF_KEY[k], "head": head_json(c, b)} for k, (c, b) in zip(keys, heads)],
        "fusion": {"net": round(fusion[0], 6), "views": [round(w, 6) for w in fusion[1]], "bias": round(fusion[2], 6)},
        **({"speaker_heads": [{"encoder": ENCODER_OF_KEY[k], "head": head_json(c, b)} for k, (c, b) in zip(speaker_keys, speaker_heads)]}
           if speaker_keys else {}),
    }
    m.setdefault("training", {})["encoder_view"] = {
        "network": network,
        "heads": f"one logistic regression per encoder ({', '.join(ENCODER_OF_KEY[k] for k in keys + speaker_keys)}) on its window embeddings, speaker- and gender-balanced, "
                f"L2 {l2}, every labelled corpus clean and through telephone codecs ({len(trusted)} clip versions; "
                f"{len(untrusted)} speakers whose labels the audit doubts left out: models/gender/label_audit.json)",
        "fusion": f"logistic regression of (network log-odds, each head's log-odds) over voiced steps of {', '.join(UNHEARD_BY_NET)} "
                  "(never heard by the network), head outputs leave-one-corpus-out",
        "sources": sorted({r['source'] for r in recs}),
        # the label audit reads Resemblyzer's view ("emb"), so the cache holds it too
        "reproduce": "python -m training.encoders.embed --encoders "
                     + ",".join(f"{ENCODER_OF_KEY[k]}=models/encoders/{ENCODER_OF_KEY[k]}/encoder.onnx" for k in dict.fromkeys(["emb", *speaker_keys, *keys]))
                     + " && python -m training.encoders.label_audit && python -m training.encoders.pitch_moved"
                     + f" && python -m training.encoders.gender evaluate --views {','.join(keys)} --every {every}"
                     + (f" --speech-gate {gate[0]}:{gate[1]}" if gate else " --speech-gate none")
                     + f" && python -m training.encoders.gender ship --views {','.join(keys)}",
    }
    manifest.write_text(json.dumps(m, indent=2) + "\n")
    return m["views"]["fusion"]


def rebuild_views(built: str, views: dict, version: str, quick: bool) -> None:
    """`python -m training rebuild gender`: the views of a recipe (recipes/gender/<version>.json "views") onto the
    network just built in folder `built` (its model.onnx is the network the fusion is fitted with)."""
    from training.encoders import corpora, embed
    voices = corpora.sample(corpora.all_voices(), embed.PER_SPEAKER, embed.DEFAULT_PER_SPEAKER)
    if quick:
        n = views["smoke_clips"]
        voices = voices[:: max(1, len(voices) // n)][:n]
    encoders = {name: str(ROOT / path) for name, path in views["encoders"].items()}
    recs = embed.embed_voices(voices, encoders, str(Path(built) / "model.onnx"), workers=2)
    untrusted = frozenset(suspect_speakers(ROOT / views["label_audit"])) if views.get("label_audit") else frozenset()
    gate = tuple(views["speech_gate"]) if views.get("speech_gate") else None  # [first steps, min speech steps]
    ship(recs, views["keys"], Path(built) / "manifest.json", version=version, every=views["every"], l2=views["head_l2"],
         untrusted=untrusted, gate=gate)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["evaluate", "ship"])
    ap.add_argument("--cache", default=str(CACHE))
    ap.add_argument("--every", type=int, nargs="+", default=[EVERY])
    ap.add_argument("--head-variants", action="store_true", help="the heads also fit the WORLD variants of pitch_moved.py --train")
    ap.add_argument("--views", default="emb_campplus",
                    help="comma-separated embedding keys: emb_campplus (CAM++, shipped), emb (Resemblyzer), emb_whisper, ...")
    ap.add_argument("--speech-gate", metavar="FIRST:MIN", default="%d:%d" % SPEECH_GATE,
                    help="a window is eligible only if >= MIN of its FIRST steps are speech (needs a cache with "
                         "\"speech\", embed.py); default the shipped 13:4; `none`: 2.1.0's schedule")
    ap.add_argument("--out", default=str(OUT_JSON), help="evaluate: the results file (merged into when it exists)")
    a = ap.parse_args()
    gate = tuple(int(n) for n in a.speech_gate.split(":")) if a.speech_gate != "none" else None
    recs = load(Path(a.cache))
    keys = a.views.split(",")
    untrusted = frozenset(suspect_speakers())
    if a.head_variants:
        recs = recs + load(VARIANTS_CACHE)
    if a.command == "evaluate":
        if MOVED_CACHE.exists():  # the pitch-moved slice (pitch_moved.py), when it has been made with these views
            moved = load(MOVED_CACHE)
            if all(k in r for r in moved for k in keys + (["speech"] if gate else [])):
                recs = recs + moved
        # other entries (e.g. "tried_speaker_and_whisper", an earlier run with more views) are kept
        out = Path(a.out)
        results = json.loads(out.read_text()) if out.exists() else {}
        # 2.0.1 side by side: Resemblyzer's view ("emb") on every 8th window, when the cache holds it
        previous = evaluate(recs, 8, ["emb"], untrusted) if "emb" not in keys and all("emb" in r for r in recs) else None
        for e in a.every:
            ev = evaluate(recs, e, keys, untrusted, gate)
            if previous is not None:
                for which in ("tables", "tables_audited"):
                    t = ev[which]
                    ev[which] = {"net": t["net"], PREVIOUS_COLUMN: previous[which]["speaker fused"],
                                 **{k: v for k, v in t.items() if k != "net"}}
            tag = f", speech gate {a.speech_gate}" if gate else ""
            print(f"\n== every {e}, views {keys}{tag}: as labelled ({ev['embedded_windows']} windows embedded)")
            print_table(ev)
            print(f"\n== every {e}, views {keys}{tag}: {len(untrusted)} speakers the audit doubts left out")
            print_table(ev, "tables_audited")
            results[str(e) + (f" gate {a.speech_gate}" if gate else "")] = ev
        out.write_text(json.dumps(results, indent=1) + "\n")
        return
    ship(recs, keys, untrusted=untrusted, gate=gate)


if __name__ == "__main__":
    main()
