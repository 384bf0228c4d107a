"""Rebuild a shipped model from the datasets with its recipe file, check it against the shipped manifest, and list
what each shipped model was made from.

    python -m training recipes                    # the shipped models, their recipe files and full run times
    python -m training rebuild gender             # full: training/runs/rebuild/gender/, checked against models/gender
    python -m training rebuild gender --quick     # smoke: a small part of the clip table, one short epoch per step
    python -m training sources [TASK]             # what each shipped model was made from

A shipped model's manifest names its recipe file (`training.recipe`, e.g. training/recipes/gender/1.3.0.json).  The
file holds every hyperparameter of every step (a network of the longform or the speaker recipe) and how the steps
become the shipped file (an ensemble, a class-prior shift, a fusion with another model).  The check compares the
rebuilt manifest with the shipped one: the fields the service reads and the network's size always; the training
data hash and the validation metrics (within METRIC_TOLERANCE) after a full rebuild.  The ONNX files are compared
too, for information: only a run that re-trains bit-identically (gender member 1) can give the same bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time

from training.data import clips as D
from training.recipes.config import step_command

ROOT = os.path.dirname(D.HERE)
MODELS = os.path.join(ROOT, "models")
# the manifest fields a rebuilt model must share with the shipped one in every mode (the service reads them)
SERVICE_FIELDS = ("name", "version", "file", "input", "output", "raw_keys", "features", "context",
                  "receptive_field_ms", "lookahead_ms")
METRIC_TOLERANCE = 0.03  # absolute, on every metric of the manifest (retraining on another CPU or torch build drifts)
QUICK = {"longform": {"examples": 192, "epochs": 1}, "speaker": {"examples": 192, "epochs": 1}, "embed_steps": 8}


def shipped() -> dict:
    """task -> shipped manifest, for every models/<task>/ whose manifest names a recipe file."""
    out = {}
    for task in sorted(os.listdir(MODELS)):
        fn = os.path.join(MODELS, task, "manifest.json")
        if os.path.exists(fn):
            m = json.load(open(fn))
            if m.get("training", {}).get("recipe"):
                out[task] = m
    return out


def load_recipe(task: str) -> dict:
    m = shipped().get(task)
    if m is None:
        raise SystemExit(f"no shipped model with a recipe file: {task} (have: {', '.join(shipped())})")
    return json.load(open(os.path.join(ROOT, m["training"]["recipe"])))


def _teachers_ready() -> bool:
    from training.data import distill
    return os.path.exists(distill.TEACHERS)


def step_recipe(step: dict, quick: bool):
    """The step's hyperparameters as recipes/config objects, shrunk for a smoke run."""
    from training.recipes.config import LongformRecipe, SpeakerRecipe, from_dict
    cls = {"longform": LongformRecipe, "speaker": SpeakerRecipe}[step["recipe"]]
    hp = dict(step["hyperparameters"])
    if quick:
        hp.update(QUICK[step["recipe"]])
        if hp.get("embed_steps"):
            if _teachers_ready():
                hp["embed_steps"] = QUICK["embed_steps"]
            else:
                print("[rebuild] no teacher opinions (training/cache/teachers.npz): the smoke run skips the embedding "
                      "stage; a full rebuild needs them (training/README.md)", flush=True)
                hp["embed_steps"] = 0
    return from_dict(cls, hp)


def run_step(step: dict, clips, store, work: str, quick: bool, recipe_file: str = "") -> str:
    """Trains one network of the recipe into <work>/<step name>/<task>/; returns <work>/<step name>."""
    from training.recipes import longform, speaker
    r = step_recipe(step, quick)
    if step["recipe"] == "speaker" and r.embed_steps and not _teachers_ready():
        raise SystemExit("the embedding stage needs the teachers' d-vectors: python -m training.data.teachers "
                         "(in the teacher venv, training/README.md)")
    out = os.path.join(work, step["name"])
    t0 = time.time()
    reproduce = step_command(f"training.recipes.{step['recipe']}", recipe_file, step["name"]) if recipe_file else None
    if step["recipe"] == "longform":
        longform.train_task(r, clips, store, out, step["version"], quick=quick, reproduce=reproduce)
    else:
        speaker.run(r, out, clips=clips, version=step["version"], reproduce=reproduce)
    print(f"[rebuild] step {step['name']} ({step['recipe']}) took {time.time() - t0:.0f}s", flush=True)
    return out


