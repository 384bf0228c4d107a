"""prior_shift.py: the class-prior shift of arousal 1.0.1 is exact in the graph and chosen without the scored corpus."""
import os
import shutil

import numpy as np

from training.export import prior_shift as PS

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_shift_graph_adds_to_the_head_bias_exactly(tmp_path):
    src = os.path.join(HERE, "models", "arousal", "model.onnx")
    dst = str(tmp_path / "model.onnx")
    shutil.copyfile(src, dst)
    PS.shift_graph(dst, 0.75)
    assert PS.check_exact(src, dst, 0.75) < 1e-5
    assert PS.check_exact(src, dst, 0.0) > 1e-3  # the graph did change


def _rows(n_neutral_right):
    """Clips whose step probabilities lean high; `n_neutral_right` of 4 neutral clips lean neutral."""
    lean = lambda k: np.tile(np.eye(3)[k] * 0.3 + 0.2, (5, 1)).astype(np.float32)
    rows = [(0, lean(0), np.ones(5, bool)) for _ in range(4)] + [(1, lean(1), np.ones(5, bool)) for _ in range(4)]
    rows += [(2, lean(2) if i < n_neutral_right else np.tile([0.45, 0.2, 0.35], (5, 1)), np.ones(5, bool)) for i in range(4)]
    return rows


def test_a_shift_towards_neutral_turns_near_misses_into_neutral():
    rows = _rows(1)
    before, after = PS.shifted_scores(rows, 0.0), PS.shifted_scores(rows, 0.5)
    assert before["recall"]["neutral"] == 0.25 and after["recall"]["neutral"] == 1.0
    assert after["recall"]["high"] == 1.0 and after["uar"] > before["uar"]


def test_the_shift_is_chosen_without_the_corpus_it_scores(monkeypatch):
    # corpus "d" would gain from a large shift, the others lose from any: the fold that holds d out must not shift
    table = {}
    for c in ("a", "b", "c", "d"):
        for v in PS.RECORDINGS:
            for g in PS.GRID:
                g = float(g)
                table[(c, v, g)] = {"uar": (0.5 + 0.05 * g) if c == "d" else (0.5 - 0.01 * abs(g)), "recall": {}}
    assert PS.choose(table, ["a", "b", "c"]) == 0.0
    assert PS.choose(table, ["d"]) == float(PS.GRID.max())
