"""Teacher opinions on every speech clip, for distilling the gender model (training time only).

Two outside models ship their weights inside their PyPI packages and were trained on data we do not have:
- inaSpeechSegmenter 0.6.8 (MIT): a male/female CNN trained on French broadcast speech;
- Resemblyzer 0.1.4 (Apache-2.0): a speaker encoder (256-d d-vectors); gender comes from a linear probe
  on them (distill.py), trained on our labelled corpora.
They need TensorFlow and an older setuptools, so they run in their own virtual environment:

    python -m venv /tmp/teachers && /tmp/teachers/bin/pip install -r training/requirements-teachers.txt
    /tmp/teachers/bin/python -m training.data.teachers          # -> training/cache/teachers.npz

The service never loads them: only their opinions (a number and a vector per clip) reach training.
"""
from __future__ import annotations

import os
import time
import warnings

import numpy as np

from training.data import clips as D
from training.data import teacher_clips as DD

OUT = os.path.join(D.CACHE, "teachers.npz")
MAX_SECONDS = 8.0   # the middle 8 s of a longer clip is enough for a clip-level opinion
PATCH_STRIDE = 5    # one inaSpeechSegmenter patch (0.68 s) every 100 ms instead of every 20 ms


def _numpy2_aliases():
    """inaSpeechSegmenter 0.6.8 predates NumPy 2, which dropped these aliases; restore them for it."""
    for name, value in (("int", int), ("float", float), ("bool", bool), ("complex", complex)):
        if name not in np.__dict__:
            setattr(np, name, value)
    if not hasattr(np.lib, "pad"):
        np.lib.pad = np.pad


def ina_female_prob(gender_nn, x: np.ndarray) -> tuple[float, int]:
    """inaSpeechSegmenter's gender CNN over the energetic frames of a clip: mean P(female) and the patch count."""
    _numpy2_aliases()
    from inaSpeechSegmenter.segmenter import _get_patches
    from inaSpeechSegmenter.sidekit_mfcc import mfcc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, loge, _, mspec = mfcc(x.astype(np.float32), get_mspec=True)
    if len(loge) < 68:  # as the package does for short media: pad the spectrogram with its minimum
        pad = 68 - len(loge)
        mspec = np.concatenate((mspec, np.ones((pad, 24)) * np.min(mspec)))
        loge = np.concatenate((loge, np.full(pad, -np.inf)))
    patches, finite = _get_patches(mspec, 68, 2)
    keep_every = np.zeros(len(patches), dtype=bool)
    keep_every[::PATCH_STRIDE] = True
    # the package's energy gate (mean log-energy + log 0.03) without its Viterbi smoothing (pyannote's
    # implementation does not run on NumPy 2); one patch per two frames
    finite_e = loge[np.isfinite(loge)]
    gate = (loge > finite_e.mean() + np.log(0.03)) if finite_e.size else np.zeros(len(loge), dtype=bool)
    active = gate[::2][: len(patches)]
    keep = finite[: active.size] & active & keep_every[: active.size]
    if not keep.any():
        keep = finite[: active.size]
    if not keep.any():
        return float("nan"), 0
    # Keras 3 reads the saved Keras 2 graph with an extra leading axis: (N, 1, 68, 24)
    p = gender_nn.predict(patches[: active.size][keep][:, None], batch_size=256, verbose=0)
    return float(p[:, 0].mean()), int(keep.sum())  # outlabels ('female', 'male')


def middle(x: np.ndarray) -> np.ndarray:
    """The middle MAX_SECONDS of a longer clip (enough for a clip-level opinion)."""
    n = int(MAX_SECONDS * D.SR)
    return x if x.size <= n else x[(x.size - n) // 2:(x.size - n) // 2 + n]


def dvector(enc, x: np.ndarray) -> np.ndarray:
    """Resemblyzer's d-vector of a 16 kHz clip (its VAD-trimmed audio); NaNs when too little speech is left."""
    from resemblyzer import preprocess_wav
    w = preprocess_wav(x, source_sr=D.SR)
    return enc.embed_utterance(w).astype(np.float32) if w.size >= 1600 else np.full(256, np.nan, dtype=np.float32)


def main():
    from inaSpeechSegmenter.segmenter import Gender
    from resemblyzer import VoiceEncoder
    import torch
    torch.set_num_threads(1)
    clips = D.load_clips()
    use = DD.teacher_clips(clips)
    store = D.AudioStore(clips)
    gender = Gender(batch_size=256)
    enc = VoiceEncoder(device="cpu", verbose=False)
    idx, ina, npatch, emb = [], [], [], []
    t0 = time.time()
    for k, c in enumerate(use):
        x = middle(store.get(c))
        p, n = ina_female_prob(gender.nn, x)
        idx.append(c.idx); ina.append(p); npatch.append(n); emb.append(dvector(enc, x))
        if (k + 1) % 500 == 0:
            print(f"[teachers] {k + 1}/{len(use)} ({time.time() - t0:.0f}s)", flush=True)
    tmp = OUT[:-4] + ".tmp.npz"
    np.savez(tmp, idx=np.array(idx), ina_female=np.array(ina, dtype=np.float32), ina_patches=np.array(npatch),
             emb=np.stack(emb).astype(np.float16), rows=DD.rows_key(use))
    os.replace(tmp, OUT)
    print(f"[teachers] {len(use)} clips in {time.time() - t0:.0f}s -> {OUT}", flush=True)


if __name__ == "__main__":
    main()
