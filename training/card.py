"""MODEL_CARD.md writer."""
from __future__ import annotations

import collections
import json
import os

from . import data as D
from .voice_variants import VARIANT_TASKS

PURPOSE = {
    "speech": "Per-step (64 ms) classification of audio into music / other (environmental and man-made sounds) / speech.",
    "gender": "Per-step perceived voice gender (female / male) of adult speech. Only meaningful on steps the speech model calls speech.",
    "arousal": "Per-step vocal arousal (high / low / neutral) of speech. Only meaningful on speech steps.",
}

LABELS = {
    "speech": "`kind` column of clips.csv: speech, music (incl. songs with singing), other. Mixtures of speech over music/other are labelled speech; steps of a mixture where the speech is silent are labelled with the background.",
    "gender": "`gender` column (speaker-level). Adult speakers only (BAVED speakers under 18 excluded). fsdd (6 male speakers, 8 kHz originals) excluded as a bandwidth shortcut. voxlingua, ktuberling, klettres have no gender labels.",
    "arousal": "RAVDESS angry/fearful/happy/surprised -> high, sad/calm -> low, neutral -> neutral; **disgust excluded** (arousal is ambiguous: the csv marks it `ambiguous`). BAVED level2/level1/level0 -> high/neutral/low. URDU angry/happy -> high, sad -> low, neutral -> neutral (URDU is used only for validation).",
}

SAMPLING = {
    "speech": "Class drawn with p = 0.45 speech / 0.30 music / 0.25 other per segment; speech sources weighted (voxlingua 3, ravdess/baved 1.5, ktuberling/klettres 1.2, fsdd 1, librosa 0.3), music/other sources by sqrt(clip count).",
    "gender": "Balanced by speaker, not by clip: gender drawn uniformly, then source (ravdess/baved/urdu training speakers) uniformly, then speaker uniformly, then one of the speaker's clips; with p = 0.4 the clip is drawn from the speaker's high-arousal clips (angry/fearful/happy/surprised, BAVED level2, URDU angry/happy) where the speaker has any, so raised pitch and vocal effort are seen for both genders. With p = 0.35 the clip is replaced by one of its two WORLD-vocoder re-syntheses (`training/voice_variants.py`): spectral envelope kept (formants, with a +-6 % frequency warp), F0 moved - male x1.25-2.5 and x0.9-1.5, female x0.65-0.9 and x0.85-1.25 - so shouting men at 250-330 Hz (URDU's angry TV speakers) are seen labelled male and pitch alone cannot decide. Both genders are vocoded, so vocoder artefacts carry no label.",
    "arousal": "Class drawn uniformly, then source (ravdess/baved) uniformly, then a clip uniformly within (class, source). Not speaker-uniform: most BAVED speakers recorded a single arousal level, so speaker-uniform sampling would reward recognising the speaker.",
}

SPLITS = f"""Splits are fixed in `training/data.py` (speaker-disjoint and source-disjoint; no file-level splitting):

| source | validation part |
|---|---|
| widelands-music, widelands-sfx | whole source held out (cross-corpus check, never trained on) |
| urdu | speech, arousal: whole source held out (cross-corpus). **gender (since 1.1.0): speaker-disjoint** - odd speaker numbers (SF1, SF3, .., SM1, SM3, ..: 6 f / 10 m speakers) train, even numbers (SF2, .., SF10, SM2, SM4, ..: 5 f / 8 m speakers) validate |
| ravdess | actors {sorted(D.RAVDESS_VAL_ACTORS)} (21, 23 male; 22, 24 female) |
| baved | speakers {sorted(D.BAVED_VAL_SPEAKERS)} |
| fsdd | speaker {sorted(D.FSDD_VAL_SPEAKERS)} |
| voxlingua, ktuberling, klettres | whole languages held out (md5(language) % 4 == 0): language- and hence YouTube-speaker-disjoint |
| jamendo | songs {sorted(D.JAMENDO_VAL_SONGS)} (all their excerpts) |
| esc10 | fold {sorted(D.ESC10_VAL_FOLDS)} |
| 0ad-*, megaglest-*, warzone2100-music, wesnoth-1.16-music, librosa | training only |

Background music/noise used for mixing during training also comes from the training part only. The validation clip lists are in
`training/validation/<task>.csv` (paths relative to the datasets folder) so the service's `eval` command can score the shipped
model through the real pipeline."""

