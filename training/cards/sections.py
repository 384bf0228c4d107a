"""The sections a card gets when its folder holds their report: an added ensemble member (loco_added_member.json),
a kept model's own unseen-corpus figures (loco.json), the arousal weighting (loco_fused.json), a class-prior shift
(loco_prior.json), a learning curve (learning_curve.json) and the slices by utterance length (length_slices.json)."""
from __future__ import annotations

import json
import os

from training.cards.experiments import EXPERIMENTS
from training.cards.tables import loco_section, shipped_tables, table
from training.cards.text_speaker import ADDED_MEMBER
from training.data import speakers as SD

def rep_args(rep) -> str:
    """The `loco --added-member` arguments beyond --runs that a report was made with."""
    out = f" --cfg '{json.dumps(rep['cfg'])}'" if rep.get("cfg") else ""
    return out + (f" --old-members {rep['old_members']}" if rep.get("old_members", 2) != 2 else "")


def added_member_section(task, rep) -> str:
    """The fused file against the shipped one on the corpora the shipped members never heard (validate/loco_report.added_member_report)."""
    if not rep:
        return ""
    names = {"shipped": "previous release (members 1-2 alone)", "new": "new member alone (trained without the corpus)",
             "fused": "**this release** (fused, new member trained without the corpus)"}
    rows, cells = {}, {}
    for v, x in rep["pooled"].items():
        tag = "telephone" if v == "phone" else v
        for k, r in x.items():
            rows[f"{names[k]}, {tag}"] = r["all"]
            for cell, cr in r["cells"].items():
                if cell in ("low-arousal women", "high-arousal men", "high-arousal women", "low-arousal men"):
                    cells[f"{cell}, {names[k].split(' (')[0]}, {tag}"] = cr
    per = {f"{c}, {names[k].split(' (')[0]}, {'telephone' if v == 'phone' else v}": r
           for c, x in rep["per_corpus"].items() for v, y in x.items() for k, r in y.items()}
    unseen = ", ".join(rep["corpora"])
    pitch = ""
    if rep.get("pitch_moved"):
        pitch = ("\nPitch moved towards the other gender with the spectral envelope kept (WORLD; the same held-out clips "
                 "for all three; must not flip the decision):\n\n" + table(task, {names[k]: r for k, r in rep["pitch_moved"].items()},
                                                                     first="model") + "\n")
    return f"""
## The added member, validated on corpora the previous members never heard

{ADDED_MEMBER.get(task, "")}

`python -m training.validate.loco --task {task} --added-member --runs {rep['runs']}{rep_args(rep)}`: on {unseen} (which members
1-2 never heard), each corpus is scored by the new member's leave-one-corpus-out model (trained without that corpus)
fused step by step with members 1-2 exactly as in this file. Pooled over the {len(rep['corpora'])} corpora:

{table(task, rows, first="model, recording")}

Cells (pooled):

{table(task, cells, first="cell, model, recording")}

Per corpus:

{table(task, per, first="corpus, model, recording")}
{pitch}"""


def kept_model_addendum(task, loco, tried_version, subject="this model"):
    """For a model kept in service after a new recipe did not beat it: its own scores on recordings it never
    heard, then the leave-one-corpus-out figures of the recipe that was tried (appended to its card)."""
    return f"""

## Validation on recordings it never heard (added with the {tried_version} experiment)

`python -m training.validate.loco --task {task}` scores {subject} on corpora that it never heard (every clip) and on the
held-out speakers of the corpora it was trained on, as recorded and through a telephone channel with a real codec
(G.711 mu-law/A-law, GSM, Speex, Codec2, G.726 at 8 kHz, 300-3400 Hz, packet loss; `training/data/channels.py`):

{shipped_tables(task, loco["shipped"])}

### What was tried

{chr(10).join("- " + e for e in EXPERIMENTS[task])}

### The {tried_version} recipe, tried and not shipped

A model trained on every corpus with speaker labels (7 corpora: + hyke real phone calls, ASED, nEMO, ETTSDB), with
telephone codecs, noise and speaker/emotion-balanced sampling (`training/recipes/speaker.py`), validated
leave-one-corpus-out. It did **not** beat {subject} on the corpora that neither had heard, so it was not
shipped; the figures below are that recipe's.

{loco_section(task, loco)}
"""


