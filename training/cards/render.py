"""MODEL_CARD.md of every model, from the files of its folder: manifest.json, metrics.json, and the reports that
validation wrote beside them (loco.json, loco_added_member.json, loco_fused.json, loco_prior.json,
learning_curve.json, provisional.json).  One renderer: the recipe family (the manifest's training section) picks the texts of
cards/text_longform.py or cards/text_speaker.py; the sections of cards/sections.py join where their report exists.

    python -m training.cards [MODELS_DIR]     # re-renders the cards of the shipped folders (models/ by default)
"""
from __future__ import annotations

import json
import os

from training.cards import text_longform as TL
from training.cards import text_speaker as TS
from training.cards.experiments import EXPERIMENTS
from training.cards.sections import (added_member_section, fused_line, fused_section, kept_model_addendum,
                                     learning_curve_section, length_section, prior_shift_section, provisional_section,
                                     calibration_section)
from training.cards.tables import (added_member_sources, licences, loco_section, metric_table, shipped_section,
                                   source_licences, table, trained_sources)
from training.data import clips as D
from training.data.voice_variants import VARIANT_TASKS

PURPOSE = {
    "speech": "Per-step (64 ms) classification of audio into music / other (environmental and man-made sounds) / speech.",
    "gender": "Per-step perceived voice gender (female / male) of adult speech. Only meaningful on steps the speech model calls speech.",
    "arousal": "Per-step vocal arousal (high / low / neutral) of speech. Only meaningful on speech steps.",
    "emotions": "Per-step emotion of the speaker (happy / irritated / neutral / tired). Only meaningful on speech steps.",
}

# the recipe version each kept model was compared with (its loco.json)
KEPT_AGAINST = {"gender": "2.0", "arousal": "2.0"}
# which model the kept-model addendum scored, once a member was added to it
KEPT_AGAINST_SUBJECT = {"gender": "1.2.0 (members 1-2 of this file)", "arousal": "1.0.0 (this file before its class-prior shift)"}


def is_speaker_recipe(manifest) -> bool:
    """A network of the speaker recipe (recipes/speaker.py) writes `examples_per_epoch`; the longform recipe `examples`."""
    return "examples_per_epoch" in manifest.get("training", {})


def _run(t, task):
    ema = f"the moving average of the weights (decay {t['ema']}) after the final epoch" if t.get("ema") else "the final epoch"
    cfg = f", model config `{t['cfg']}`" if t.get("cfg") else ""
    var = ", without WORLD variants" if task in VARIANT_TASKS and t.get("variants") is False else ""
    how = f"; reproduce with `{t['reproduce']}`" if t.get("reproduce") else ""
    n = t.get('examples', t.get('examples_per_epoch'))  # the longform recipe's key, or the speaker recipe's
    return f"{n} synthetic examples, {t['epochs']} epochs, seed {t['seed']}{cfg}{var}; {ema} is exported{how}"


def recipe_line(t) -> str:
    """The recipe file a shipped model is rebuilt from (the manifest's training.recipe), or nothing."""
    if not t.get("recipe"):
        return ""
    return (f"\n- Recipe: `{t['recipe']}` (every hyperparameter of every step); `{t['rebuild']}` rebuilds this file from "
            f"the datasets and checks it against this manifest.")


def training_line(task, t):
    """How the shipped file was produced: one training run, or an ensemble of runs merged by export/ensemble.py."""
    if "ensemble_of" in t:
        runs = "".join(f"\n  - member {i + 1}: {_run(r, task)} ({r['architecture']})" for i, r in enumerate(t["ensemble_of"]))
        weights = (", weighted " + " / ".join(f"{w:g}" for w in t["weights"]) + " by scaling each member's head"
                   if t.get("weights") else "")
        return (f"- An ensemble of {len(t['ensemble_of'])} models merged into this one file by "
                f"`{t.get('merged_by', 'python -m training.export.ensemble')}` (normalised geometric mean of their "
                f"probabilities{weights}); no checkpoint selection on validation:{runs}")
    line = f"- Trained with the longform recipe (`training/recipes/longform.py`; {_run(t, task)}); no checkpoint selection on validation."
    if t.get("prior_shift"):  # a released network with one class's logit raised (export/prior_shift.py)
        ps = t["prior_shift"]
        line += (f"\n- Then the `{ps['class']}` logit of that network ({ps['from_version']}) raised by {ps['logit_shift']:g} "
                 f"(`{ps['by']}`; chosen on {', '.join(ps['chosen_on'])}, which it never heard; see \"Class-prior shift\" below).")
    return line


