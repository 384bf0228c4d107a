"""Scores the speaker map (cluster.py) on the cached simulated conversations (embed.py) and chooses its parameters.

Speech activity is the reference's ("oracle speech": a step is speech when reference speech covers half of it), so
the DER here is the clustering's alone (files: FileSpeakerMap.finish given that speech, cluster.file_map); the service
decides speech with its own model (end-to-end figures: run the exported conversations through the service). Tuning
uses the DEV corpora only; TEST corpora are scored once.

  python -m training diarization tune      # coordinate search on DEV -> training/runs/diarization/tuning.json
  python -m training diarization tune-merge  # files' alike-merge rule on DEV (merge_rule.py's own command, speakers 1.6.0)
  python -m training diarization tune-free-recluster  # streams without a count: when they start re-clustering, how often
  python -m training diarization report    # tables of the manifest's parameters (or --params FILE) on DEV and TEST
  python -m training diarization report --service-speech -60  # the same through the service's own speech decisions
                                           # (service_speech.py writes them first)
  (--runs DIR or $AURIS_DIARIZATION_RUNS: another training/runs/diarization, e.g. a worktree's with the cache)
"""
from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import pickle
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from training.diarization import cluster as C
from training.diarization import simulate as S
from training.diarization.der import der, steps_to_turns

ROOT = Path(__file__).resolve().parents[2]
RUNS = S.RUNS
STEP_S = 0.064
# the starting point of the search (v1.1, centred: cosines of centred embeddings are far lower than raw ones)
DEFAULT = C.Params(hop_steps=12, gate_db=-50.0, min_voiced_steps=16, segment_threshold=0.6, merge_threshold=0.15,
                   refine_iterations=2, min_speaker_s=8.0, min_speaker_share=0.2, temperature=3.0, online_threshold=0.7,
                   max_speakers=10, center=True)
GRID = {
    "segment_threshold": [0.5, 0.55, 0.6, 0.65, 0.7, 0.8],
    "merge_threshold": [0.05, 0.1, 0.15, 0.2, 0.3, 0.4],  # centred; uncentred (center False) wants 0.75-0.94
    "refine_iterations": [0, 2],
    "min_speaker_s": [2.0, 3.0, 5.0, 8.0, 12.0],
    "min_speaker_share": [0.1, 0.2, 0.3, 1.0],
    "temperature": [3.0, 10.0, 30.0],
    "min_voiced_steps": [4, 8, 12, 16, 20, 24],
}
ONLINE_GRID = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]


def load(corpora, conditions=S.CONDITIONS) -> list[dict]:
    recs = []
    for c in corpora:
        for cond in conditions:
            p = RUNS / "cache" / f"{c}-{cond}.pkl"
            if p.exists():
                for r in pickle.load(open(p, "rb")):
                    r["row"] = {int(s): i for i, s in enumerate(r["starts"])}
                    r["speech"] = S.speech_steps(r["turns"], len(r["levels"]))
                    recs.append(r)
    return recs


def windows(rec: dict, p: C.Params, which=C.embedded_windows, **gate) -> tuple[np.ndarray, np.ndarray]:
    win = which(rec["levels"], p, rec["speech"], **gate)  # a file job's speech gate (speakers 1.9.1) reads the oracle speech here
    rows = [rec["row"][int(j) * p.hop_steps] for j in win]  # every window with a voiced step is cached
    return win, rec["emb"][rows].astype(np.float64)


CONFIRM = 1  # the service; > 1 = a variant for streams (--confirm N)