def fused_line(training) -> str:
    f = training.get("fused")
    return (f"\n- Then weighed by arousal {f['arousal_version']} in one graph: `{f['by']}` (see \"Weighed by arousal\" "
            f"below; the leave-one-corpus-out tables that follow it are the network alone).") if f else ""


def _report(d, name):
    """A validation report beside the model (<d>/<name>, JSON), or None when that validation was not run for it."""
    fn = os.path.join(d, name)
    return json.load(open(fn)) if os.path.exists(fn) else None


def fused_section(d) -> str:
    """emotions 1.1.0 and later: the network weighed by arousal 1.0.0 (emotions_fuse.py), estimated
    leave-one-corpus-out from loco_fused.json; empty for a model without it."""
    z = _report(d, "loco_fused.json")
    if z is None:
        return ""
    rows = ["| held-out corpus | recording | emotions network alone (UAR) | **fused (UAR)** | fused recall happy / irritated / neutral / tired |",
            "|---|---|---|---|---|"]
    mean = {"clean": ([], []), "phone": ([], [])}
    for corpus, r in z["folds"].items():
        for v in ("clean", "phone"):
            f, a = r[v]["fused"], r[v]["emotions_alone"]
            mean[v][0].append(a["uar"]); mean[v][1].append(f["uar"])
            rec = " / ".join(f"{f['recall'].get(k, float('nan')):.2f}" for k in SD.EMOTION_CLASSES)
            rows.append(f"| {corpus} | {'telephone' if v == 'phone' else v} | {a['uar']:.3f} | {f['uar']:.3f} | {rec} |")
    for v in ("clean", "phone"):
        rows.append(f"| **mean** | {'telephone' if v == 'phone' else v} | {sum(mean[v][0]) / len(mean[v][0]):.3f} | "
                    f"**{sum(mean[v][1]) / len(mean[v][1]):.3f}** | |")
    return f"""
## Weighed by arousal 1.0.0 (since 1.1.0)

The shipped file is the emotions network above weighed, step by step, by arousal 1.0.0's opinion of each class's
arousal (happy, irritated: high; neutral: neutral; tired: low): probs = softmax(log p + {z['weight']:g} log
p_arousal(arousal of the class)), in one graph with both networks (`python -m training.export.emotions_fuse`; the streaming
graphs run both side by side). Why: in a corpus it never heard every four-class view recognises `tired` (sad
speech) badly (recall about 0.1), while arousal 1.0.0, trained on RAVDESS and BAVED only, recognises low arousal
there far better. Leave-one-corpus-out estimate on the corpora neither network heard (each corpus scored by the
emotions network trained without it, fold checkpoints `{z['runs']}`, weighed by arousal 1.0.0 exactly as the
graph does):

{chr(10).join(rows)}

The gain is on clean recordings (nEMO's sad clips above all; folds trained with seed 2: clean 0.350 -> 0.379,
telephone 0.363 -> 0.357); through a telephone codec the two are level within the run-to-run spread (ETTSDB and URDU lose a little: arousal 1.0.0 is weaker on the phone). `tired` is said far
more often and `neutral` less (held-out speakers below: tired recall 0.21 -> 0.55, neutral 0.76 -> 0.42). The
weight 1 (a plain product of the two opinions) was not tuned; 0.5 scores about the same.
"""