def git_model(rev: str, path: str, dst: str) -> str:
    """The files of a model folder at git revision `rev` (model.onnx, streaming graphs, manifest, metrics) in dst."""
    os.makedirs(dst, exist_ok=True)
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:{path}"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for n in names:
        if n.endswith((".onnx", ".json")):
            blob = subprocess.run(["git", "show", f"{rev}:{path}/{n}"], cwd=ROOT, check=True, capture_output=True).stdout
            with open(os.path.join(dst, n), "wb") as fh:
                fh.write(blob)
    return dst


def finish(recipe: dict, dirs: dict, clips, work: str, quick: bool) -> str:
    """The shipped file from the steps' networks; returns its folder <work>/<task>."""
    task = recipe["model"]
    first = step_recipe(recipe["steps"][0], quick)
    table = first.clip_table(clips) if hasattr(first, "clip_table") else clips  # what the shipped file was validated on
    final = os.path.join(work, "final")
    shutil.rmtree(final, ignore_errors=True)
    if "ensemble" in recipe:
        from training.export import ensemble
        e = recipe["ensemble"]
        members = [dirs[n] for n in e["members"]]
        if e.get("weights"):
            members = ensemble.weighted(task, members, e["weights"], recipe["version"], work=os.path.join(work, "weighted"))
        ensemble.build(task, members, final, recipe["version"], weights=e.get("weights"), clips=table, quick=quick,
                       merged_by=recipe["rebuild"])
    elif "prior_shift" in recipe:
        from training.data import bank as B
        from training.export import prior_shift as PS
        ps = recipe["prior_shift"]
        lo, hi, step = ps["grid"]
        assert (ps["class"], tuple(ps["chosen_on"]), tuple(ps["recordings"])) == (PS.SHIFTED, PS.UNSEEN, PS.RECORDINGS)
        assert [float(g) for g in PS.GRID] == [round(lo + k * step, 2) for k in range(int(round((hi - lo) / step)) + 1)]
        PS.build(os.path.join(dirs[ps["of"]], task), os.path.join(final, task), clips, B.build(clips), val_clips=table)
    elif "fuse" in recipe:
        from training.cards.render import write_card
        from training.data import bank as B
        from training.export import emotions_fuse as EF
        f = recipe["fuse"]
        a = git_model(f["arousal"]["git"], f["arousal"]["path"], os.path.join(work, "arousal_" + f["arousal"]["version"]))
        out = os.path.join(final, task)
        EF.fuse(os.path.join(dirs[f["of"]], task), a, out, f["weight"])
        EF.heldout_metrics(out, B.build(clips), clips)
        write_card(out, clips)
    else:
        (only,) = dirs.values()
        shutil.copytree(only, final)
    return os.path.join(final, task)


def stamp(d: str, recipe: dict, task: str) -> None:
    """The manifest names the recipe file it was built from (as the shipped one does); the card is re-rendered."""
    from training.cards.render import write_card
    from training.export.onnx import write_json
    m = json.load(open(os.path.join(d, "manifest.json")))
    m["training"]["recipe"] = f"training/recipes/{task}/{recipe['version']}.json"
    m["training"]["rebuild"] = recipe["rebuild"]
    write_json(d, "manifest.json", m)
    write_card(d, D.load_clips())


