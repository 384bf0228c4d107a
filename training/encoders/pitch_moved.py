"""The pitch-moved stress slice for gender 2.x: clean clips of every labelled corpus re-synthesised by WORLD with the
F0 moved towards the other gender and the spectral envelope kept (men x1.5-1.8, women x0.6-0.7, as
training/validate/slices.py), embedded like the service (embed.record). A voice whose pitch alone moved must keep
its gender; gender.py scores these clips leave-one-corpus-out as the slice "pitch moved" and never fits on them.

  python -m training.encoders.pitch_moved           # ~2 min on 2 cores -> training/runs/encoders/gender_pitch.pkl
  python -m training.encoders.pitch_moved --train   # variants for the heads to learn from -> gender_variants.pkl

--train makes WORLD variants of 2 other clips of every trusted speaker with the F0 moved as the 1.x networks'
training variants (training/data/voice_variants.py ranges: towards the other gender and a little either way);
gender.py may fit the heads on them (never the fusion; never scored), always leave-one-corpus-out.
"""
from __future__ import annotations

import pickle
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from training.encoders import corpora, embed
from training.encoders.corpora import Voice
from training.encoders.gender import MOVED as CHANNEL, MOVED_CACHE as OUT, VARIANT as TRAIN_CHANNEL, VARIANTS_CACHE as TRAIN_OUT

ROOT = Path(__file__).resolve().parents[2]
TRAIN_RATIOS = {"female": [(0.65, 0.9), (0.85, 1.25)], "male": [(1.25, 2.5), (0.9, 1.5)]}
CLIPS = 30  # per corpus and gender (fewer where a corpus has fewer)
RATIOS = {"female": (0.6, 0.7), "male": (1.5, 1.8)}


def pick(recs: list[dict], untrusted: set[str], seed: int = 3) -> list[Voice]:
    """CLIPS clean clips per corpus and gender, at most 2 per speaker, from the records of gender.pkl."""
    rng = np.random.default_rng(seed)
    by: dict[tuple, dict[str, list[Voice]]] = {}
    for r in recs:
        if r["channel"] == "clean" and r["speaker"] not in untrusted:
            v = Voice(r["source"], r["speaker"], r["gender"], r["ref"], r["emotion"])
            by.setdefault((r["source"], r["gender"]), {}).setdefault(r["speaker"], []).append(v)
    out = []
    for key in sorted(by):
        pool = []
        for spk in sorted(by[key]):
            vs = by[key][spk]
            pool += [vs[i] for i in rng.permutation(len(vs))[:2]]
        out += [pool[i] for i in sorted(rng.permutation(len(pool))[:CLIPS])]
    return out


def pick_for_training(recs: list[dict], untrusted: set[str], moved: set[str], seed: int = 4) -> list[Voice]:
    """2 clean clips per trusted speaker, other than the scored ones where the speaker has more."""
    rng = np.random.default_rng(seed)
    by: dict[str, list[Voice]] = {}
    for r in recs:
        if r["channel"] == "clean" and r["speaker"] not in untrusted:
            by.setdefault(r["speaker"], []).append(Voice(r["source"], r["speaker"], r["gender"], r["ref"], r["emotion"]))
    out = []
    for spk in sorted(by):
        vs = [v for v in by[spk] if v.ref not in moved] or by[spk]
        out += [vs[i] for i in sorted(rng.permutation(len(vs))[:2])]
    return out


def _work(args) -> list[dict]:
    voices, seed, train = args
    from training.data.voice_variants import make_variants
    # every shipped encoder, so that the slice scores any view gender.py is asked for
    encs = {name: embed.session(str(ROOT / f"models/encoders/{name}/encoder.onnx"))
            for name in sorted(p.name for p in (ROOT / "models/encoders").iterdir() if (p / "encoder.onnx").exists())}
    gnet = embed.session(str(ROOT / "models/gender/model.onnx"))
    rng = np.random.default_rng(seed)
    out = []
    for v in voices:
        x16 = np.clip(np.round(corpora.load(v) * 32767), -32768, 32767).astype(np.int16)
        if train:
            for y in make_variants((x16, TRAIN_RATIOS[v.gender], 0.06, int(rng.integers(1 << 30)))):
                out.append(embed.record(v, TRAIN_CHANNEL, y.astype(np.float32) / 32768.0, encs, gnet))
            continue
        vs = make_variants((x16, [RATIOS[v.gender]], 0.0, int(rng.integers(1 << 30))))
        if vs:
            out.append(embed.record(v, CHANNEL, vs[0].astype(np.float32) / 32768.0, encs, gnet))
    return out


def main() -> None:
    import argparse
    from training.encoders import gender as G
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", action="store_true")
    a = ap.parse_args()
    recs, untrusted = G.load(), G.suspect_speakers()
    scored = pick(recs, untrusted)
    voices = pick_for_training(recs, untrusted, {v.ref for v in scored}) if a.train else scored
    out = TRAIN_OUT if a.train else OUT
    chunks = [voices[i:i + 20] for i in range(0, len(voices), 20)]
    with Pool(2) as pool:
        records = [r for part in pool.map(_work, [(c, 5000 + j, a.train) for j, c in enumerate(chunks)]) for r in part]
    with open(out, "wb") as f:
        pickle.dump({"records": records}, f)
    print(f"wrote {out}: {len(records)} re-syntheses of {len(voices)} clips")


if __name__ == "__main__":
    main()