def prior_shift_section(d) -> str:
    """A released network with one class's logit raised (prior_shift.py), estimated leave-one-corpus-out from
    loco_prior.json; empty for a model without it."""
    z = _report(d, "loco_prior.json")
    if z is None:
        return ""
    cls = list(next(iter(z["folds"].values()))["clean"]["before"]["recall"])
    rows = [f"| held-out corpus | recording | shift chosen on the other three | UAR {z['from_version']} | **UAR shifted** | "
            f"recall {' / '.join(cls)}, {z['from_version']} | recall, shifted |", "|---|---|---|---|---|---|---|"]
    rec = lambda r: " / ".join(f"{r[k]:.2f}" for k in cls)
    for corpus, f in z["folds"].items():
        for v in ("clean", "phone"):
            rows.append(f"| {corpus} | {'telephone' if v == 'phone' else v} | {f['shift']:+g} | {f[v]['before']['uar']:.3f} | "
                        f"{f[v]['after']['uar']:.3f} | {rec(f[v]['before']['recall'])} | {rec(f[v]['after']['recall'])} |")
    for v in ("clean", "phone"):
        m = z["mean"][v]
        rows.append(f"| **mean** | {'telephone' if v == 'phone' else v} | | {m['before']:.3f} | **{m['after']:.3f}** | "
                    f"{rec(m['before_recall'])} | {rec(m['after_recall'])} |")
    return f"""
## Class-prior shift (since 1.0.1)

The shipped file is network {z['from_version']} with the logit of `{z['class']}` raised by {z['shift']:+g} (`python -m
training.export.prior_shift`): every decision boundary moves towards `{z['class']}` by the same amount, at no cost at run
time. Why: on corpora it never heard, {z['from_version']} calls neutral speech high or low (it learnt its priors from
RAVDESS and BAVED), while users' audio - calls, broadcasts - is mostly neutral. The shift is the value (of
{z['grid'][0]:g} .. {z['grid'][-1]:g} in steps of {z['grid'][1] - z['grid'][0]:g}) with the best mean UAR, clean and
through a telephone codec, on the four corpora {z['from_version']} never heard. Leave-one-corpus-out estimate: each
corpus scored with the shift chosen on the other three (clip decisions from the voiced-step mean):

{chr(10).join(rows)}

What it costs: `high` and `low` are said less often, so their recall falls, on the held-out speakers of RAVDESS and
BAVED (the corpora the network learnt from) too - see the validation tables above. What it gains: `neutral` recall
and, on recordings the network never heard, a small rise in UAR. The emotions model keeps its own copy of
{z['from_version']} (emotions 1.1.0 was fitted with it).
"""


def learning_curve_section(d) -> str:
    """Leave-one-corpus-out figures against the labelled data a fold learnt from (learning_curve.py); empty for a
    model without learning_curve.json."""
    z = _report(d, "learning_curve.json")
    if z is None:
        return ""
    pts = z["points"]
    corpora = sorted(pts[0]["folds"])
    name = "accuracy" if z["task"] == "gender" else "UAR"
    head = ["training data per fold", "command", "voices (mean)", "corpora"] + corpora + [
        f"mean {name}", f"mean {name}, telephone", "pooled"]
    extra = list(pts[0].get("cells", {})) or ["neutral recall"]
    head += extra
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in pts:
        cells = [f"{p['folds'][c]['clean']:.3f}" for c in corpora]
        ex = [f"{v:.3f}" for v in p["cells"].values()] if "cells" in p else [f"{p['neutral_recall']:.3f}"]
        rows.append("| " + " | ".join([p["label"], f"`{p['command']}`", f"{p['mean_train_voices']:.0f}",
                                        f"{p['mean_train_corpora']:g}"] + cells +
                                       [f"{p['mean_clean']:.3f}", f"{p['mean_phone']:.3f}", f"{p['pooled_clean']:.3f}"] + ex) + " |")
    slope = z["per_doubling_of_voices"]
    return f"""
## Learning curve: how much more data would help (session 10)

The recipe above (2.x, seed 1), re-run leave-one-corpus-out with part of its training data (`training/validate/learning_curve.py`,
`models/{z['task']}/learning_curve.json`): fewer voices of the same corpora (`--speaker-fraction`: a nested share of every
corpus' and gender's training speakers), or all the voices of fewer corpora (`--corpora-count`: a fixed draw per
held-out corpus). Columns per corpus: {name} on that corpus, clean, by the model trained without it.

{chr(10).join(rows)}

Per doubling of the labelled voices (same corpora; least squares over the voices points): mean {name}
{slope['mean_clean']:+.3f} clean, {slope['mean_phone']:+.3f} through a telephone codec (what the points mean: "What was tried").
"""


