"""The service's encoder windows in Python (src/inference/encoder-stage.ts): window k = steps
[25k, 25k + 25) of 64 ms on the clip's step grid, the last one zero-padded; a window is embedded
when at least MIN_VOICED_STEPS of its steps reach GATE_DB. Heads are trained and scored on
exactly the windows the service embeds."""
from __future__ import annotations

import numpy as np

STEP = 1024
WINDOW_STEPS = 25
MIN_VOICED_STEPS = 8
GATE_DB = -50.0


def step_levels(x: np.ndarray) -> np.ndarray:
    """Level of each 64 ms step in dBFS over its real samples (as the addon)."""
    n = x.size
    steps = -(-n // STEP)
    pad = np.zeros(steps * STEP, dtype=np.float64)
    pad[:n] = x
    e = (pad.reshape(steps, STEP) ** 2).sum(axis=1)
    real = np.full(steps, STEP, dtype=np.float64)
    real[-1] = n - (steps - 1) * STEP
    return 10.0 * np.log10(e / real + 1e-12)


def voiced_windows(x: np.ndarray, levels: np.ndarray | None = None) -> tuple[list[int], np.ndarray]:
    """Indices of the windows the service would embed (schedule every = 1) and their samples [n, 25600]."""
    levels = step_levels(x) if levels is None else levels
    nwin = -(-levels.size // WINDOW_STEPS)
    idx, pcm = [], []
    for k in range(nwin):
        lv = levels[k * WINDOW_STEPS:(k + 1) * WINDOW_STEPS]
        if int((lv >= GATE_DB).sum()) < MIN_VOICED_STEPS:
            continue
        w = np.zeros(WINDOW_STEPS * STEP, dtype=np.float32)
        seg = x[k * WINDOW_STEPS * STEP:(k + 1) * WINDOW_STEPS * STEP]
        w[:seg.size] = seg
        idx.append(k)
        pcm.append(w)
    return idx, (np.stack(pcm) if pcm else np.zeros((0, WINDOW_STEPS * STEP), np.float32))
