"""test/fixtures/speakers_golden.json: cases the TypeScript speaker map must reproduce exactly (test/speakers/golden.test.ts).

Each case is a slice of a cached simulated conversation (real speaker-encoder embeddings of several voices): the
embedded windows (from the slice's step levels) with their embeddings as integers (value = int / embedding_scale,
then float32 as the encoder gives them), the slice's reference speech per step ("0"/"1"), the parameters
(models/speakers/manifest.json names, the manifest's values unless the note says otherwise) and the speaker count.
Expected, per step, the label (argmax of the step probabilities, ties lowest):
  file:   FileSpeakerMap.finish (cluster.file_map with speech): windows mostly speech clustered, centred when
          `center`, clusterWindows, alike speakers merged (no count, `alike_merge`), windowProbabilities (against the
          speakers' whitened centroids when `whitened_scores`), stepProbabilities with lookAhead, speakers that win no
          speech step dropped and the rest renumbered by their first speech step;
  stream: OnlineSpeakers + stepProbabilities without lookAhead, width max_speakers (cluster.stream_map); a case with
          `stream_num_speakers` (<= recluster_max_speakers) runs Reclustering instead, width that count; without
          one, from free_recluster_min_windows windows on, FreeReclustering (speakers 1.8.0);
          `provisional`: the stream's provisional answer per step (the latest embedded window ending at or before it
          plus provisional_lookahead_steps, LiveSpeakerMap; before the first one, the zeros' label 0);
          a case's `sparse_windows` / `sparse_embeddings` (sparse_min_voiced_steps, speakers 1.9.0): the stream's
          sparse windows, scored as they arrive without being assigned, counting in the steps they cover.
The slices are searched so that the cases between them exercise merges, short clusters joining a speaker, the
long/short rule of a given count, alike speakers merged after clustering, refine moving windows, a stream opening new speakers,
a stream re-clustering freely, unembedded windows.

  python -m training diarization golden [--runs DIR]   # DIR: training/runs/diarization (needs its cache/)
"""
from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from training.diarization import cluster as C

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "test/fixtures/speakers_golden.json"
SCALE = 10000  # embeddings stored as round(x * SCALE)


def case_inputs(case: dict) -> tuple[C.Params, np.ndarray, np.ndarray, np.ndarray]:
    """(params, window indexes, embeddings as the encoder gives them (float32 values), speech per step)."""
    p = C.Params(**case["params"])
    win = np.asarray(case["windows"], dtype=int)
    E = (np.asarray(case["embeddings"], dtype=np.float64).reshape(len(win), -1 if len(win) else 256) / case["embedding_scale"])
    E = E.astype(np.float32).astype(np.float64)
    speech = np.array([c == "1" for c in case["speech"]], dtype=bool)
    return p, win, E, speech


def sparse_inputs(case: dict) -> dict:
    """stream_map's sparse_win / sparse_E of a case (as the encoder gives them, like its embeddings)."""
    xw = np.asarray(case.get("sparse_windows", []), dtype=int)
    if len(xw) == 0:
        return {}
    X = np.asarray(case["sparse_embeddings"], dtype=np.float64) / case["embedding_scale"]
    return {"sparse_win": xw, "sparse_E": X.astype(np.float32).astype(np.float64)}


def stream_of(case: dict, p: C.Params, sparse: bool = True, **kw) -> dict:
    """The case's stream at parameters `p`, its sparse windows included unless `sparse` is False."""
    _, win, E, _ = case_inputs(case)
    return C.stream_map(case["steps"], win, E, p, **kw, **(sparse_inputs(case) if sparse else {}))


def expected(case: dict) -> tuple[dict, dict]:
    p, win, E, speech = case_inputs(case)
    f = C.file_map(case["steps"], win, E, p, case.get("num_speakers"), speech=speech)
    return f, stream_of(case, p, num_speakers=case.get("stream_num_speakers"))