def provisional_section(d) -> str:
    """What a live stream's provisional results of this model cost in accuracy (validate/provisional.py); empty for a
    model without provisional.json."""
    z = _report(d, "provisional.json")
    if z is None:
        return ""
    speech = z["task"] == "speech"
    metric = "speech_f1" if speech else ("uar" if z["task"] in ("arousal", "emotions") else "accuracy")
    name = {"speech_f1": "speech F1 (speech vs music + other)", "uar": "UAR", "accuracy": "accuracy"}[metric]
    shipped = z["shipped"]["key"]
    rows = ["| answer | " + name + " | labels the final changes |", "|---|---|---|",
            f"| final (full lookahead) | {z['final'][metric]:.3f} | - |"]
    head = z.get("head")
    for key, r in z["provisional"].items():
        label = f"**provisional, {key} (shipped)**" if key == shipped and not head else f"provisional, {key}"
        rows.append(f"| {label} | {r[metric]:.3f} | {100 * r['changed_by_final']:.1f} % |")
    if head:
        return _head_section(z, head, rows, metric)
    return f"""
## Live streams: provisional results

A live stream answers each step first from this network with the missing future treated as the signal end,
{shipped.replace("lookahead", "with a lookahead of")} (src/inference/provisional-runner.ts), then with the final
result above (docs/streaming.md "Provisional results"). Scored per step against the truth on long-form sequences of
this model's {z['clips']} validation clips (8-16 clips in a row, quiet gaps between them; voiced steps;
`{z['command']}`). Every row is this network alone, step by step (no segment mean; encoder views, where the
model has them, fuse into finals only); "left context": the window starts that many steps back, as a signal would
(otherwise the model's whole reach):

{chr(10).join(rows)}
"""


def _head_section(z: dict, head: dict, rows: list[str], metric: str) -> str:
    """provisional_section for a model whose streams answer from a causal head (training/recipes/causal.py ship)."""
    v = z["head_validation"]
    key = next(k for k in v if k.startswith("causal head"))
    rows = rows[:3] + [f"| **{key} (shipped)** | {v[key][metric]:.3f} | {100 * v[key]['changed_by_final']:.1f} % |"]
    rows += [f"| {k} | {r[metric]:.3f} | {100 * r['changed_by_final']:.1f} % |" for k, r in v.get("also_tried", {}).items()]
    rows += [f"| window of this network: {k} | {r[metric]:.3f} | {100 * r['changed_by_final']:.1f} % |" for k, r in z["provisional"].items()]
    return f"""
## Live streams: provisional results

A live stream answers each step first from a causal head of this model (`{head['file']}`, training/recipes/causal.py:
the network's kind of layers, {v.get('channels', 64)} channels, every padding on the left and the gain normalisation a mean
over the past {v.get('norm_k', 31)} frames, dilations {', '.join(str(d) for d in v['dilations'])}, so step s hears
{v['past_context_steps']} steps back and {head['delay_steps']} ahead; trained on this model's cached synthetic examples,
{v['examples']} examples x {v['epochs']} epochs), run as a stateful graph of {head['state_size']} floats per stream fed
{"every step" if head.get('stride_steps', 1) == 1 else f"a call every {head['stride_steps']} steps"}
(src/inference/provisional-head-runner.ts: each step computed once; max difference from the trained network
{head['vs_network_max_abs_diff']:.1e}), then with the final result above (docs/streaming.md "Provisional results").
Scored per step against the truth on long-form sequences of this model's {z['clips']} validation clips (8-16 clips
in a row, quiet gaps between them; voiced steps; `{head['made_by']}`; the window rows: `{z['command']}`). The
window rows are what the streams ran before the head: this network again over a window ending that many steps
after the step, the missing future treated as the signal end ("left context": the window starts that many steps back):

{chr(10).join(rows)}
{PROVISIONAL_NOTES.get(z['task'], '')}"""