def augment_text(task):
    from training.data.augment import CODEC_TASKS
    return TL.AUGMENT.replace("- log-domain gain jitter", TL.CODEC[task in CODEC_TASKS] + "\n- log-domain gain jitter")


def _head(task, m, lines) -> str:
    from training.export.streaming import card_line
    return f"""# auris `{task}` model {m['version']}

{PURPOSE[task]}

- File: `model.onnx` (opset 17), input `features` [B, T=4S, 64] log-mel frames (see `docs/features.md`), output `probs` [B, S, {len(m['raw_keys'])}] softmax per 64 ms step, class order `{m['raw_keys']}`.
- Architecture: {m['model']['architecture']}; {m['model']['parameters']} parameters, ~{m['model']['macs_per_step']} multiply-adds per step. Fully convolutional with zero padding; the output for step s depends on steps [s-{m['context']['left_steps']}, s+{m['context']['right_steps']}] (receptive field {m['receptive_field_ms']} ms, lookahead {m['lookahead_ms']} ms incl. the 8 ms framer lookahead).
{lines[0]}{card_line(m)}
{lines[1]}{recipe_line(m['training'])}
- `training_data_sha256`: sha256 of the clips.csv rows usable by this task{lines[2]}, in file order.

## Training data and licences

"""


def _method(texts, task, augment) -> str:
    return f"""## Labels

{texts.LABELS[task]}

## Sampling

{texts.SAMPLING[task]}

## Augmentation

{augment}

## Splits

{texts.SPLITS}
"""


def longform_card(task, d, m, res, clips) -> str:
    norm = TL.NORM_TXT['max' if 'gain-norm(max' in m['model']['architecture'] else 'mean']
    added = os.path.join(d, "loco_added_member.json")
    txt = _head(task, m, (f"- Gain normalisation inside the model: {norm} is subtracted from every band, so absolute level "
                          f"carries no information.\n", training_line(task, m['training']), " (train and validation)"))
    txt += f"""Audio from the project's shared datasets folder (16 kHz Opus). Sources used for this task:

{source_licences(task, clips, trained_sources(task, m, res))}

{"Music and other clips from the training split (game soundtracks, game sfx, ESC-10 folds 1-3, librosa) are additionally used as backgrounds for mixing." if task != "speech" else ""}

{added_member_sources(clips, set(res["per_source"])) + chr(10) + TS.SPEAKER_LICENCES if os.path.exists(added) else TL.LICENCES}

{_method(TL, task, augment_text(task))}
## Validation results

Clean validation clips, whole clip fed to the model; "clip" metrics average the per-step probabilities over the clip's voiced steps
(step level >= -50 dBFS), "step" metrics score every voiced step. Balanced accuracy = unweighted average recall (UAR).
The weights after the final epoch are exported (no early stopping), but a few design variants (gain normalisation mean vs max, width,
sampling) were compared on this same validation set, so the numbers are slightly optimistic. The cross-corpus
sources (widelands-*, and urdu for speech and arousal; for gender urdu is speaker-disjoint only) are the most honest
estimate of behaviour on unseen recordings.

{metric_table(task, res)}

{"Speech vs non-speech F1 (clip level): **%.3f**" % res['overall']['speech_f1'] if task == 'speech' else ''}

## Known limits

{TL.LIMITS[task]}
"""
    if os.path.exists(added):  # a member added to a shipped ensemble (export/ensemble.py add), validated by validate/loco
        txt += added_member_section(task, json.load(open(added)))
    loco = os.path.join(d, "loco.json")
    if os.path.exists(loco):  # a newer recipe was validated against this model and did not replace it
        changed = os.path.exists(added) or os.path.exists(os.path.join(d, "loco_prior.json"))  # the file is no longer what loco.json scored
        subject = f"{task} {KEPT_AGAINST_SUBJECT[task]}" if changed and task in KEPT_AGAINST_SUBJECT else "this model"
        txt += kept_model_addendum(task, json.load(open(loco)), KEPT_AGAINST.get(task, "2.0"), subject)
    return txt + prior_shift_section(d) + learning_curve_section(d)