def trace(case: dict) -> dict:
    """What the case exercises: cluster counts stage by stage, windows moved by refine, speakers dropped."""
    p, win, E, speech = case_inputs(case)
    n = case.get("num_speakers")
    f, o = expected(case)
    if len(win) == 0:
        return {"windows": 0}
    En = C.normalise(E)
    chosen = f["clustered"]
    Ea = C.centred(En, chosen) if p.center else En
    M = C.whitening_matrix(p.whitening)
    V = C.second_view(En[chosen], p, n)
    c = C.Clusterer(Ea[chosen], p, V, C.apart_rule(p, n, V))
    kept_apart = []  # the pairs the agglomeration kept apart
    apart = c.apart

    def counted(best, a, b):
        hit = apart(best, a, b)
        if hit:
            kept_apart.append((a.members[0], b.members[0]))
        return hit
    c.apart = counted
    seg = c.segments(win[chosen])
    ag = c.agglomerate(seg, n)
    free_found = sum(c.is_long(m) for m in c.agglomerate(c.segments(win[chosen]), None)) if n else None
    by_length = sorted(range(len(ag)), key=lambda k: (-len(ag[k]), k))
    kept = [k for i, k in enumerate(by_length) if i == 0 or c.is_long(ag[k]) or i < (n or 0)]
    promoted = len(c.distinct_short(ag, set(kept))) if n is None else 0
    ch = c.choose_speakers(ag, p.max_speakers, n)
    rf = c.refine(ch)
    merged = len(rf)
    if n is None and p.alike_merge is not None and M is not None and len(rf) > 1:
        K, assignment, _ = C.cluster_windows(win[chosen], Ea[chosen], p, p.max_speakers, None, V)
        merged = len(C.merge_alike(assignment, K, V, Ea[chosen], p.alike_merge))
    before = {i: k for k, m in enumerate(ch) for i in m}
    after = {i: k for k, m in enumerate(rf) for i in m}
    moved = sum(before[i] != after[i] for i in before) if len(rf) == len(ch) else -1
    return {"windows": len(win), "clustered": len(chosen), "segments": len(seg), "after_agglomerate": len(ag),
            "long": sum(c.is_long(m) for m in ag), "kept": len(kept), "short_promoted": promoted, "short_joined": len(ag) - len(kept) - promoted,
            "kept_apart": len(kept_apart), "speakers": len(ch), "refine_moved": moved, "after_refine": len(rf), "after_alike_merge": merged, "file_K": int(f["K"]),
            "dropped": merged - int(f["K"]),
            "online_speakers": int(o["K"]), **({"free_found": free_found} if n else {})}


def make_case(rec: dict, offset: int, steps: int, p: C.Params, num_speakers: int | None = None, note: str = "",
              stream_num_speakers: int | None = None) -> dict:
    from training.diarization import simulate as S
    assert offset % 6 == 0 and (p.hop_steps in (6, 12))
    levels = np.asarray(rec["levels"][offset:offset + steps], dtype=np.float64)
    speech = S.speech_steps(rec["turns"], len(rec["levels"]))[offset:offset + steps]
    win = C.embedded_windows(levels, p)  # a case's windows serve files and streams: no file speech gate here
    row = {int(s): i for i, s in enumerate(rec["starts"])}
    E = np.stack([rec["emb"][row[offset + int(j) * p.hop_steps]] for j in win]) if len(win) else np.zeros((0, 256))
    case = {"note": note, "source": f"{rec['meta']['key']} steps {offset}..{offset + steps}", "params": p.as_dict(),
            "steps": steps, "windows": [int(j) for j in win], "embedding_scale": SCALE,
            "embeddings": [[int(round(float(x) * SCALE)) for x in e] for e in E],
            "speech": "".join("1" if s else "0" for s in speech)}
    xw = C.sparse_windows(levels, p)
    if len(xw):
        case["sparse_windows"] = [int(j) for j in xw]
        case["sparse_embeddings"] = [[int(round(float(x) * SCALE)) for x in rec["emb"][row[offset + int(j) * p.hop_steps]]] for j in xw]
    if num_speakers is not None:
        case["num_speakers"] = num_speakers
    if stream_num_speakers is not None:
        case["stream_num_speakers"] = stream_num_speakers
    return finish_case(case)


def finish_case(case: dict) -> dict:
    f, o = expected(case)
    case["expected"] = {"file": {"K": int(f["K"]), "labels": [int(x) for x in f["labels"]]},
                        "stream": {"K": int(o["K"]), "labels": [int(x) for x in o["labels"]],
                                   "provisional": [int(x) for x in o["provisional"]]}}
    case["exercises"] = trace(case)
    return case


def check(case: dict) -> None:
    f, o = expected(case)
    assert int(f["K"]) == case["expected"]["file"]["K"], case["note"]
    assert [int(x) for x in f["labels"]] == case["expected"]["file"]["labels"], case["note"]
    assert int(o["K"]) == case["expected"]["stream"]["K"], case["note"]
    assert [int(x) for x in o["labels"]] == case["expected"]["stream"]["labels"], case["note"]
    assert [int(x) for x in o["provisional"]] == case["expected"]["stream"]["provisional"], case["note"]