# what a release added to its provisional section by hand, per task: printed under the table
PROVISIONAL_NOTES = {
    "gender": """
Session 49: the head replaced the window plan (0.871, the last window row). It hears 128 ms ahead but is fed a call
every 2 steps, so a step's answer waits 3 steps at most, as the window plan's did (lookahead 0, a call every 4
steps): at the same delay it is right one point more often (0.881, 3.8 points under the final against 4.8), though
the final changes a few more of its labels (8.4 % against 7.8 %). The same head without lookahead scored 0.867 and
with 96 channels 0.879. Its cost: 5 % of the stream engine's inference time at 300 streams against the windows'
11 % (docs/streaming.md, "Session 49"); latency from the step's audio sent, `npm run bench:provisional -- --skip-accuracy
--levels 1,100 --seconds 10 --sets speech,arousal,gender`: p50 / p99 202 / 206 ms at one stream (both transports),
200-204 / 247-273 ms at 100 (the issue's 400 ms: met). At output periods of 256 ms and more a head call covers a whole
output step, so gender's answer then comes 128 ms after speech's (and arousal's), in a message of its own.
""",
    "emotions": """
Session 50: the head replaced the window plan (0.467 with 256 ms of lookahead, the last window row), the last model
of the four whose provisional answers heard more than the 128 ms issue 30 allows. This network comes from the speaker
recipe, which makes no long sequences, so the head learns on arousal's synthesised sequences with emotions' labels,
corpora and training speakers (the table above; the validation clips kept out: training/data/augment.py,
training/recipes/causal.py; mixed, as arousal's are, with the training split's music and other clips: game soundtracks
and sfx, ESC-10 folds 1-3, librosa, whose sources and licences models/arousal/MODEL_CARD.md lists),
and, with weight 1, the KL divergence to this network's own step probabilities on the same sequences (`--distill 1`):
0.482, 2.8 points under the final, at half the lookahead of the window plan; trained on the labels alone it scored
0.447 (outside the 5 points). The final changes more of its labels than of the window plan's (43.5 % against
24.9 %): right more often, but differently from the final. It is fed a call every 2 steps, like gender's head, so its
answer comes with gender's (at most 3 steps after the step) instead of in a tier of its own 4 steps later.
""",
}

# what the short words made by us (test/models/real-audio.test.ts) get, per task, under its length slices
SHORT_WORDS = {
    "emotions": """
Short words made by us (session 42, `test/models/real-audio.test.ts`): one espeak-ng voice saying "No! Stop it!"
(0.74 s) and "No." (1.46 s), re-synthesised with the WORLD vocoder with the pitch, spectral tilt, breathiness and
rate of anger and of sadness (`test/fixtures/models/prosody_words.py`), get `irritated` on 9 of 9 and `tired` on 7 of
9 speech steps (64 ms). A check a constant model fails, not a measure of accuracy on real short words (above): of
the 35 files tried, the angry ones got `irritated` almost always, the sad ones `tired` only where they were slowed
and arousal called them `low` too (models/arousal/MODEL_CARD.md, "Session 42").
""",
}


def length_section(d) -> str:
    """The network on corpora it never heard, by the voiced length of the utterance (validate/length_slices.py); empty
    for a model without length_slices.json."""
    z = _report(d, "length_slices.json")
    if z is None:
        return ""
    sl = z["slices"]
    head = "| corpus | " + " | ".join(f"{s} UAR (clips)" for s in sl) + " |"
    rows = [head, "|---|" + "---|" * len(sl)]
    for c, per in z["per_corpus"].items():
        rows.append(f"| {c} | " + " | ".join(f"{per[s]['uar']:.3f} ({per[s]['clips']})" if s in per else "-" for s in sl) + " |")
    rows.append("| **mean** | " + " | ".join(f"**{z['mean'][s]['uar']:.3f}**" for s in sl) + " |")
    short = "<1.2 s"
    target = ""
    for k, t in z.get("targets", {}).items():
        got = z["mean"][k]["uar"]
        shown = f"{got:.3f}, reached" if got >= t else f"**{got:.3f}, not reached**"
        target += f"\nTarget (issue 34): mean UAR >= {t:.2f} on `{k}`: {shown}.\n"
    rec = ["| corpus | clips | " + " | ".join(f"recall {k}" for k in z["classes"]) + " |", "|---|---|" + "---|" * len(z["classes"])]
    for c, per in z["per_corpus"].items():
        if short in per:
            rec.append(f"| {c} | {per[short]['clips']} | " + " | ".join("-" if v is None or v != v else f"{v:.2f}" for v in per[short]["recall"]) + " |")
    return f"""
## By utterance length, on corpora it never heard (session 19)

Version {z['version']} as shipped, on {", ".join(z['corpora'])} (never heard by it), each clip decided as a
speech segment reads (the mean of its voiced steps' probabilities); a clip falls in the slice of its voiced seconds.
`clean` and `telephone` are the whole clips; `<1.2 s` is mostly 0.5-1.2 s crops of the clean clips, placed anywhere on
the step grid (training/encoders/embed_affect.py), plus the whole clips that are that short. Slices with fewer than
{z['min_clips']} clips of a corpus are left out (`-`); the mean is over the corpora that have the slice. `{z['command']}`
(`models/{z['task']}/length_slices.json`):

{chr(10).join(rows)}
{target}
Recall per class on the short slice (`<1.2 s`): on a short turn the network falls back on its prior
(docs/results.md, "Short utterances"):

{chr(10).join(rec)}
{SHORT_WORDS.get(z['task'], '')}"""