def score(rec: dict, p: C.Params, oracle_count: bool = False, online: bool = True, provisional: bool = False,
          files: bool = True) -> dict:
    win, E = windows(rec, p)  # a stream's windows (no speech gate)
    fw, FE = (win, E) if p.file_speech_gate is None else windows(rec, p, gate=p.file_speech_gate)  # a file job's
    n = rec["meta"]["speakers"]
    out = {"key": rec["meta"]["key"], "corpus": rec["meta"]["corpus"], "condition": rec["meta"]["condition"], "n": n,
           "seconds": rec["seconds"], "windows": len(win)}
    steps = len(rec["levels"])
    modes = [("file", C.file_map(steps, fw, FE, p, n if oracle_count else None, speech=rec["speech"]))] if files else []
    if online:  # with the count given, a stream of 2 speakers re-clusters (cluster.recluster_assign)
        xw, X = windows(rec, p, C.sparse_windows)  # streams also score their sparse windows (speakers 1.9.0)
        o = C.stream_map(steps, win, E, p, confirm=CONFIRM, num_speakers=n if oracle_count else None, sparse_win=xw, sparse_E=X)
        modes.append(("online", o))
        if provisional:  # the stream's provisional labels (who spoke last): the report's table, not the tuning
            modes.append(("provisional", {"labels": o["provisional"], "K": o["K"]}))
            sp = rec["speech"].astype(bool)
            out["provisional_changed"] = [int((o["provisional"][sp] != o["labels"][sp]).sum()), int(sp.sum())]
    for name, r in modes:
        lab, sp = r["labels"], rec["speech"]
        d = der(rec["turns"], steps_to_turns(lab, sp, STEP_S))
        out[name] = {"err": d["miss"] + d["fa"] + d["conf"], "total": d["total"], "der": d["der"],
                     "count": int(len(set(lab[sp].tolist()))), "K": int(r["K"])}
    return out


def evaluate(recs, p, oracle_count=False, online=True, provisional=False, files=True) -> list[dict]:
    return [score(r, p, oracle_count, online, provisional, files) for r in recs]


def pooled(rows, mode="file") -> dict:
    err = sum(r[mode]["err"] for r in rows)
    tot = sum(r[mode]["total"] for r in rows)
    return {"der": err / tot if tot else float("nan"), "count_acc": float(np.mean([r[mode]["count"] == r["n"] for r in rows])),
            "n": len(rows)}


def objective(rows, mode="file") -> float:
    """Pooled DER + 0.1 x share of conversations with the wrong number of speakers, averaged over conditions."""
    vals = []
    for cond in S.CONDITIONS:
        g = [r for r in rows if r["condition"] == cond]
        if g:
            q = pooled(g, mode)
            vals.append(q["der"] + 0.1 * (1 - q["count_acc"]))
    return float(np.mean(vals))


def tune(recs, hops=(6, 12, 25), rounds=2, log=print) -> dict:
    """Per hop: a grid over (segment_threshold, merge_threshold, refine_iterations), then a coordinate search over
    every file parameter (GRID), then online_threshold for streams (same temperature); returns every hop's best."""
    best_by_hop = {}
    for hop in hops:
        p = replace(DEFAULT, hop_steps=hop, min_speaker_s=5.0, min_voiced_steps=16)
        cur, best = None, p
        for seg, mt, R in itertools.product(GRID["segment_threshold"], GRID["merge_threshold"], GRID["refine_iterations"]):
            q = replace(p, segment_threshold=seg, merge_threshold=mt, refine_iterations=R)
            o = objective(evaluate(recs, q, online=False))
            if cur is None or o < cur - 1e-4:
                cur, best = o, q
        p = best
        log(f"hop {hop} grid: {cur:.4f} {p}")
        for _ in range(rounds):
            changed = False
            for name, values in GRID.items():
                for v in values:
                    if getattr(p, name) == v:
                        continue
                    q = replace(p, **{name: v})
                    o = objective(evaluate(recs, q, online=False))
                    if o < cur - 1e-4:
                        cur, p, changed = o, q, True
                        log(f"  hop {hop} {name}={v}: {o:.4f}")
            if not changed:
                break
        best_on = None
        for t in ONLINE_GRID:
            q = replace(p, online_threshold=t)
            o = objective(evaluate(recs, q), "online")
            log(f"  hop {hop} online_threshold={t}: {o:.4f}")
            if best_on is None or o < best_on[0]:
                best_on = (o, q)
        p = best_on[1]
        rows = evaluate(recs, p)
        best_by_hop[hop] = {"params": p.as_dict(), "objective_file": objective(rows), "objective_online": objective(rows, "online"),
                            "file": pooled(rows), "online": pooled(rows, "online")}
        log(f"hop {hop} best {json.dumps(best_by_hop[hop])}")
    return best_by_hop


