"""A shipped manifest that lists the sources its model learnt from must match its training_data_sha256: the card
(cards/render.py) names those sources alone, however clips.csv has grown since."""
import json
import os

import pytest

from training.data import clips as D

ROOT = os.path.dirname(D.HERE)
needs_data = pytest.mark.skipif(not os.path.exists(os.path.join(D.DATASETS, "clips.csv")), reason="datasets not available")


@needs_data
def test_listed_training_sources_reproduce_the_data_hash():
    clips = D.load_clips()
    checked = 0
    for task in ("speech", "gender", "arousal"):
        m = json.load(open(os.path.join(ROOT, "models", task, "manifest.json")))
        sources = m.get("training", {}).get("sources")
        if not sources:
            continue
        used = [c for c in clips if D.task_label(task, c) is not None and c.source in set(sources)]
        assert D.rows_sha256(used) == m["training_data_sha256"], task
        checked += 1
    assert checked >= 1  # speech lists them