def _leaves(x, prefix=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield prefix, float(x)


def _sha(fn):
    return hashlib.sha256(open(fn, "rb").read()).hexdigest()


def check(built: str, shipped_dir: str, quick: bool) -> list[tuple[str, bool, str]]:
    """(what, ok, detail) rows: the rebuilt folder against the shipped one."""
    b = json.load(open(os.path.join(built, "manifest.json")))
    s = json.load(open(os.path.join(shipped_dir, "manifest.json")))
    rows = [(k, b.get(k) == s.get(k), f"{b.get(k)!r} vs {s.get(k)!r}" if b.get(k) != s.get(k) else "same")
            for k in SERVICE_FIELDS]
    for k in ("parameters", "macs_per_step"):
        rows.append((f"model.{k}", b["model"].get(k) == s["model"].get(k), f"{b['model'].get(k)} vs {s['model'].get(k)}"))
    bv, sv = b.get("views"), s.get("views")  # encoder views (gender 2.x): the same encoders on the same schedule
    def views_key(v):
        return v and ([e["encoder"] for e in v["encoders"]], v["schedule"])
    same_views = views_key(bv) == views_key(sv)
    rows.append(("views (encoders, schedule)", same_views, "same" if same_views else f"{views_key(bv)} vs {views_key(sv)}"))
    for k in ("start_steps", "delay_steps", "state_size"):
        bs, ss = b.get("streaming", {}).get(k), s.get("streaming", {}).get(k)
        rows.append((f"streaming.{k}", bs == ss, f"{bs} vs {ss}"))
    if not quick:
        rows.append(("training_data_sha256", b["training_data_sha256"] == s["training_data_sha256"],
                     "same clips.csv rows" if b["training_data_sha256"] == s["training_data_sha256"] else "clips.csv changed"))
        bm, far = dict(_leaves(b.get("metrics", {}))), []
        for k, v in _leaves(s.get("metrics", {})):
            if k not in bm or abs(bm[k] - v) > METRIC_TOLERANCE:
                far.append(f"{k}: {bm.get(k)} vs {v:g}")
        rows.append((f"metrics (within {METRIC_TOLERANCE})", not far, "; ".join(far[:6]) or "all within"))
    same = _sha(os.path.join(built, "model.onnx")) == _sha(os.path.join(shipped_dir, "model.onnx"))
    rows.append(("model.onnx bytes (information)", True, "identical" if same else "differ (re-training is not bit-exact)"))
    return rows


def rebuild(task: str, quick: bool = False, work: str | None = None) -> tuple[str, list]:
    """Runs the recipe of shipped model `task` and checks the result; returns (folder, check rows)."""
    from training.data.subset import quick_subset
    recipe = load_recipe(task)
    work = work or os.path.join(D.HERE, "runs", "rebuild-quick" if quick else "rebuild", task)
    clips = D.load_clips()
    if quick:
        clips = quick_subset(clips)
    store = D.AudioStore(clips)
    if not quick:  # the validation list `auris eval` scores through the service (docs/eval.md), from the same split
        from training.data import speakers as SD
        val_dir = os.path.join(D.HERE, "validation")
        if recipe["steps"][0]["recipe"] == "speaker":
            SD.write_validation_csv(task, clips, val_dir)
        else:
            D.write_validation_csvs(clips, val_dir)
    t0 = time.time()
    recipe_file = shipped()[task]["training"]["recipe"]
    dirs = {step["name"]: run_step(step, clips, store, work, quick, recipe_file) for step in recipe["steps"]}
    built = finish(recipe, dirs, clips, work, quick)
    if recipe.get("views"):  # a network fused with pretrained encoders' views (gender 2.x)
        from training.encoders.gender import rebuild_views
        rebuild_views(built, recipe["views"], recipe["version"], quick)
    stamp(built, recipe, task)
    rows = check(built, os.path.join(MODELS, task), quick)
    print(f"[rebuild] {task} {recipe['version']}{' (quick)' if quick else ''}: {built} in {time.time() - t0:.0f}s")
    for what, ok, detail in rows:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}: {detail}")
    return built, rows


# ------------------------------------------------------------------ sources
def _count(pairs) -> dict:
    """source -> {split: clips} of (clip, split) pairs."""
    out: dict = {}
    for c, split in pairs:
        out.setdefault(c.source, {}).setdefault(split, 0)
        out[c.source][split] += 1
    return out


