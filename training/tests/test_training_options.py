"""The training-time options of the speaker recipe (recipes/speaker.py): gradient reversal (--adv), its nuisance
labels, band-edge dropout (--band-drop), and the emotion labels an experiment keeps out of training
(--leave-out-emotions, an argument of data.speakers.training_items, not a module switch)."""
import types

import torch

from training.data import speakers as SD
from training.recipes import speaker as ST


def test_reversal_flips_the_gradient_and_a_negative_scale_keeps_it():
    x = torch.ones(3, requires_grad=True)
    ST._Reverse.apply(x, 0.5).sum().backward()
    assert torch.allclose(x.grad, torch.full((3,), -0.5))
    x.grad = None
    ST._Reverse.apply(x, -2.0).sum().backward()  # multi-task: the trunk learns the nuisance too
    assert torch.allclose(x.grad, torch.full((3,), 2.0))


def test_adversary_loss_counts_only_known_steps():
    torch.manual_seed(0)
    adv = ST.adversary(8, "gender")
    h = torch.randn(2, 8, 5)
    nuis = torch.tensor([[0, 1, 2, -1, -1], [-1, -1, -1, -1, -1]])
    loss = ST.adversary_loss(adv, h, nuis, 1.0)
    assert loss.shape == (2, 5)
    assert (loss[:, 3:] == 0).all() and (loss[1] == 0).all() and (loss[0, :3] > 0).all()


def test_nuisance_is_arousal_for_gender_and_corpus_for_the_others():
    clip = types.SimpleNamespace(arousal="low", source="nemo")
    assert ST.nuisance_of("gender", clip) == SD.AROUSAL_CLASSES.index("low")
    assert ST.nuisance_of("emotions", clip) == SD.CORPORA.index("nemo")
    assert ST.nuisance_of("gender", types.SimpleNamespace(arousal="", source="hyke")) == -1


def test_left_out_emotions_leave_training_but_not_scoring():
    calm = types.SimpleNamespace(emotion="calm")
    sad = types.SimpleNamespace(emotion="sad")
    items = [(calm, 2), (sad, 3)]
    assert SD.training_items(items, left_out_emotions=("calm",)) == [(sad, 3)]
    assert SD.EMOTION_MAP["calm"] == "neutral"  # scoring still maps calm
    assert SD.training_items(items) == items  # an argument, not a switch: nothing stays left out


def test_band_edge_drop_attenuates_only_outside_the_telephone_band():
    import numpy as np
    from training.data import augment as A
    x = torch.zeros(64, 8, 64)
    A.band_edge_drop(x, np.random.default_rng(0), 1.0)
    kept = x[:, :, 11:42]
    assert (kept == 0).all()  # 400 Hz - 3.1 kHz always stays
    assert (x[:, :, :3] < -6).all() and (x[:, :, 48:] < -6).all()  # below ~170 Hz and above ~3.7 kHz always go
    assert (x >= A.LOG_FLOOR).all()
    y = torch.zeros(4, 8, 64)
    A.band_edge_drop(y, np.random.default_rng(0), 0.0)
    assert (y == 0).all()


