"""Leave-one-corpus-out validation of the speaker recipe, with stress slices, beside the shipped models.

    python -m training.validate.loco --task gender --jobs 2          # trains one model per held-out corpus, then reports
    python -m training.validate.loco --task gender --report-only     # re-reads the fold predictions
    npm run eval:loco -- --task arousal                               # the same, from the repository's scripts
    python -m training.validate.loco --task gender --added-member --runs R --cfg '{"lifter": 0}' --old-members 1
                                     # the estimate of a member added to the shipped ensemble (loco_added_member.json)

For each corpus X: a model is trained with the recipe (recipes/speaker.py; every option of recipes/config.SpeakerRecipe
is an option here) on the training speakers of every other corpus, and scores every clip of X, as recorded (`clean`)
and through a telephone channel with a real codec (`phone`, data/bank.py).  Nothing of X is seen in training or in
any choice made here, so the figures estimate what a user with a new kind of recording gets.  Slices, each on its own
(validate/slices.py): telephone (every held-out clip through G.711 mu-law/A-law, GSM, Speex, Codec2 or G.726 at 8 kHz,
300-3400 Hz, 0-6 % packet loss; per codec too); gender x arousal cells; unseen languages (each held-out corpus is its
own language or accent); gender only: pitch moved towards the other gender with the spectral envelope kept (WORLD),
which must not flip the decision.  The previous versions in git (loco_report.PREVIOUS_REV) are scored on the same clips
where they never saw the corpus, and on the held-out speakers of the corpora they were trained on.
Writes <runs>/<task>/<corpus>.npz per fold and <out>/<task>/loco.json (read by the model card).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from multiprocessing import Pool

import numpy as np

from training.data import bank as B
from training.data import clips as D
from training.data import speakers as SD
from training.recipes.config import SpeakerRecipe, add_arguments, from_args, to_dict
from training.validate.loco_report import added_member_report, corpora_of, report
from training.validate.slices import pitch_slice

RUNS = os.path.join(D.HERE, "runs", "loco")
ROOT = os.path.dirname(D.HERE)


def _fold(job):
    """Train recipe `r` without `corpus`, score all of its clips (clean, phone, and for gender pitch-moved variants)."""
    import torch
    from training.recipes import speaker as ST
    r, corpus, runs = job
    task = r.task
    torch.set_num_threads(1)
    clips = D.load_clips()
    bank = ST.training_bank(clips, r.distill or r.embed_steps > 0, r.variants > 0)
    others = training_corpora(corpus, r.corpora_count, corpora_of(task, clips))
    items = SD.training_items(SD.clips_of(task, clips, corpora=others, split_name="train"), r.leave_out_emotions,
                              r.speaker_fraction)
    if r.distill:  # teacher targets on unlabelled speech, from a probe that never saw this corpus' labels
        from training.data.distill import distill_items
        items += distill_items(clips, exclude=(corpus,))
    logf = open(os.path.join(runs, task, f"{corpus}.log"), "w")
    model = ST.train(bank, items, r, log=lambda s: (logf.write(s + "\n"), logf.flush()))
    held = SD.clips_of(task, clips, corpora=[corpus])
    out = {"idx": np.array([c.idx for c, _ in held]), "y": np.array([y for _, y in held])}
    for version in ("clean", "phone"):
        out[version] = np.stack([p if p is not None else np.full(len(SD.CLASSES[task]), np.nan)
                                 for p in ST.predict(model, bank, [c for c, _ in held], version)])
    if task == "gender":
        out.update(pitch_slice(model, clips, held))
    torch.save(model.state_dict(), os.path.join(runs, task, f"{corpus}.pt"))
    np.savez(os.path.join(runs, task, f"{corpus}.npz"), **out)
    return corpus


def training_corpora(held: str, count: int = 0, labelled=SD.CORPORA):
    """The corpora a fold learns from: every other one with the task's labels (`labelled`), or (count > 0, a curve
    over corpora) a fixed random `count` of them, drawn from the held-out corpus' name so each fold's draw is the
    same in every run."""
    others = [c for c in SD.CORPORA if c != held and c in labelled]
    if 0 < count < len(others):
        rng = np.random.default_rng(int(hashlib.md5(f"{held}:{count}".encode()).hexdigest()[:8], 16))
        others = sorted(others[k] for k in rng.permutation(len(others))[:count])
    return others


def run(r: SpeakerRecipe, runs: str, out: str, corpora=None, jobs: int = 2, report_only: bool = False) -> dict:
    """The folds of recipe `r` into <runs>/<task>/, then <out>/<task>/loco.json; returns the report."""
    clips = D.load_clips()
    bank = B.build(clips)
    os.makedirs(os.path.join(runs, r.task), exist_ok=True)
    if not report_only:
        with Pool(jobs) as pool:
            for done in pool.imap_unordered(_fold, [(r, c, runs) for c in corpora or corpora_of(r.task, clips)]):
                print(f"[loco {r.task}] fold {done} done", flush=True)
    rep = report(r.task, clips, bank, runs)
    rec = to_dict(r)
    rec.pop("task")
    rec["cfg"] = r.model_config()
    rec["left_out_emotions"] = ",".join(rec.pop("leave_out_emotions"))
    rep["recipe"] = rec
    _write(out, r.task, "loco.json", rep)
    print(json.dumps({k: rep[k] for k in ("pooled_clean", "telephone")}, indent=1))
    for corpus, f in rep["folds"].items():
        print(f"  {corpus:8s} speakers {f['speakers']:3d} clean {f['clean']} phone uar {f['phone']['uar']}")
    return rep


def _write(out, task, name, rep):
    os.makedirs(os.path.join(out, task), exist_ok=True)
    with open(os.path.join(out, task, name), "w") as fh:
        json.dump(rep, fh, indent=1)
        fh.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", required=True, choices=SD.TASKS)
    ap.add_argument("--corpora", default=None, help="comma-separated subset of the held-out corpora")
    ap.add_argument("--jobs", type=int, default=2, help="folds trained at once (one thread each)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "models"), help="folder whose <task>/loco.json gets the report")
    ap.add_argument("--runs", default=RUNS, help="folder for the fold files (<runs>/<task>/<corpus>.*)")
    ap.add_argument("--added-member", action="store_true",
                    help="score the folds in --runs as a member added to the shipped ensemble (loco_added_member.json)")
    ap.add_argument("--old-members", type=int, default=2,
                    help="--added-member: weight of the shipped file in the fusion, counted in members (1: as much as "
                         "the new member, as `ensemble add --weight-new 0.5`)")
    add_arguments(ap, SpeakerRecipe)
    a = ap.parse_args(argv)
    r = from_args(SpeakerRecipe, a)
    corpora = a.corpora.split(",") if a.corpora else None
    if a.added_member:
        clips = D.load_clips()
        rep = added_member_report(r.task, clips, B.build(clips), a.runs, r.cfg, a.old_members, corpora)
        _write(a.out, r.task, "loco_added_member.json", rep)
        print(json.dumps({v: {k: x["all"]["accuracy"] for k, x in y.items()} for v, y in rep["pooled"].items()}))
        return
    run(r, a.runs, a.out, corpora, a.jobs, a.report_only)


if __name__ == "__main__":
    main()
