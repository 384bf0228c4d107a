"""The service's encoder windows in Python (src/inference/encoder-stage.ts): window k = steps
[25k, 25k + 25) of 64 ms on the clip's step grid, the last one zero-padded; a window is embedded
when at least MIN_VOICED_STEPS of its steps reach GATE_DB. Heads are trained and scored on
exactly the windows the service embeds."""
from __future__ import annotations

import numpy as np

from training.features import step_levels  # the addon's step levels (dBFS over each step's real samples)

STEP = 1024
WINDOW_STEPS = 25
MIN_VOICED_STEPS = 8
GATE_DB = -50.0


def voiced_windows(x: np.ndarray, levels: np.ndarray | None = None, min_voiced: int = MIN_VOICED_STEPS) -> tuple[list[int], np.ndarray]:
    """Indices of the windows the service would embed (schedule every = 1) and their samples [n, 25600]."""
    levels = step_levels(x) if levels is None else levels
    nwin = -(-levels.size // WINDOW_STEPS)
    idx, pcm = [], []
    for k in range(nwin):
        lv = levels[k * WINDOW_STEPS:(k + 1) * WINDOW_STEPS]
        if int((lv >= GATE_DB).sum()) < min_voiced:
            continue
        w = np.zeros(WINDOW_STEPS * STEP, dtype=np.float32)
        seg = x[k * WINDOW_STEPS * STEP:(k + 1) * WINDOW_STEPS * STEP]
        w[:seg.size] = seg
        idx.append(k)
        pcm.append(w)
    return idx, (np.stack(pcm) if pcm else np.zeros((0, WINDOW_STEPS * STEP), np.float32))