def calibration_section(d) -> str:
    """The confidence temperature fitted on corpora the network never heard (validate/calibration.py); empty for a
    model without calibration.json."""
    z = _report(d, "calibration.json")
    if z is None:
        return ""
    rows = ["| unheard corpus | T fitted without it | ECE as trained / tempered | short crops | whole utterances | mean confidence as trained / tempered | accuracy |",
            "|---|---|---|---|---|---|---|"]
    for c, r in z["leave_one_corpus_out"].items():
        a, t = r["as trained all"], r["tempered all"]
        rows.append(f"| {c} | {r['temperature']:.2f} | {a['ece']:.3f} / {t['ece']:.3f} | {r['as trained short']['ece']:.3f} / "
                    f"{r['tempered short']['ece']:.3f} | {r['as trained whole']['ece']:.3f} / {r['tempered whole']['ece']:.3f} | "
                    f"{a['confidence']:.2f} / {t['confidence']:.2f} | {a['accuracy']:.2f} |")
    if len(rows) > 3:
        m = z["mean_ece"]
        rows.append(f"| **mean** | | **{m['as trained all']:.3f} / {m['tempered all']:.3f}** | {m['as trained short']:.3f} / {m['tempered short']:.3f} | "
                    f"{m['as trained whole']:.3f} / {m['tempered whole']:.3f} | | |")
    a, t = z["all_corpora"]["as trained all"], z["all_corpora"]["tempered all"]
    others = [g for g in z["fitted_on"] if g not in z["corpora"]]
    how = ("each corpus scored at a T fitted on the others" if not others else
           f"each scored at a T fitted on the {', '.join(others)} of the corpora it heard (data/speakers.py `val`)")
    from training.encoders.embed_affect import EMOSPEECH
    local = [g for g in z["fitted_on"] if g != "emospeech"]
    sources = (f"the datasets folder's clips of {', '.join(local)} (each clip's licence in its clips.csv row)" +
               (f"; emospeech: git snapshot of `{EMOSPEECH[0].replace('+', '/')}` at commit `{EMOSPEECH[1]}`, CC BY-NC-SA 4.0 "
                "(command words recorded by 105 identified users in real places; calm as neutral, angry as irritated)"
                if "emospeech" in z["fitted_on"] else ""))
    return f"""
## Calibrated confidence (session 22)

A step's confidence is shown at the temperature T = **{z['shipped']['temperature']:.2f}**: the label's probability in
softmax(log p / T) (docs/results.md, "Calibrated confidences"; the label and `raw` are the network's). On {", ".join(z['corpora'])},
which version {z['version']} never heard, the network is right on {a['accuracy']:.2f} of the voiced steps while its winning
probability averages {a['confidence']:.2f}; where it says 0.8 or more ({a['share_at_0.8']:.0%} of the steps) it is right on
{a['right_at_0.8']:.2f}. T is fitted by the mean negative log-likelihood, every group weighing the same ({", ".join(z['fitted_on'])}), on
whole utterances and 0.5-1.2 s crops of them, and scored by the expected calibration error (ECE: 15 bins of
confidence, the gap between confidence and accuracy weighted by the bin's share), {how}.
`{z['command']}` (`models/{z['task']}/calibration.json`). Data: {sources}.

{chr(10).join(rows)}

What it means for a user: a confidence reads as "right this often on recordings of a kind the model never heard"
(at the shipped T the mean confidence there is {t['confidence']:.2f}, the accuracy {t['accuracy']:.2f}); the network knows little
more per step on new recordings. Rank steps by `raw` instead. A temperature that also grows as the voice around the
step gets shorter (T = a x b^(1 - v/49), v the voiced steps in the receptive field) was tried for arousal (ASED,
ETTSDB, nEMO, URDU, each held out in turn): mean ECE 0.059 against 0.050 for one T, not kept.
"""