AUGMENT = """Waveform-domain, then features (cached under `training/cache/`):
- examples of 64 steps (4.1 s) built by concatenating clips (speech task: clips of different classes, 1-8 s crops; gender/arousal: whole utterances) with random short silences, so the model sees transitions; per-step labels follow the clip owning the step;
- speech mixed with music or other at 0-20 dB SNR (speech task, p=0.55) or 5-25 dB (gender/arousal, p=0.35), label unchanged; music+music and other+other mixtures at 0-10 dB;
- per-clip level jitter, then random global gain -40..+6 dB (with clipping), occasional low noise floor;
- band-limiting for all classes alike (p=0.35): telephone 300-3400 Hz + 8 kHz resampling, 8 kHz round trip, or 11.025 kHz round trip, so bandwidth carries no class information;
- synthetic reverb (exponentially decaying noise IR, RT60 0.15-0.9 s, p=0.2), first-order EQ tilt (p=0.2);
- log-domain gain jitter and a frequency mask during training;
- gender only: WORLD-vocoder variants of the training clips with F0 moved and the envelope kept (see Sampling);
- silent steps (below -50 dBFS relative to a -20 dBFS active level) get zero loss weight; unlabelled gaps are ignored.
The dataset audio itself is Opus (24-32 kbit/s), so codec artefacts are part of every example."""

CODEC = {True: """- how a file reaches the service, after the gain: a 16 -> 22.05 or 44.1 -> 16 kHz resampling round trip (p=0.15), then an MP3
  round trip (p=0.25; LAME through libsndfile at 16 kHz, about 20-40 kbit/s, harsher than most real MP3s);""",
         False: """- no MP3 or 22.05/44.1 kHz round trips (tried for gender and arousal: worse on clean validation, see Known limits);"""}


def licences(task, clips, sources=None):
    """Per-source licence table; `sources`: the sources the model was trained on (clips.csv has grown since)."""
    used = [c for c in clips if D.task_label(task, c) is not None and (sources is None or c.source in sources)]
    by = collections.defaultdict(set)
    cnt = collections.Counter()
    for c in used:
        by[c.source].add(c.license)
        cnt[(c.source, D.task_split(task, c))] += 1
    rows = ["| source | licence(s) | train clips | validation clips |", "|---|---|---|---|"]
    for s in sorted(by):
        rows.append(f"| {s} | {'; '.join(sorted(by[s]))} | {cnt[(s, 'train')]} | {cnt[(s, 'val')]} |")
    return "\n".join(rows)


def trained_sources(task, manifest, res):
    """The sources a model learnt from: as its manifest records them (clips.csv has grown since), else for
    gender/arousal the validation's sources, else (an old speech manifest) every source that has the task."""
    listed = manifest.get("training", {}).get("sources")
    if listed:
        return set(listed)
    return None if task == "speech" else set(res["per_source"])


def added_member_sources(clips, listed) -> str:
    """The sources the added (speaker-encoder) member also learnt from (ensemble_add.py, embed_pretrain.py)."""
    from . import distill_data as DD
    from . import speaker_data as SD
    by, cnt = collections.defaultdict(set), collections.Counter()
    for c in clips:
        if c.kind == "speech" and c.source not in listed and (c.source in SD.CORPORA or c.source in DD.UNLABELLED):
            by[c.source].add(c.license)
            cnt[c.source] += 1
    rows = ["| source | licence(s) | clips |", "|---|---|---|"] + [f"| {s} | {'; '.join(sorted(by[s]))} | {cnt[s]} |" for s in sorted(by)]
    return ("The added member (member 3) also learnt from these sources (labelled speakers of the training split; the "
            "unlabelled ones through the teacher's d-vectors only), with Resemblyzer 0.1.4 (Apache-2.0) as its teacher at "
            "training time:\n\n" + "\n".join(rows) + "\n")