def speaker_card(task, d, m, res, clips) -> str:
    lp = os.path.join(d, "loco.json")
    loco = json.load(open(lp)) if os.path.exists(lp) else None
    held = {f"**all held-out speakers**, {v}": r["overall"] for v, r in res.items()}
    for v, r in res.items():
        held.update({f"{s}, {v}": x for s, x in r["per_source"].items()})
    exp = "\n".join(f"- {e}" for e in EXPERIMENTS[task]) or "- (none recorded for this version)"
    t = m["training"]
    txt = _head(task, m, ("", f"- Trained with `{t['reproduce']}` ({t['examples_per_epoch']} examples per epoch drawn afresh, "
                              f"{t['epochs']} epochs, moving average of the weights with decay {t['ema']} exported; no "
                              f"checkpoint selection). Leave-one-corpus-out: `python -m training.validate.loco --task {task}`."
                              f"{fused_line(t)}", ""))
    return txt + f"""Audio from the project's shared datasets folder (16 kHz Opus); music and other clips of the training split serve as backgrounds.

{licences(task, clips)}

{TS.SPEAKER_LICENCES}

{_method(TS, task, TS.AUGMENT)}
## Leave-one-corpus-out (what to expect on a new kind of recording)

{loco_section(task, loco)}
{shipped_section(task, loco)}{fused_section(d)}
## Held-out speakers of the shipped model

Speakers of the training corpora that the shipped model never heard (clean as recorded; telephone through the channel above):

{table(task, held)}

## Tried and not kept

{exp}

## Known limits

{TS.LIMITS[task]}
"""


def write_card(d, clips) -> str:
    """Renders <d>/MODEL_CARD.md from the folder's manifest.json, metrics.json and reports; returns its path."""
    m = json.load(open(os.path.join(d, "manifest.json")))
    res = json.load(open(os.path.join(d, "metrics.json")))
    render = speaker_card if is_speaker_recipe(m) else longform_card
    text = render(m["name"], d, m, res, clips)
    if m.get("views") and os.path.exists(os.path.join(d, "encoder_view.json")):
        # a network fused with encoder views (gender 2.x): the views' part first, then the network's own card. Since
        # 2.2.0 the views' part is written by hand (each release's experiments, the tables that chose it), so an
        # existing card keeps it as it is; the template (training/encoders/card.py) starts a card that has none
        network = m["training"]["encoder_view"]["network"].split(" (")[0]
        title = f"# The network ({network}, unchanged inside "
        fn = os.path.join(d, "MODEL_CARD.md")
        old = open(fn).read() if os.path.exists(fn) else ""
        if title in old:
            head = old[:old.index(title)]
        else:
            from training.encoders.card import section
            head = section(d, m)
        text = head + f"{title}{m['version']})" + text[text.index("\n"):]
    text = text.rstrip("\n") + "\n" + length_section(d) + calibration_section(d) + provisional_section(d)
    fn = os.path.join(d, "MODEL_CARD.md")
    with open(fn, "w") as fh:
        fh.write(text)
    return fn


def manifest_metrics(task, res, loco_path):
    """The speaker recipe's manifest metrics: held-out speakers (clean, telephone) and, when present,
    leave-one-corpus-out."""
    m = {"validation": "held-out speakers of every corpus (see MODEL_CARD.md); leave_one_corpus_out: one model per "
                       "held-out corpus, trained without it",
         "heldout_speakers": {v: r["overall"] for v, r in res.items()}}
    if os.path.exists(loco_path):
        loco = json.load(open(loco_path))
        m["leave_one_corpus_out"] = {c: f["clean"]["accuracy" if task == "gender" else "uar"] for c, f in loco["folds"].items()}
        m["leave_one_corpus_out_telephone"] = loco["telephone"]["all"]["accuracy" if task == "gender" else "uar"]
    return m


def main(argv=None):
    """Re-renders the card of every model folder under MODELS_DIR; with --refresh-metrics a speaker-recipe network's
    manifest first gets its metrics brought up to date (the leave-one-corpus-out report may come after the export)."""
    import argparse
    ap = argparse.ArgumentParser(description="Re-renders MODEL_CARD.md of every model folder.")
    ap.add_argument("models", nargs="?", default=os.path.join(os.path.dirname(D.HERE), "models"))
    ap.add_argument("--refresh-metrics", action="store_true")
    a = ap.parse_args(argv)
    clips = D.load_clips()
    for task in sorted(os.listdir(a.models)):
        d = os.path.join(a.models, task)
        mp = os.path.join(d, "manifest.json")
        if not (os.path.exists(os.path.join(d, "metrics.json")) and os.path.exists(mp)):
            continue
        m = json.load(open(mp))
        if a.refresh_metrics and is_speaker_recipe(m):
            m["metrics"] = manifest_metrics(task, json.load(open(os.path.join(d, "metrics.json"))), os.path.join(d, "loco.json"))
            with open(mp, "w") as fh:
                json.dump(m, fh, indent=2)
                fh.write("\n")
        print("wrote", write_card(d, clips))
