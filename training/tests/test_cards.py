"""`python -m training.cards` re-renders every shipped card as committed: the cards are made by the pipeline, and what a
release wrote by hand lives in the renderer's texts (cards/experiments.py, cards/sections.py, cards/text_*.py; gender's
views part in its card), so a re-render loses nothing."""
import os
import shutil

import pytest

from training.cards.render import main
from training.data import clips as D

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(D.DATASETS, "clips.csv")), reason="datasets not available")

MODELS = os.path.join(os.path.dirname(D.HERE), "models")


def test_rerendered_cards_equal_the_committed_ones(tmp_path):
    copy = tmp_path / "models"
    shutil.copytree(MODELS, copy)
    main([str(copy)])
    for task in sorted(os.listdir(MODELS)):
        card = os.path.join(MODELS, task, "MODEL_CARD.md")
        if not os.path.exists(os.path.join(MODELS, task, "metrics.json")) or not os.path.exists(card):
            continue
        assert open(copy / task / "MODEL_CARD.md").read() == open(card).read(), f"{task}: the re-rendered card differs"