# (free_recluster_min_windows, free_recluster_every): 0 windows = streams without a count never re-cluster (1.7.0)
FREE_RECLUSTER_GRID = [(0, 8), (100, 4), (120, 4), (140, 4), (160, 4), (140, 8), (140, 2)]


def tune_free_recluster(recs, p: C.Params, grid=FREE_RECLUSTER_GRID, log=print) -> dict:
    """Streams without a count (speakers 1.8.0, 1.8.1): when they start re-clustering and how often
    (free_recluster_min_windows, free_recluster_every) by the streams' objective on DEV (the other parameters the
    manifest's); files are not scored (they do not depend on these); ~3 min per pair on one core at every 4."""
    res = {}
    for m, e in grid:
        rows = evaluate(recs, replace(p, free_recluster_min_windows=m, free_recluster_every=e), files=False)
        res[f"{m}:{e}"] = {"objective_online": objective(rows, "online"), "online": pooled(rows, "online")}
        log(f"free_recluster_min_windows {m}, every {e}: streams' objective {res[f'{m}:{e}']['objective_online']:.4f}")
    best = min(res, key=lambda k: res[k]["objective_online"])
    m, e = (int(x) for x in best.split(":"))
    return {"free_recluster_min_windows": m, "free_recluster_every": e, "grid": res}


def table(rows, title) -> str:
    """Markdown: per condition x speakers group, files / online / files with the count given."""
    lines = [f"### {title}", "", "| condition | speakers | conv. | DER files | DER online | DER files, count given | DER online, count given | count right files | count right online |",
             "|---|---|---|---|---|---|---|---|---|"]
    groups = [("2", (2,)), ("2-4", (2, 3, 4)), ("5-6", (5, 6)), ("all", (2, 3, 4, 5, 6))]
    for cond in list(S.CONDITIONS) + ["all"]:
        for gname, ns in groups:
            g = [r for r in rows if (cond == "all" or r["condition"] == cond) and r["n"] in ns]
            if not g:
                continue
            f, o, k, ok = pooled(g), pooled(g, "online"), pooled(g, "file_k"), pooled(g, "online_k")
            lines.append(f"| {cond} | {gname} | {len(g)} | {100 * f['der']:.1f} % | {100 * o['der']:.1f} % | {100 * k['der']:.1f} % | {100 * ok['der']:.1f} % | "
                         f"{100 * f['count_acc']:.0f} % | {100 * o['count_acc']:.0f} % |")
    return "\n".join(lines)


def provisional_table(rows, title) -> str:
    """Markdown: streams' provisional labels (LiveSpeakerMap: the latest window ending at or before the step) against
    their finals, per condition; `changed`: speech steps with a provisional label whose final differs."""
    lines = [f"### {title}", "", "| condition | speakers | conv. | DER online (finals) | DER provisional | provisional labels the final changes |",
             "|---|---|---|---|---|---|"]
    for cond in list(S.CONDITIONS) + ["all"]:
        for gname, ns in (("2-4", (2, 3, 4)), ("all", (2, 3, 4, 5, 6))):
            g = [r for r in rows if (cond == "all" or r["condition"] == cond) and r["n"] in ns]
            if not g:
                continue
            changed = sum(r["provisional_changed"][0] for r in g) / max(1, sum(r["provisional_changed"][1] for r in g))
            lines.append(f"| {cond} | {gname} | {len(g)} | {100 * pooled(g, 'online')['der']:.1f} % | "
                         f"{100 * pooled(g, 'provisional')['der']:.1f} % | {100 * changed:.1f} % |")
    return "\n".join(lines)


def corpus_table(rows, title) -> str:
    lines = [f"### {title}", "", "| corpus | conv. | DER files clean / telephone / noise | DER online clean / telephone / noise | count right files | count right online |",
             "|---|---|---|---|---|---|"]
    for c in sorted({r["corpus"] for r in rows}):
        g = [r for r in rows if r["corpus"] == c]
        fd = " / ".join(f"{100 * pooled([r for r in g if r['condition'] == k])['der']:.1f}" for k in S.CONDITIONS)
        od = " / ".join(f"{100 * pooled([r for r in g if r['condition'] == k], 'online')['der']:.1f}" for k in S.CONDITIONS)
        lines.append(f"| {c} | {len(g)} | {fd} % | {od} % | {100 * pooled(g)['count_acc']:.0f} % | {100 * pooled(g, 'online')['count_acc']:.0f} % |")
    return "\n".join(lines)


