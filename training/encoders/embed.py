"""Embeds labelled voices for the encoder heads, as the service would see them: each sampled clip
clean and through a telephone channel (training/channels.py codecs), cut into the service's
windows (windows.py), each voiced window through the shipped encoder graph
(models/encoders/<name>/encoder.onnx), beside the per-step log-odds of the shipped gender network and the
shipped speech network's per-step decision ("speech": its argmax is speech; for the service's speech gate).

  python -m training.encoders.embed --out training/runs/encoders/gender.pkl     # ~25 min on 2 cores (both encoders)
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import pickle
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from training.encoders import corpora, windows
from training.encoders.corpora import Voice

ROOT = Path(__file__).resolve().parents[2]
# clips per speaker: a few corpora have few speakers and many clips each
PER_SPEAKER = {"nemo": 24, "hyke": 12, "urdu": 10, "speechocean": 6, "audiomnist_az": 8, "fsdd": 4}
DEFAULT_PER_SPEAKER = 7
SPEECH_NET = ROOT / "models/speech/model.onnx"


def session(path: str):
    """A one-thread CPU session (the embedding runs one process per core)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def _net_logit(sess, x: np.ndarray) -> np.ndarray:
    from training.features import logmel_fast
    p = sess.run(None, {"features": logmel_fast(x)[None].astype(np.float32)})[0][0]
    p1 = np.clip(p[:, 1], 1e-6, 1 - 1e-6)
    return np.log(p1 / (1 - p1)).astype(np.float32)


@functools.lru_cache(maxsize=None)
def speech_session(path: str = str(SPEECH_NET)):
    """The speech network, once per process; its manifest must read the same features _net_logit feeds
    (logmel_fast: the gender network's front end), else the "speech" steps would be computed on the wrong input."""
    m = json.loads((Path(path).parent / "manifest.json").read_text())
    g = json.loads((ROOT / "models/gender/manifest.json").read_text())
    if m["features"] != g["features"]:
        raise SystemExit(f"{path}: features {m['features']} differ from the gender network's {g['features']}")
    keys = m["raw_keys"]
    return session(path), keys.index("speech")


def _speech_steps(snet, x: np.ndarray) -> np.ndarray:
    """Per step: whether the speech network's argmax is speech. As _net_logit: the whole clip in one call; the
    graph sees no context beyond the clip's edges (its 12 steps either side), as in the service's runner."""
    from training.features import logmel_fast
    sess, speech = snet
    p = sess.run(None, {"features": logmel_fast(x)[None].astype(np.float32)})[0][0]
    return p.argmax(1) == speech


def record(v: Voice, channel: str, sig: np.ndarray, encs: dict, gnet, min_voiced: int = windows.MIN_VOICED_STEPS,
           snet=None) -> dict:
    """One clip version as the service sees it: step levels, voiced windows, each encoder's embeddings
    ("emb" is the speaker encoder's, gender 2.0's view; others "emb_<name>"), the network's log-odds and the
    speech network's speech steps (`snet`: speech_session(), opened here when not given)."""
    levels = windows.step_levels(sig)
    idx, pcm = windows.voiced_windows(sig, levels, min_voiced)
    rec = {"source": v.source, "speaker": v.speaker, "gender": v.gender, "ref": v.ref, "emotion": v.emotion,
           "channel": channel, "levels": levels.astype(np.float32), "windows": np.array(idx, np.int32),
           "net": _net_logit(gnet, sig), "speech": _speech_steps(snet or speech_session(), sig)}
    # windows are embedded by level alone: the speech gate only ever drops some, so gender.py applies it
    assert rec["speech"].size == levels.size
    for name, enc in encs.items():
        dim = enc.get_outputs()[0].shape[-1]
        emb = enc.run(None, {"pcm": pcm})[0] if len(idx) else np.zeros((0, dim), np.float32)
        rec["emb" if name == "speaker" else f"emb_{name}"] = emb.astype(np.float32)
    return rec


def _work(args) -> list[dict]:
    voices, seed, encoders, net, min_voiced = args
    from training.data.channels import phone_all
    encs = {name: session(path) for name, path in encoders.items()}
    gnet = session(net)
    snet = speech_session()
    clean = [corpora.load(v) for v in voices]
    phone, codecs = phone_all(clean, seed=seed)
    out = []
    for v, versions in zip(voices, zip(clean, phone, codecs)):
        x, y, codec = versions
        for channel, sig in (("clean", x), (codec, y)):
            out.append(record(v, channel, sig, encs, gnet, min_voiced, snet))
    return out


def embed_voices(voices: list[Voice], encoders: dict[str, str], net: str, workers: int,
                 min_voiced: int = windows.MIN_VOICED_STEPS) -> list[dict]:
    """Every clip version's windows and embeddings (see the module doc), in the voices' order."""
    chunks = [voices[i:i + 40] for i in range(0, len(voices), 40)]
    print(f"{len(voices)} clips in {len(chunks)} chunks", flush=True)
    records: list[dict] = []
    with Pool(workers) as pool:
        for i, part in enumerate(pool.imap(_work, [(c, 1000 + j, encoders, net, min_voiced) for j, c in enumerate(chunks)])):
            records += part
            if i % 10 == 0:
                print(f"chunk {i + 1}/{len(chunks)}", flush=True)
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "training/runs/encoders/gender.pkl"))
    ap.add_argument("--encoders", default=f"speaker={ROOT / 'models/encoders/speaker/encoder.onnx'},"
                                          f"campplus={ROOT / 'models/encoders/campplus/encoder.onnx'}",
                    help="name=encoder.onnx[,name=...]: every encoder embeds the same windows")
    ap.add_argument("--net", default=str(ROOT / "models/gender/model.onnx"), help="the per-step network fused with the view")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--limit", type=int, default=0, help="smoke test: at most this many clips")
    ap.add_argument("--min-voiced", type=int, default=windows.MIN_VOICED_STEPS,
                    help="embed windows with at least this many voiced steps (a lower value keeps a superset to filter)")
    a = ap.parse_args()
    voices = corpora.sample(corpora.all_voices(), PER_SPEAKER, DEFAULT_PER_SPEAKER)
    if a.limit:
        voices = voices[:: max(1, len(voices) // a.limit)][: a.limit]
    encoders = dict(e.split("=", 1) for e in a.encoders.split(","))
    records = embed_voices(voices, encoders, a.net, a.workers, a.min_voiced)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "wb") as f:
        pickle.dump({"records": records, "encoders": encoders, "net": a.net}, f)
    print(f"wrote {a.out}: {len(records)} clip versions, {sum(len(r['windows']) for r in records)} windows")


if __name__ == "__main__":
    main()