def test_emotions_fuse_maps_each_class_to_its_arousal():
    import numpy as np
    from training.export import emotions_fuse as EF
    m = EF.arousal_map(["high", "low", "neutral"])
    # columns happy, irritated, neutral, tired
    assert np.array_equal(m, np.array([[1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], dtype=np.float32))
    assert (m.sum(axis=0) == 1).all()


def test_speaker_fraction_keeps_a_nested_subset_of_every_corpus_and_gender():
    def clip(source, gender, speaker):
        return types.SimpleNamespace(emotion="neutral", source=source, gender=gender, speaker=speaker)
    items = [(clip("nemo", "female", f"f{k}"), 0) for k in range(8) for _ in range(3)]
    items += [(clip("nemo", "male", "m0"), 1), (clip("hyke", "male", "h0"), 1), (clip("hyke", "male", "h1"), 1)]
    half = {c.speaker for c, _ in SD.training_items(items, speaker_fraction=0.5)}
    assert len([s for s in half if s.startswith("f")]) == 4
    assert "m0" in half and len(half & {"h0", "h1"}) == 1  # a lone speaker of a stratum always stays
    assert all(len([c for c, _ in SD.training_items(items, speaker_fraction=0.5) if c.speaker == s]) == 3
               for s in half if s.startswith("f"))
    quarter = {c.speaker for c, _ in SD.training_items(items, speaker_fraction=0.25)}
    assert quarter < half  # nested: the curve adds voices, it does not swap them
    assert SD.training_items(items) == items
    try:
        SD.training_items(items, speaker_fraction=0.0)
        raise AssertionError("a fraction of 0 must be refused")
    except ValueError:
        pass


def test_corpora_count_draws_a_fixed_subset_without_the_held_out_corpus():
    from training.validate import loco
    assert loco.training_corpora("urdu") == [c for c in SD.CORPORA if c != "urdu"]
    three = loco.training_corpora("urdu", 3)
    assert len(three) == 3 and "urdu" not in three and set(three) < set(SD.CORPORA)
    assert loco.training_corpora("urdu", 3) == three  # the same draw in every run
    assert loco.training_corpora("urdu", 6) == loco.training_corpora("urdu")
    # a corpus without the task's labels (hyke has no arousal) is never drawn: it would teach nothing
    labelled = [c for c in SD.CORPORA if c != "hyke"]
    assert all("hyke" not in loco.training_corpora(h, 3, labelled) for h in labelled)
    assert len(loco.training_corpora("urdu", 3, labelled)) == 3


def test_pitch_counter_cells_keep_the_clips_whose_pitch_points_to_the_other_gender():
    s = ST.Sampler.__new__(ST.Sampler)  # only the fields counter_cells reads
    s.task, s.f0 = "gender", {1: 120.0, 2: 240.0, 3: 170.0, 4: 230.0, 5: float("nan")}
    clip = lambda i: types.SimpleNamespace(idx=i)
    male = SD.CLASSES["gender"].index("male")
    female = SD.CLASSES["gender"].index("female")
    cells = {"neutral": [clip(1)], "angry": [clip(2), clip(5)]}
    assert {k: [c.idx for c in v] for k, v in s.counter_cells(male, cells).items()} == {"angry": [2]}
    women = {"sad": [clip(3)], "happy": [clip(4)]}
    assert {k: [c.idx for c in v] for k, v in s.counter_cells(female, women).items()} == {"sad": [3]}
    assert s.counter_cells(male, {"x": [clip(1)]}) == {"x": [clip(1)]}  # none against its gender: all of them


def test_the_speaker_recipe_trains_with_its_experiment_options():
    """--adv (reversal, and negative: multi-task), --band-drop, --leave-out-emotions and --speaker-fraction together,
    one short epoch on the smoke runs' clip table (its feature bank is cached by the smoke rebuilds)."""
    from training.data import bank as B
    from training.data import clips as D
    from training.data.subset import quick_subset
    from training.recipes.config import SpeakerRecipe
    clips = quick_subset(D.load_clips())
    bank = B.build(clips)
    for r in (SpeakerRecipe("gender", examples=64, epochs=1, adv=0.3, band_drop=0.5, speaker_fraction=0.5),
              SpeakerRecipe("emotions", examples=64, epochs=1, adv=-0.5, leave_out_emotions=("calm",))):
        items = SD.training_items(SD.clips_of(r.task, clips, split_name="train"), r.leave_out_emotions, r.speaker_fraction)
        model = ST.train(bank, items, r, log=lambda s: None)
        p = ST.predict(model, bank, [c for c, _ in items[:3]])
        assert all(x is None or abs(float(x.sum()) - 1) < 1e-4 for x in p)


def test_ordinal_targets_keep_each_row_a_distribution():
    from training.recipes.longform import ordinal_targets
    t = ordinal_targets("arousal", 0.2)
    assert torch.allclose(t.sum(1), torch.ones(3))
    high, low, neutral = (["high", "low", "neutral"].index(k) for k in ("high", "low", "neutral"))
    assert t[high, low] == 0 and t[low, high] == 0 and t[neutral, high] == t[neutral, low] == 0.1


def test_the_options_that_read_the_teachers_opinions(monkeypatch):
    """--embed-steps with --embed-then head (member 3 of gender 1.3.0) and probe: the trunk regresses the teacher's
    d-vectors, then only the head (or a probe) learns the labels; --dvec (d-vector loss beside the labels) and
    --distill (teacher-labelled speech).  The teachers' opinions come from their own venv (training/cache/teachers.npz);
    here random ones stand in for them, on the smoke runs' clip table."""
    import numpy as np
    from training.data import bank as B
    from training.data import clips as D
    from training.data import distill as DI
    from training.data.subset import quick_subset
    from training.recipes.config import SpeakerRecipe
    clips = quick_subset(D.load_clips())
    bank = B.build(clips)
    rng = np.random.default_rng(0)
    fake = {c.idx: (float(rng.uniform()), (lambda e: e / np.linalg.norm(e))(rng.standard_normal(256).astype(np.float32)))
            for c in clips if c.kind == "speech"}
    monkeypatch.setattr(DI, "opinions", lambda: fake)
    monkeypatch.setattr(DI, "all_clips", lambda: clips)
    DI._probe_without.cache_clear()
    items = SD.training_items(SD.clips_of("gender", clips, split_name="train"))
    distilled = DI.distill_items(clips)
    assert all(len(it) == 3 and abs(float(it[2].sum()) - 1) < 1e-5 for it in distilled)
    for r, extra in ((SpeakerRecipe("gender", examples=64, epochs=1, embed_steps=2, embed_then="head", cfg={"lifter": 0}), []),
                     (SpeakerRecipe("gender", examples=64, epochs=1, embed_steps=2, embed_then="probe"), []),
                     (SpeakerRecipe("gender", examples=64, epochs=1, dvec=0.5, distill=True), distilled)):
        b = ST.training_bank(clips, distill=True) if r.distill else bank  # + the unlabelled clips' bank
        model = ST.train(b, items + extra, r, log=lambda s: None)
        p = ST.predict(model, bank, [c for c, _ in items[:3]])
        assert all(x is None or abs(float(x.sum()) - 1) < 1e-4 for x in p)
    DI._probe_without.cache_clear()