def _search(recs, p, steps, want, num_speakers=None, stream_num_speakers=None):
    for rec in recs:
        for off in range(0, len(rec["levels"]) - steps, 48):
            case = make_case(rec, off, steps, p, num_speakers, stream_num_speakers=stream_num_speakers)
            if want(case["exercises"], case):
                return case
    raise SystemExit(f"no slice found for a golden case ({p}, {steps} steps)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default=None, help="the folder holding cache/ (default training/runs/diarization)")
    a = ap.parse_args()
    from training.diarization import validate as V
    if a.runs:
        V.RUNS = Path(a.runs)
    p = C.Params.from_manifest()
    recs = V.load(["speechocean", "nemo", "ravdess"], ["clean", "noise"])
    many = [r for r in recs if r["meta"]["speakers"] >= 3]
    cases = []
    def stepped(c):  # the stream's labels depend on online_threshold_step (the bar lowered per known speaker)
        flat = stream_of(c, replace(C.Params(**c["params"]), online_threshold_step=0.0))["labels"]
        return list(flat) != c["expected"]["stream"]["labels"]
    c = _search(many, p, 600, lambda x, c: x["file_K"] >= 3 and x["short_joined"] >= 1 and x["refine_moved"] > 0
                and x["clustered"] < x["windows"] and x["online_speakers"] >= 3 and stepped(c))
    c["note"] = f"hop {p.hop_steps}, the manifest's parameters: merges, short clusters joining a speaker, refine moving windows, 3+ speakers, windows not mostly speech not clustered; streams open new speakers, at a bar lowered per known speaker (labels differ without online_threshold_step)"
    cases.append(c)
    c = _search(many, p, 900, lambda x, c: x["after_alike_merge"] < x["after_refine"] and x["file_K"] >= 2)
    c["note"] = f"hop {p.hop_steps}, the manifest's parameters, no count: speakers the alike_merge rule calls one voice (their centroids of the whitened, uncentred windows and of the centred ones, their sizes) are merged after clustering (speakers 1.6.0)"
    cases.append(c)
    def rule_changes_labels(c, dropped):  # the file's labels differ with the alike_merge keys `dropped` left out
        p_, win, E, speech = case_inputs(c)
        rule = {k: v for k, v in p_.alike_merge.items() if k not in dropped}
        f = C.file_map(c["steps"], win, E, replace(p_, alike_merge=rule), speech=speech)
        return list(f["labels"]) != c["expected"]["file"]["labels"]
    c = _search(many, p, 900, lambda x, c: x["file_K"] >= 3 and x["kept_apart"] > 0
                and rule_changes_labels(c, {"keep_apart_below"}))
    c["note"] = f"hop {p.hop_steps}, the manifest's parameters, no count: the agglomeration keeps apart long clusters the alike_merge rule calls two voices (keep_apart_below; speakers 1.7.0), which changes the labels"
    cases.append(c)
    short_keys = {"short_speaker_min_s", "short_speaker_below"}
    if "short_speaker_below" in (p.alike_merge or {}):
        c = _search(many, p, 1200, lambda x, c: x["short_promoted"] > 0 and rule_changes_labels(c, short_keys))
        c["note"] = f"hop {p.hop_steps}, the manifest's parameters, no count: a cluster too short to be a speaker that the alike_merge rule calls another voice than every speaker (short_speaker_min_s, short_speaker_below; speakers 1.9.2) is a speaker too, which changes the labels"
        cases.append(c)
    c = _search(recs, p, 480, lambda x, c: x["file_K"] == 3 and x["long"] < 3 < x["after_agglomerate"]
                and x["refine_moved"] > 0 and x["clustered"] < x["windows"], num_speakers=3)
    c["note"] = f"hop {p.hop_steps}, the manifest's parameters, num_speakers 3 given: the count's long/short rule (agglomeration stops before merging two long clusters while no more long ones than the count; a short cluster kept up to the count), windows not mostly speech not clustered"
    cases.append(c)
    def merged_down(x, c):  # the count given: the free clustering merged down to it, not what merges stopping at it give
        p_, win, E, speech = case_inputs(c)
        f = C.file_map(c["steps"], win, E, p_, c["num_speakers"], speech=speech)
        Ea, w, n = f["centred"][f["clustered"]], win[f["clustered"]], c["num_speakers"]
        cl = C.Clusterer(Ea, p_)
        free = cl.choose_speakers(cl.agglomerate(cl.segments(w), None), n, None)
        stop = cl.choose_speakers(cl.agglomerate(cl.segments(w), n), p_.max_speakers, n)
        return x["free_found"] > n and cl.refine(free) != cl.refine(stop)
    c = _search(recs, p, 480, lambda x, c: x["refine_moved"] > 0 and merged_down(x, c), num_speakers=2)
    c["note"] = f"hop {p.hop_steps}, the manifest's parameters, num_speakers 2 given where the free clustering finds 3 or more speakers: they are merged down to the count (speakers 1.3.1)"
    cases.append(c)
    other = 12 if p.hop_steps == 6 else 6  # the other hop the cache holds, so both are golden-tested
    p3 = replace(p, hop_steps=other, max_speakers=3, center=False, merge_threshold=0.91)  # 0.91: tuned uncentred
    c = _search(recs, p3, 144, lambda x, c: x["windows"] < C.num_windows(144, other) and x["online_speakers"] >= 2
                and x["segments"] >= 3 and x["file_K"] >= 2 and "0" in c["speech"])
    c["note"] = f"hop {other}, max_speakers 3, center false (merge_threshold 0.91, the uncentred tuning): unvoiced windows not embedded (segments cut, steps without a covering window)"
    cases.append(c)
    two = [r for r in recs if r["meta"]["speakers"] == 2]

    def reclustered(x, c):  # the re-clustered stream gives other labels than OnlineSpeakers would, over 2 speakers
        plain = stream_of(c, C.Params(**c["params"]), max_speakers=2)["labels"]
        return x["windows"] >= p.recluster_min_windows + 3 * p.recluster_every and c["expected"]["stream"]["K"] == 2 \
            and list(plain) != c["expected"]["stream"]["labels"]
    c = _search(two, p, 720, reclustered, stream_num_speakers=2)
    c["note"] = f"hop {p.hop_steps}, the manifest's parameters, a stream given num_speakers 2: Reclustering (OnlineSpeakers for the first windows, then the recent windows clustered for 2 every recluster_every windows and mapped onto the ids already given)"
    cases.append(c)
    def freely_reclustered(x, c):  # a stream without a count re-clusters (free_recluster_min_windows), changing its labels
        online = stream_of(c, replace(C.Params(**c["params"]), free_recluster_min_windows=0))["labels"]
        return x["windows"] >= p.free_recluster_min_windows + 3 * (p.free_recluster_every or p.recluster_every) and x["online_speakers"] >= 2 \
            and list(online) != c["expected"]["stream"]["labels"]
    if p.free_recluster_min_windows > 0:
        c = _search(many, p, 1200, freely_reclustered)
        c["note"] = f"hop {p.hop_steps}, the manifest's parameters, a stream without a count: OnlineSpeakers for the first free_recluster_min_windows - 1 windows, then the recent windows clustered as a file's every free_recluster_every windows and mapped onto the ids already given (greedy; new ids for the rest; speakers 1.8.0, its own period since 1.8.1)"
        cases.append(c)
    a, b, m = [10000, 0, 0, 0], [0, 10000, 0, 0], [7071, 7071, 0, 0]
    ties = {"note": "synthetic 4-d ties: every window its own segment, equal merge candidates (lowest pair first), a window "
                    "equally close to two speakers (merges with / joins the lowest), streams' argmax ties; provisional answers "
                    "at once (provisional_lookahead_steps 0; the other cases: the manifest's)",
            "source": "synthetic", "params": replace(p, segment_threshold=2.0, merge_threshold=0.5, min_speaker_s=0.0,
                                                     min_speaker_share=1.0, refine_iterations=1, center=False,
                                                     provisional_lookahead_steps=0, whitening="",
                                                     alike_merge=None).as_dict(),
            "steps": 80, "windows": [0, 1, 2, 3, 4], "embedding_scale": SCALE, "embeddings": [a, b, a, b, m],
            "speech": "1" * 80}
    cases.append(finish_case(ties))
    quiet = {"note": "no window embedded: K 1, every step's probabilities [0], label 0", "source": "synthetic",
             "params": p.as_dict(), "steps": 30, "windows": [], "embedding_scale": SCALE, "embeddings": [],
             "speech": "0" * 10 + "1" * 20}
    cases.append(finish_case(quiet))
    doc = {"spec": "speaker map v1.1 (src/speakers/clustering.ts, file-map.ts; /work/speakers-spec.md section 2); "
                   "generated by python -m training diarization golden from training/diarization/cluster.py",
           "inputs": "embeddings: int / embedding_scale, as float32, normalised on input (pushWindow, live-map)",
           "labels": "0-based speaker index per step (argmax of the step probabilities, ties lowest), before the silence / no_speech rules",
           "cases": cases,
           # the matrices the cases are whitened by (models/speakers/<name>): a changed one needs a new fixture
           "whitening_sha256": {n: hashlib.sha256((C.MANIFEST.parent / n).read_bytes()).hexdigest()
                                for n in sorted({c["params"].get("whitening", "") for c in cases} - {""})}}
    # sparse windows (speakers 1.9.0) change some case's streams, provisional answers and finals, and reach the
    # free re-clustering and the count's re-clustering
    def sparse_changes(c, key):
        p_, n = C.Params(**c["params"]), c.get("stream_num_speakers")
        return list(stream_of(c, p_, num_speakers=n)[key]) != list(stream_of(c, p_, sparse=False, num_speakers=n)[key])
    for key in ("provisional", "labels"):
        assert any(sparse_changes(c, key) for c in cases), f"no case whose sparse windows change the stream's {key}"
    OUT.write_text(json.dumps(doc, separators=(",", ":")))
    for c in cases:
        check(c)
        print(c["note"], c["exercises"])
    print(f"wrote {OUT}: {OUT.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