def metric_table(task, res):
    cls = {"speech": D.SPEECH_CLASSES, "gender": D.GENDER_CLASSES, "arousal": D.AROUSAL_CLASSES}[task]
    head = "| subset | clips | clip acc. | clip balanced acc. (UAR) | step balanced acc. | " + " | ".join(f"recall {c}" for c in cls) + " |"
    rows = [head, "|" + "---|" * (5 + len(cls))]

    def row(name, r):
        rec = " | ".join(f"{r.get('recall_' + c, float('nan')):.3f}" if ('recall_' + c) in r else "-" for c in cls)
        rows.append(f"| {name} | {r['n_clips']} | {r['clip_accuracy']:.3f} | {r['clip_balanced_accuracy']:.3f} | {r['step_balanced_accuracy']:.3f} | {rec} |")

    row("**all validation**", res["overall"])
    if task == "arousal":
        row("in-corpus held-out speakers (ravdess+baved)", res["in_corpus_heldout_speakers"])
    for s, r in res["per_source"].items():
        row(s, r)
    ref = res.get("reference_previous_model")
    if ref:
        rows.append("")
        rows.append(f"Reference: {ref['description']}")
        rows.append("")
        rows.append(head)
        rows.append("|" + "---|" * (5 + len(cls)))
        for name, r in ref["rows"].items():
            row(name, r)
    return "\n".join(rows)


