"""Every shipped model names a recipe file that holds what its manifest records, and its rebuild command runs: the
smoke variant (`python -m training rebuild TASK --quick`: a small part of the clip table, one short epoch per step)
must give a model folder the service would load in place of the shipped one (same fields, same network size)."""
import json
import os
import shlex

import pytest

from training import rebuild as R
from training.recipes import config as C

SHIPPED = R.shipped()


def test_every_shipped_model_names_its_recipe_file():
    assert set(SHIPPED) == {"speech", "gender", "arousal", "emotions"}
    for task, m in SHIPPED.items():
        recipe = R.load_recipe(task)
        assert recipe["model"] == task and recipe["version"] == m["version"]
        assert m["training"]["rebuild"] == recipe["rebuild"] == f"python -m training rebuild {task}"
        for step in recipe["steps"]:  # every hyperparameter is named, none left to a default
            cls = {"longform": C.LongformRecipe, "speaker": C.SpeakerRecipe}[step["recipe"]]
            assert set(step["hyperparameters"]) == {f.name for f in C.dataclasses.fields(cls)}
            assert C.from_dict(cls, step["hyperparameters"]).task == task


def _same(step, recorded, keys):
    hp = step["hyperparameters"]
    for ours, theirs in keys:
        assert hp[ours] == recorded[theirs], (step["name"], ours)


def test_recipe_files_hold_what_the_manifests_record():
    g = R.load_recipe("gender")
    members = SHIPPED["gender"]["training"]["ensemble_of"]
    for step, rec in zip(g["steps"], members):
        _same(step, rec, [("epochs", "epochs"), ("seed", "seed"), ("lr", "lr"), ("ema", "ema")])
    _same(g["steps"][0], members[0], [("examples", "examples"), ("variants", "variants")])
    _same(g["steps"][1], members[1], [("examples", "examples"), ("variants", "variants")])
    _same(g["steps"][2], members[2], [("examples", "examples_per_epoch")])
    assert g["steps"][2]["hyperparameters"]["cfg"] == {"lifter": 0}
    assert g["ensemble"]["weights"] == SHIPPED["gender"]["training"]["weights"]
    views = SHIPPED["gender"]["views"]  # gender 2.x: the encoder views
    assert g["views"]["every"] == views["schedule"]["every"]
    # the recipe embeds with the views' encoders and those of the speaker map's heads (gender 2.3: "speaker_heads")
    assert sorted(g["views"]["encoders"]) == sorted({e["encoder"] for e in views["encoders"] + views.get("speaker_heads", [])})
    assert f"--views {','.join(g['views']['keys'])}" in SHIPPED["gender"]["training"]["encoder_view"]["reproduce"]
    s = R.load_recipe("speech")["steps"][0]
    _same(s, SHIPPED["speech"]["training"], [("examples", "examples"), ("epochs", "epochs"), ("seed", "seed"), ("lr", "lr"), ("ema", "ema")])
    a = R.load_recipe("arousal")
    _same(a["steps"][0], SHIPPED["arousal"]["training"], [("examples", "examples"), ("epochs", "epochs"), ("seed", "seed")])
    ps = SHIPPED["arousal"]["training"]["prior_shift"]
    assert a["prior_shift"]["shipped_shift"] == ps["logit_shift"] and a["prior_shift"]["chosen_on"] == ps["chosen_on"]
    e = R.load_recipe("emotions")
    t = SHIPPED["emotions"]["training"]
    _same(e["steps"][0], t, [("examples", "examples_per_epoch"), ("epochs", "epochs"), ("seed", "seed"), ("lr", "lr"), ("ema", "ema")])
    assert e["fuse"]["weight"] == t["fused"]["weight"] and e["fuse"]["arousal"]["version"] == t["fused"]["arousal_version"]


def test_recorded_commands_train_the_steps_of_the_recipe_files():
    recorded = {"speech": [SHIPPED["speech"]["training"]], "emotions": [SHIPPED["emotions"]["training"]],
                "gender": SHIPPED["gender"]["training"]["ensemble_of"]}
    for task, runs in recorded.items():
        for step, run in zip(R.load_recipe(task)["steps"], runs):
            assert run["reproduce"] == C.step_command(f"training.recipes.{step['recipe']}",
                                                      SHIPPED[task]["training"]["recipe"], step["name"])
            assert C.recipe_step(SHIPPED[task]["training"]["recipe"], step["name"]) == step


@pytest.mark.parametrize("cls,hp", [
    (C.SpeakerRecipe, {"task": "gender", "variants": 0.35, "embed_steps": 4000, "cfg": {"lifter": 0},
                       "leave_out_emotions": ("calm", "sad"), "speaker_fraction": 0.5}),
    (C.LongformRecipe, {"task": "gender", "variants": False, "ema": 0.0, "gender_high_p": 0.3, "sources": ("ravdess", "baved")}),
    (C.LongformRecipe, {"task": "speech"}),
])
def test_the_recorded_command_gives_the_same_recipe_back(cls, hp):
    import argparse
    r = cls(**hp)
    argv = shlex.split(C.command(r))[3:]  # after "python -m <module>"
    ap = argparse.ArgumentParser()
    ap.add_argument("--task")
    C.add_arguments(ap, cls)
    assert C.from_args(cls, ap.parse_args(argv)) == r


def test_sources_names_the_corpora_of_every_step():
    rep = R.sources()
    assert set(rep) == set(SHIPPED)
    assert set(rep["gender"]["steps"]) == {"member1", "member2", "member3"}
    assert "hyke" in rep["gender"]["steps"]["member3"]["labelled"]  # the speaker recipe's 7 corpora
    assert "hyke" not in rep["gender"]["steps"]["member1"]["labelled"]  # the longform recipe's 3
    assert any("Resemblyzer" in a for a in rep["gender"]["steps"]["member3"]["also"])
    assert rep["emotions"]["inputs from git"]
    assert rep["speech"]["clips.csv now"] == "the same rows"


@pytest.mark.parametrize("task", sorted(SHIPPED))
def test_smoke_rebuild_matches_the_shipped_manifest(task, tmp_path):
    built, rows = R.rebuild(task, quick=True, work=str(tmp_path))
    failed = [(what, detail) for what, ok, detail in rows if not ok]
    assert not failed, failed
    m = json.load(open(os.path.join(built, "manifest.json")))
    assert m["training"]["recipe"] == SHIPPED[task]["training"]["recipe"]
    for f in ("model.onnx", "stream.onnx", "stream_start.onnx", "MODEL_CARD.md", "metrics.json"):
        assert os.path.exists(os.path.join(built, f)), f