def step_sources(step: dict, clips, listed=None) -> dict:
    """What one network of a recipe learnt from: labelled clips per source and split, backgrounds, outside models."""
    from training.data import augment as A
    from training.data import speakers as SD
    from training.data import teacher_clips as DD
    hp, task = step["hyperparameters"], step["hyperparameters"]["task"]
    listed = hp.get("sources") or listed
    clips = [c for c in clips if not listed or c.source in listed]
    pools = A.Pools(clips, "train")
    out = {"recipe": step["recipe"], "task": task,
           "backgrounds (training split)": sorted({c.source for c in pools.music + pools.other})}
    if step["recipe"] == "longform":
        used = [c for c in clips if D.task_label(task, c) is not None]
        out["labelled"] = _count((c, D.task_split(task, c)) for c in used)
        if task == "gender" and hp.get("variants", True):
            out["also"] = ["WORLD re-syntheses of the gender training clips (data/voice_variants.py)"]
        return out
    out["labelled"] = _count((c, SD.split(c)) for c, _ in SD.clips_of(task, clips))
    also = []
    if hp.get("embed_steps") or hp.get("dvec") or hp.get("distill"):
        also.append("Resemblyzer 0.1.4 d-vectors of the training speakers' and of these unlabelled sources' clips "
                    f"(training/cache/teachers.npz): {', '.join(DD.UNLABELLED)}")
    if hp.get("distill"):
        also.append("inaSpeechSegmenter 0.6.8's opinions of the unlabelled clips")
    if hp.get("variants"):
        also.append("WORLD re-syntheses of up to 16 clips per training speaker (data/variant_bank.py)")
    if also:
        out["also"] = also
    return out


def sources(tasks=None) -> dict:
    """task -> what its shipped model was made from (recipe file, steps, inputs from git, data hash)."""
    from training.data import speakers as SD
    clips = D.load_clips()
    out = {}
    for task, m in shipped().items():
        if tasks and task not in tasks:
            continue
        recipe = load_recipe(task)
        # the hash is of the rows the first step's recipe family can use for the task (the shipped file keeps it)
        first = recipe["steps"][0]
        label = SD.label if first["recipe"] == "speaker" else D.task_label
        listed = first["hyperparameters"].get("sources")
        used = [c for c in clips if label(task, c) is not None and (not listed or c.source in listed)]
        out[task] = {"version": m["version"], "recipe": m["training"]["recipe"], "rebuild": recipe["rebuild"],
                     "steps": {s["name"]: step_sources(s, clips, m["training"].get("sources")) for s in recipe["steps"]}}
        if "fuse" in recipe:
            f = recipe["fuse"]["arousal"]
            out[task]["inputs from git"] = [f"arousal {f['version']}: {f['path']} at {f['git']}"]
        if "prior_shift" in recipe:
            out[task]["shift chosen on"] = recipe["prior_shift"]["chosen_on"]
        if "views" in recipe:  # pretrained encoders and the labelled voices their heads were fitted on
            from training.encoders.corpora import REPOS
            ev = m["training"].get("encoder_view", {})
            out[task]["views"] = [f"encoder {n}: {p}" for n, p in recipe["views"]["encoders"].items()] + [
                f"heads fitted on: {', '.join(ev.get('sources', []))}",
                *(f"{name} from the git snapshot {repo.replace('+', '/')} @ {commit}" for name, (repo, commit) in REPOS.items())]
        out[task]["training_data_sha256"] = m["training_data_sha256"]
        out[task]["clips.csv now"] = ("the same rows" if D.rows_sha256(used) == m["training_data_sha256"]
                                      else "changed since (the hash covers the rows usable by the task)")
    return out


def print_sources(rep: dict) -> None:
    for task, r in rep.items():
        print(f"{task} {r['version']}: {r['recipe']}  ({r['rebuild']})")
        for name, s in r["steps"].items():
            lab = ", ".join(f"{src} {'/'.join(f'{k} {n}' for k, n in sorted(sp.items()))}" for src, sp in sorted(s["labelled"].items()))
            print(f"  {name} [{s['recipe']} recipe, task {s['task']}]\n    labelled clips: {lab}")
            print(f"    backgrounds: {', '.join(s['backgrounds (training split)'])}")
            for a in s.get("also", []):
                print(f"    also: {a}")
        for k in ("inputs from git", "shift chosen on", "views"):
            if k in r:
                print(f"  {k}: {', '.join(r[k])}")
        print(f"  training_data_sha256 {r['training_data_sha256'][:16]}...: clips.csv now has {r['clips.csv now']}")