LIMITS = {
    "speech": """- Validation music is game soundtracks + 2 songs; singing is only present in a few jamendo/librosa pieces, so sung vocals may be called speech (or music) unreliably.
- "other" is a broad class trained on a few game-sfx libraries and ESC-10; unseen sound types (e.g. machinery, crowds with voices) can be confused with speech or music.
- Speech with loud music underneath (< 0 dB SNR) tends to be called music.
- Isolated very short words (BAVED single words, klettres letters) are the weakest speech cases at step level.
- MP3: on the validation files coded as 24 kbit/s MP3 and read by the service's decoder (`auris eval`), step UAR is
  0.904 and speech F1 0.956 (clean: 0.905 / 0.957). 1.0.0, trained without the MP3 and resampling round trips, had
  0.895 / 0.952 on MP3 (clean 0.907 / 0.956).""",
    "gender": """- Members 1-2 (from 1.2.0) were trained on 2 acted corpora (RAVDESS English, BAVED Arabic) plus half of the URDU
  speakers (natural TV talk-show speech, odd-numbered speakers: 6 female / 10 male); few distinct female speakers
  (10 + 8 + 6). Member 3 (1.3.0) also learnt from the labelled training speakers of hyke (real phone calls), ASED,
  nEMO and ETTSDB, and through its teacher from unlabelled VoxLingua107 and KDE speech (see Training data).
  Perceived gender of voices that do not fit the binary labels, children, and heavily processed voices are not handled.
- **Below the 0.97 target: utterance accuracy 0.947 on this validation set** (1.2.0: 0.953, 1.1.0: 0.939). The acted
  corpora are at 0.99 (baved) and 0.98 (ravdess); URDU held-out speakers are at 0.816 (1.2.0: 0.851, 1.1.0: 0.780):
  member 3 alone calls a third of URDU's held-out men female (male recall 0.667: shouting men, the speaker
  encoder's weakness), and the fused file gets 6 of these 168 clips wrong that 1.2.0 got right. 1.3.0 is shipped
  for what it gains on the corpora 1.2.0 never heard (section below: clean 0.927 vs 0.917, telephone 0.876 vs
  0.865, low-arousal women 0.744 vs 0.690), which predict new recordings better than this validation set.
- Why URDU is hard: shouting men. Median F0 of the angry male validation speakers is 280-320 Hz (SM4, SM2), above
  most women in the data (RAVDESS women 200-225 Hz). 1.1.0 learnt "high pitch = female"; this release's second member
  is trained on WORLD re-syntheses with the spectral envelope kept and F0 moved across the other gender's range, so it
  must use the envelope (formants). It fixed SM4 (48/48, was 43/48) and most of SM2 alone (21/28 in an earlier run),
  but on its own lost BAVED female speaker 54 (low-pitched; 46/61) - the two members fail on different speakers,
  so the shipped file averages both (geometric mean). Remaining errors: SM2 (angry, 13 of 28 clips still called
  female), SM6 (happy), SM18 (2 clips).
- The validation set has few speakers (URDU 5 f / 8 m, RAVDESS 2 / 2, BAVED 5 / 5 adults), and clip counts per speaker
  are uneven (one BAVED man has 160 clips, SM4 48): one speaker moves the overall figure by several points. The
  ensemble (members and their combination) was chosen on this validation set, so the figure is optimistic by about
  the spread between comparable runs (about 1 point).
- Also tried: a wider member (c2=96, 40k examples, variants): 0.939 alone, 0.953 with 1.1.0 - no better than the
  small one, at twice the cost. The whole recipe re-run with seed 2 (`python -m training.train --task gender --seed 2`)
  gives 0.949 (members 0.942 and 0.931), and all four members together 0.951: the recipe is worth about 0.95.
- Tried in session 3 and not shipped: self-training on VoxLingua (600 YouTube speakers, no gender labels). 1.2.0
  labelled the training-language clips it was sure of (mean probability >= 0.9 and >= 85 % of speech steps agreeing:
  327 of 465 clips, 283 male / 44 female) and they were added as a fourth source. Member 1's recipe fell from 0.942
  to 0.915 (URDU 0.821 -> 0.696) and member 2's from 0.931 to 0.929: confident teacher labels are the easy,
  low-pitched men and higher-pitched women, so they reinforce the pitch shortcut the variants are there to break.
- MP3: on the validation files coded as 24 kbit/s MP3 (through the service's decoder) utterance accuracy is 0.949
  (clean 0.953). Training with MP3 and 22.05/44.1 kHz round trips (as speech 1.1.0) gave 0.924 on clean validation
  (members 0.927 and 0.926) and 0.938 on MP3, so it was not kept.
- Also tried in session 3: member 2 with variants drawn half of the time (p = 0.5 instead of 0.35): ensemble 0.952
  (URDU 0.851, as shipped) - no change.
- Tried in session 4: a member that sees only the spectral envelope - each frame's 64 log-mel bands projected
  onto their 12 lowest cepstral coefficients (`--cfg '{"lifter": 12}'`, folded into the first convolution at
  export), so resolved pitch harmonics are gone - trained with the variants: 0.939 alone (as member 2), 0.954 with
  member 1 instead of member 2 (URDU 0.839), 0.956 as a third member (URDU 0.863; 1.5x the cost). Within the
  run-to-run spread, so not shipped: removing the harmonics does not remove what pitch the envelope and the
  loudness contour still carry, and the shouting URDU men stay hard.
- Also tried in session 4: draws from a speaker's high-arousal clips 70 % of the time instead of 40 %
  (`--gender-high-p 0.7`, with the variants), more shouting for both genders: 0.937 alone (URDU 0.893, the best
  single member on URDU so far, but BAVED 0.931), 0.953 with member 1 (as shipped), 0.952 as a third member.""",
    "arousal": """- Acted emotions (RAVDESS, BAVED single words) differ from natural speech; the URDU cross-corpus result is the better estimate for real recordings and is clearly lower.
- BAVED speakers mostly recorded only one or two arousal levels, so speaker identity and label are confounded in its training data.
- Absolute loudness is removed by the in-model gain normalisation (local maximum of the log energy over ~1 s), so only relative loudness, spectrum and prosody are used.
- "neutral" is the weakest class. On URDU (cross-corpus, 100 clips per emotion) the shipped model calls angry clips high
  94/100 and happy 71/100, sad low 46/100, but neutral clips are split high 35 / low 47 / neutral 18: conversational
  TV speech does not match the acted, read "neutral" of RAVDESS/BAVED. High-vs-rest is considerably more reliable
  than the 3-class UAR suggests. (These counts are the network's, 1.0.0. Since 1.0.1 its `neutral` logit is raised
  (see "Class-prior shift"): neutral is said far more often, high and low less.)
- Below the targets set for this release (UAR >= 0.70): more and more varied (natural) emotional speech would be needed;
  a wider model (c2=96) and twice the synthetic examples did not help materially on this validation set.
- Tried in session 2 and not shipped (same validation, UAR): two more seeds of this recipe (with weight averaging)
  0.543 and 0.558, so run-to-run spread is about 3 points and 1.0.0 (0.577) is the best of three; an ensemble of
  the three seeds 0.578 (no gain, 3x the cost); WORLD variants for speaker variety (F0 x0.82-1.22, envelope warp
  +-8 %) 0.548 (held-out ravdess+baved speakers 0.628 vs 0.636, URDU 0.430 vs 0.488).
- Tried in session 3 and not shipped: URDU speaker-disjoint for arousal as for gender (odd-numbered speakers train).
  Held-out ravdess+baved speakers fell to 0.600 and the even-numbered URDU speakers reached only 0.421: in URDU the
  arousal label is nearly a speaker label (SM5: 72 neutral clips; SM24/SM25: 78 low), so its training speakers teach
  voice identity, not arousal.
- MP3: on the validation files coded as 24 kbit/s MP3 (through the service's decoder) utterance UAR is 0.544 (clean
  0.577). Training with MP3 and 22.05/44.1 kHz round trips (as speech 1.1.0) gave UAR 0.546 on clean validation, so it
  was not kept.
- Tried in session 3 and not shipped: VoxLingua training clips (YouTube speech) as weak "neutral" examples, for
  natural conversational neutral speech. Held-out ravdess+baved speakers rose to 0.649, but URDU collapsed to 0.347
  (99 % of its clips called neutral, high recall 0.04): the model learnt "natural recording = neutral", a source
  shortcut, not arousal.
- Tried in session 4: arousal as an ordered scale - soft targets that move 20 % of high's and low's mass to
  neutral and 10 % of neutral's to each side (`--ordinal 0.2`, instead of uniform label smoothing 0.05), so
  that low/high confusions cost more than confusions with neutral: UAR 0.550 (held-out ravdess+baved
  speakers 0.594, URDU 0.487; neutral recall 0.462 vs 0.434), within the seed spread below 1.0.0, not shipped.""",
}


