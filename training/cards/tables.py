"""The tables of the cards: licences per source, validation metrics, leave-one-corpus-out folds and the previous
model's figures."""
from __future__ import annotations

import collections

from training.data import clips as D
from training.data import speakers as SD
from training.cards.text_speaker import LANGUAGES

def source_licences(task, clips, sources=None):
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
    """The sources the added (speaker-encoder) member also learnt from (export/ensemble.py add, recipes/embed_pretrain.py)."""
    from training.data import teacher_clips as DD
    from training.data import speakers as SD
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


def licences(task, clips):
    used = [c for c in clips if SD.label(task, c) is not None]
    lic, spk, cnt = collections.defaultdict(set), collections.defaultdict(set), collections.Counter()
    for c in used:
        lic[c.source].add(c.license)
        spk[(c.source, SD.split(c))].add(c.speaker)
        cnt[(c.source, SD.split(c))] += 1
    rows = ["| corpus | licence(s) | train speakers / clips | held-out speakers / clips |", "|---|---|---|---|"]
    for s in sorted(lic):
        rows.append(f"| {s} | {'; '.join(sorted(lic[s]))} | {len(spk[(s, 'train')])} / {cnt[(s, 'train')]} | "
                    f"{len(spk[(s, 'val')])} / {cnt[(s, 'val')]} |")
    return "\n".join(rows)


def _fmt(r, task, classes):
    if r is None or not r.get("n"):
        return ["-"] * (3 + len(classes))
    rec = [f"{r['recall'][k]:.3f}" if k in r["recall"] else "-" for k in classes]
    return [str(r["n"]), f"{r['accuracy']:.3f}", f"{r['uar']:.3f}", *rec]


def table(task, rows: dict, first="subset"):
    classes = SD.CLASSES[task]
    head = f"| {first} | clips | accuracy | UAR | " + " | ".join(f"recall {k}" for k in classes) + " |"
    out = [head, "|" + "---|" * (4 + len(classes))]
    for name, r in rows.items():
        out.append(f"| {name} | " + " | ".join(_fmt(r, task, classes)) + " |")
    return "\n".join(out)


def loco_section(task, loco):
    if loco is None:
        return "Not run for this version."
    key = "accuracy" if task == "gender" else "UAR"
    rows = ["| held-out corpus | speakers | " + f"clean {key} | telephone {key} | recording |", "|---|---|---|---|---|"]
    for c, f in loco["folds"].items():
        m = "accuracy" if task == "gender" else "uar"
        rows.append(f"| {c} | {f['speakers']} | {f['clean'][m]:.3f} | {f['phone'][m]:.3f} | {LANGUAGES.get(c, '')} |")
    per_class = table(task, {c: f["clean"] for c, f in loco["folds"].items()} | {"**pooled**": loco["pooled_clean"]},
                      first="held-out corpus (clean)")
    tel = table(task, {("**all codecs**" if k == "all" else k): r for k, r in loco["telephone"].items()}, first="telephone codec")
    cells = table(task, loco["cells"], first="cell (clean)")
    tcells = table(task, loco.get("telephone_cells", {}), first="cell (telephone)")
    txt = (f"One model per corpus, trained without it ({loco['recipe']['examples']} examples x {loco['recipe']['epochs']} "
           f"epochs, the shipped recipe), scoring every clip of the held-out corpus: clip decisions from the mean of the "
           f"per-step probabilities over the clip's voiced steps.\n\n" + "\n".join(rows) +
           f"\n\nPer class:\n\n{per_class}\n\n### Stress slices\n\nTelephone channel (every held-out clip through a real codec):\n\n{tel}\n\n"
           f"Cells:\n\n{cells}\n\n{tcells}\n")
    if loco.get("pitch_moved"):
        p = loco["pitch_moved"]
        txt += (f"\nPitch moved towards the other gender, spectral envelope kept (WORLD; women x0.6-0.7, men x1.5-1.8; "
                f"{p['n']} held-out clips): accuracy **{p['accuracy']:.3f}** (recall female {p['recall'].get('female', 0):.3f}, "
                f"male {p['recall'].get('male', 0):.3f}).\n")
    return txt


def shipped_tables(task, sh):
    """The previous (or kept) model's tables: per corpus, pooled over the corpora it never heard, and its cells."""
    rows = {}
    for c, r in sh["per_corpus"].items():
        rows[f"{c} ({r['clips']}), clean"] = r["clean"]
        rows[f"{c} ({r['clips']}), telephone"] = r["phone"]
    unseen = ", ".join(sh["unseen_corpora"])
    for v, x in sh["pooled_unseen"].items():
        rows[f"**pooled: corpora it never heard ({unseen}), {'telephone' if v == 'phone' else v}**"] = x["all"]
    cells = {f"{name}, {'telephone' if v == 'phone' else v}": r for v, x in sh["pooled_unseen"].items() for name, r in x["cells"].items()}
    return (table(task, rows, first="corpus") + f"\n\nCells, on the corpora it never heard ({unseen}):\n\n"
            + table(task, cells, first="cell"))


def shipped_section(task, loco):
    if not loco or not loco.get("shipped"):
        return ""
    return ("\n### The previous version on the same clips\n\nThe model this one replaces, scored on the same held-out "
            "clips (for corpora it was trained on, only its held-out speakers):\n\n" + shipped_tables(task, loco["shipped"]) + "\n")