def _full_row(job: tuple[dict, C.Params]) -> dict:
    rec, p = job
    row = score(rec, p, provisional=True)
    k = score(rec, p, oracle_count=True)
    row["file_k"], row["online_k"] = k["file"], k["online"]
    return row


def full_rows(recs, p, workers: int = 1) -> list[dict]:
    """Every mode of every conversation (the report's rows, in `recs`' order), on `workers` processes."""
    if workers <= 1:
        return [_full_row((r, p)) for r in recs]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(_full_row, [(r, p) for r in recs], chunksize=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=["tune", "tune-free-recluster", "report"])
    ap.add_argument("--hops", default="6,12,25")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--subsample", type=int, default=1, help="tune on every k-th DEV conversation")
    ap.add_argument("--params", default=None,
                    help="report: a JSON file {\"params\": {...}} (missing names: the manifest's); default the manifest's")
    ap.add_argument("--grid", default=None,
                    help="tune-free-recluster: the pairs tried, START:EVERY,... (default FREE_RECLUSTER_GRID)")
    ap.add_argument("--confirm", type=int, default=1, help="> 1: a variant for streams (not the service)")
    ap.add_argument("--runs", default=None, help="the folder with cache/ (default training/runs/diarization)")
    ap.add_argument("--workers", type=int, default=1, help="report: processes scoring the conversations (the same rows)")
    ap.add_argument("--service-speech", type=float, default=None, metavar="DB",
                    help="report: score with the service's own speech decisions at this volume threshold "
                         "(service_speech.py's folder) instead of the oracle speech -> report-service<DB>.md")
    a = ap.parse_args()
    global CONFIRM, RUNS
    CONFIRM = a.confirm
    if a.runs:
        RUNS = Path(a.runs)
    sfx = "" if a.confirm == 1 else f"-confirm{a.confirm}"
    if a.cmd == "tune":
        recs = load(S.DEV)[:: a.subsample]
        t0 = time.time()
        res = tune(recs, tuple(int(h) for h in a.hops.split(",")), a.rounds)
        (RUNS / f"tuning{sfx}.json").write_text(json.dumps(res, indent=1))
        print(f"tuned in {time.time() - t0:.0f} s")
    elif a.cmd == "tune-free-recluster":
        grid = [tuple(int(x) for x in v.split(":")) for v in a.grid.split(",")] if a.grid else FREE_RECLUSTER_GRID
        res = tune_free_recluster(load(S.DEV)[:: a.subsample], C.Params.from_manifest(), grid)
        name = "free_recluster_tuning" + ("-" + a.grid.replace(",", "-").replace(":", "x") if a.grid else "")
        (RUNS / f"{name}.json").write_text(json.dumps(res, indent=1, default=float))
        print(f"free_recluster_min_windows {res['free_recluster_min_windows']}, every {res['free_recluster_every']}")
    else:
        p = C.Params.from_dict(json.load(open(a.params))["params"]) if a.params else C.Params.from_manifest()
        out = {"params": p.as_dict(), "confirm": CONFIRM}
        md = []
        flags = None  # the oracle speech, as load() gives it
        if a.service_speech is not None:
            from training.diarization import service_speech as SS
            flags = SS.folder(RUNS, a.service_speech)
            sfx += f"-service{a.service_speech:g}"
            out["speech"] = f"the service's, volume_threshold {a.service_speech:g} dBFS"
        for name, corp in (("DEV (tuned on)", S.DEV), ("TEST (held out)", S.TEST)):
            recs = load(corp) if flags is None else SS.load_into(load(corp), flags)
            rows = full_rows(recs, p, a.workers)
            out[name] = rows
            md += [table(rows, f"{name}: hop_steps {p.hop_steps}"), "", corpus_table(rows, f"{name}: per corpus"), "",
                   provisional_table(rows, f"{name}: streams' provisional labels"), ""]
        (RUNS / f"report{sfx}.json").write_text(json.dumps(out, indent=1, default=float))
        (RUNS / f"report{sfx}.md").write_text("\n".join(md))
        print("\n".join(md))


if __name__ == "__main__":
    main()