NORM_TXT = {
    "mean": "the sliding-window mean (count_include_pad=False) of the per-frame mean log-mel energy",
    "max": "the sliding-window maximum of the (5-frame smoothed) per-frame mean log-mel energy (not diluted by the silences around short words)",
}


def _run(t, task):
    ema = f"the moving average of the weights (decay {t['ema']}) after the final epoch" if t.get("ema") else "the final epoch"
    cfg = f", model config `{t['cfg']}`" if t.get("cfg") else ""
    var = ", without WORLD variants" if task in VARIANT_TASKS and t.get("variants") is False else ""
    how = f"; reproduce with `{t['reproduce']}`" if t.get("reproduce") else ""
    n = t.get('examples', t.get('examples_per_epoch'))  # train.py's key, or speaker_train's
    return f"{n} synthetic examples, {t['epochs']} epochs, seed {t['seed']}{cfg}{var}; {ema} is exported{how}"


LICENCES = ("Licences include non-commercial (CC BY-NC-SA: RAVDESS, some jamendo songs) and research-use-only (BAVED, "
            "URDU) terms: check them before any commercial use of these weights.")


def training_line(task, t):
    """How the shipped file was produced: one training run, or an ensemble of runs merged by training/ensemble.py."""
    if "ensemble_of" in t:
        runs = "".join(f"\n  - member {i + 1}: {_run(r, task)} ({r['architecture']})" for i, r in enumerate(t["ensemble_of"]))
        weights = (", weighted " + " / ".join(f"{w:g}" for w in t["weights"]) + " by scaling each member's head"
                   if t.get("weights") else "")
        return (f"- An ensemble of {len(t['ensemble_of'])} models merged into this one file by "
                f"`{t.get('merged_by', 'python -m training.ensemble')}` (normalised geometric mean of their "
                f"probabilities{weights}); no checkpoint selection on validation:{runs}")
    line = (f"- Trained with `python -m training.train --task {task}` ({_run(t, task)}; `python -m training.train --all` retrains all "
            f"three); no checkpoint selection on validation.")
    if t.get("prior_shift"):  # a released network with one class's logit raised (prior_shift.py)
        ps = t["prior_shift"]
        line += (f"\n- Then the `{ps['class']}` logit of that network ({ps['from_version']}) raised by {ps['logit_shift']:g} "
                 f"(`{ps['by']}`; chosen on {', '.join(ps['chosen_on'])}, which it never heard; see \"Class-prior shift\" below).")
    return line


def augment_text(task):
    from .augment import CODEC_TASKS
    return AUGMENT.replace("- log-domain gain jitter", CODEC[task in CODEC_TASKS] + "\n- log-domain gain jitter")


def write_model_dir(task, d, manifest, res, clips):
    """The files of a model folder besides model.onnx: stream.onnx, manifest.json, metrics.json and MODEL_CARD.md."""
    from .streaming import add_streaming
    try:
        add_streaming(d, manifest)
    except ValueError as e:  # a graph the converter does not know (e.g. members merged side by side): windowed streaming only
        print(f"[{task}] no streaming graphs: {e}", flush=True)
    for name, obj in (("manifest.json", manifest), ("metrics.json", res)):
        with open(os.path.join(d, name), "w") as fh:
            json.dump(obj, fh, indent=2)
            fh.write("\n")
    write_card(task, d, manifest, res, clips)


