"""Gender 2.x's view schedule (training/encoders/gender.py): the carry rule, and the service's speech gate on top of it."""
import numpy as np

from training.encoders import gender as G

W = G.WINDOW_STEPS


def clip(n_windows: int, speech: np.ndarray) -> dict:
    """Every window voiced (embedded by level); window k's embedding is [k], so the head coef [1] reads it back."""
    return {"levels": np.zeros(n_windows * W, np.float32), "windows": np.arange(n_windows, dtype=np.int32),
            "emb": np.arange(n_windows, dtype=np.float32)[:, None], "speech": speech}


def per_window(r: dict, every: int, gate=None) -> list:
    v = G.step_view_logits(r, np.ones(1), 0.0, every, "emb", gate)
    return [None if np.isnan(x) else int(x) for x in v[::W]]


def test_a_window_with_too_little_speech_ends_the_run():
    speech = np.ones(5 * W, bool)
    speech[2 * W: 2 * W + 13] = False
    speech[2 * W: 2 * W + 3] = True   # 3 of window 2's first 13 steps are speech: fewer than 4
    speech[2 * W + 13: 3 * W] = True  # speech later in the window does not count
    r = clip(5, speech)
    assert per_window(r, every=16) == [0, 0, 0, 0, 0]  # no gate: one run, window 0 carried
    assert per_window(r, every=16, gate=(13, 4)) == [0, 0, None, 3, 3]  # the next eligible window is embedded
    assert G.embedded_windows(r, 16) == 1 and G.embedded_windows(r, 16, (13, 4)) == 2
    speech[2 * W + 12] = True  # a 4th speech step among the first 13: the window passes again
    assert per_window(r, every=16, gate=(13, 4)) == [0, 0, 0, 0, 0]


def test_steps_past_the_clip_end_are_not_speech():
    r = clip(2, np.ones(W + 3, bool))  # window 1 holds only 3 steps of the clip
    r["levels"] = r["levels"][: W + 3]
    assert per_window(r, every=1, gate=(13, 4)) == [0, None]
    assert per_window(r, every=1, gate=(13, 3)) == [0, 1]