def write_card(task, d, manifest, res, clips):
    from .speaker_card import SPEAKER_LICENCES
    from .streaming import card_line
    m = manifest
    txt = f"""# auris `{task}` model {m['version']}

{PURPOSE[task]}

- File: `model.onnx` (opset 17), input `features` [B, T=4S, 64] log-mel frames (see `docs/features.md`), output `probs` [B, S, {len(m['raw_keys'])}] softmax per 64 ms step, class order `{m['raw_keys']}`.
- Architecture: {m['model']['architecture']}; {m['model']['parameters']} parameters, ~{m['model']['macs_per_step']} multiply-adds per step. Fully convolutional with zero padding; the output for step s depends on steps [s-{m['context']['left_steps']}, s+{m['context']['right_steps']}] (receptive field {m['receptive_field_ms']} ms, lookahead {m['lookahead_ms']} ms incl. the 8 ms framer lookahead).
- Gain normalisation inside the model: {NORM_TXT['max' if 'gain-norm(max' in m['model']['architecture'] else 'mean']} is subtracted from every band, so absolute level carries no information.
{card_line(m)}
{training_line(task, m['training'])}
- `training_data_sha256`: sha256 of the clips.csv rows usable by this task (train and validation), in file order.

## Training data and licences

Audio from the project's shared datasets folder (16 kHz Opus). Sources used for this task:

{licences(task, clips, trained_sources(task, m, res))}

{"Music and other clips from the training split (game soundtracks, game sfx, ESC-10 folds 1-3, librosa) are additionally used as backgrounds for mixing." if task != "speech" else ""}

{added_member_sources(clips, set(res["per_source"])) + chr(10) + SPEAKER_LICENCES if os.path.exists(os.path.join(d, "loco_added_member.json")) else LICENCES}

## Labels

{LABELS[task]}

## Sampling

{SAMPLING[task]}

## Augmentation

{augment_text(task)}

## Splits

{SPLITS}

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

{LIMITS[task]}
"""
    added = os.path.join(d, "loco_added_member.json")
    if os.path.exists(added):  # a member added to a shipped ensemble (ensemble_add.py), validated as added_member_loco.py
        from .speaker_card import added_member_section
        txt += added_member_section(task, json.load(open(added)))
    loco = os.path.join(d, "loco.json")
    if os.path.exists(loco):  # a newer recipe was validated against this model and did not replace it
        from .speaker_card import kept_model_addendum
        changed = os.path.exists(added) or os.path.exists(os.path.join(d, "loco_prior.json"))  # the file is no longer what loco.json scored
        subject = f"{task} {KEPT_AGAINST_SUBJECT[task]}" if changed and task in KEPT_AGAINST_SUBJECT else "this model"
        txt += kept_model_addendum(task, json.load(open(loco)), KEPT_AGAINST.get(task, "2.0"), subject)
    from .speaker_card import learning_curve_section, prior_shift_section
    txt += prior_shift_section(d) + learning_curve_section(d)
    with open(os.path.join(d, "MODEL_CARD.md"), "w") as fh:
        fh.write(txt)


# the recipe version each kept model was compared with (its loco.json)
KEPT_AGAINST = {"gender": "2.0", "arousal": "2.0"}
# which model the kept-model addendum scored, once a member was added to it
KEPT_AGAINST_SUBJECT = {"gender": "1.2.0 (members 1-2 of this file)", "arousal": "1.0.0 (this file before its class-prior shift)"}


def main():
    """Re-render MODEL_CARD.md of exported models from their manifest.json + metrics.json."""
    import sys
    root = sys.argv[1] if len(sys.argv) > 1 else "models"
    clips = D.load_clips()
    for task in ("speech", "gender", "arousal"):
        d = os.path.join(root, task)
        if not os.path.exists(os.path.join(d, "metrics.json")):
            continue
        write_card(task, d, json.load(open(os.path.join(d, "manifest.json"))), json.load(open(os.path.join(d, "metrics.json"))), clips)
        print("wrote", os.path.join(d, "MODEL_CARD.md"))


if __name__ == "__main__":
    main()
