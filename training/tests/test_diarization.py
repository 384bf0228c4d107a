"""Speaker map reference (training/diarization): DER on hand-made cases, the clustering rules on tiny synthetic
embeddings, the golden fixture reproduced."""
import json
import os

import numpy as np
import pytest

from training.diarization import cluster as C
from training.diarization.der import der, steps_to_turns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ------------------------------------------------------------------ DER
def test_der_perfect_and_renamed():
    ref = [("a", 0, 10), ("b", 10, 20)]
    assert der(ref, ref)["der"] == 0
    r = der(ref, [("x", 0, 10), ("y", 10, 20)])
    assert r["der"] == 0 and r["mapping"] == {"x": "a", "y": "b"}


def test_der_confusion_miss_fa_with_collar():
    ref = [("a", 0, 10), ("b", 10, 20)]
    # hyp gives all 20 s to one speaker: b's 10 s confused, minus collars (0.25 s around 0, 10, 20)
    r = der(ref, [("x", 0, 20)])
    scored_b = 10 - 0.25 - 0.25
    total = 20 - 0.25 - 0.5 - 0.25
    assert r["conf"] == pytest.approx(scored_b, abs=0.011)
    assert r["total"] == pytest.approx(total, abs=0.011)
    # miss: hyp covers 0-5 only
    r = der([("a", 0, 10)], [("x", 0, 5)])
    assert r["miss"] == pytest.approx(10 - 5 - 0.25, abs=0.011) and r["fa"] == 0 and r["conf"] == 0
    # false alarm after the reference ends (outside the collar)
    r = der([("a", 0, 10)], [("x", 0, 12)])
    assert r["fa"] == pytest.approx(2 - 0.25, abs=0.011) and r["der"] == pytest.approx(1.75 / 9.5, abs=2e-3)  # scored a: 0.25-9.75


def test_der_overlap_counts_each_speaker():
    ref = [("a", 0, 10), ("b", 5, 15)]  # 5 s of overlap
    r = der(ref, [("x", 0, 10), ("y", 10, 15)])
    # scored: ref a 0.25-4.75 + 5.25-9.75, b 5.25-9.75 + 10.25-14.75; b is missed in the overlap (4.5 s)
    assert r["total"] == pytest.approx(4.5 * 4, abs=0.02)
    assert r["miss"] == pytest.approx(4.5, abs=0.02) and r["conf"] == 0 and r["fa"] == 0


def test_der_hungarian_is_one_to_one():
    ref = [("a", 0, 10), ("b", 10, 14), ("a", 14, 20)]
    hyp = [("x", 0, 10), ("x", 10, 14), ("y", 14, 20)]
    r = der(ref, hyp)
    assert r["mapping"] == {"x": "a", "y": "b"} or r["mapping"] == {"x": "a"}
    # x->a: 10 s correct; b (4 s) and the last a (6 s) confused: conf = scored 10-14 + 14-20
    assert r["conf"] == pytest.approx((4 - 0.5) + (6 - 0.5), abs=0.02)


def test_steps_to_turns():
    t = steps_to_turns([0, 0, 1, 1, 1, 0], [True, True, True, False, True, True], step_s=1.0)
    assert t == [(0, 0, 2), (1, 2, 3), (1, 4, 5), (0, 5, 6)]


# ------------------------------------------------------------------ clustering rules
def _two_speakers(rng, n_a=30, n_b=30, noise=0.15):
    a, b = C.normalise(rng.standard_normal(256)), C.normalise(rng.standard_normal(256))
    E = [C.normalise(a + noise * rng.standard_normal(256) / 16) for _ in range(n_a)]
    E += [C.normalise(b + noise * rng.standard_normal(256) / 16) for _ in range(n_b)]
    return np.stack(E)


def test_file_two_speakers_and_numbering():
    rng = np.random.default_rng(0)
    E = _two_speakers(rng)
    p = C.Params(hop_steps=6, min_voiced_steps=8, segment_threshold=0.9, merge_threshold=0.6, refine_iterations=2,
                 min_speaker_s=2.0, temperature=10.0, online_threshold=0.6, center=False)
    S = 60 * 6 + 19
    r = C.file_map(S, np.arange(60), E, p)
    assert r["K"] == 2
    assert r["labels"][0] == 0 and r["labels"][-1] == 1
    assert np.allclose(r["probs"].sum(1), 1, atol=1e-6) and r["probs"].dtype == np.float32
    o = C.stream_map(S, np.arange(60), E, p)
    assert o["K"] == 2 and o["labels"][0] == 0 and o["labels"][-1] == 1 and o["probs"].shape[1] == p.max_speakers


def test_short_clusters_join_and_count_rule():
    rng = np.random.default_rng(1)
    E = _two_speakers(rng, 40, 3)  # b: 3 windows = 3 * 6 * 0.064 = 1.15 s
    p = C.Params(hop_steps=6, segment_threshold=0.9, merge_threshold=0.6, refine_iterations=0, min_speaker_s=2.0,
                 min_speaker_share=1.0, center=False)
    win = np.arange(43)
    K, a, _ = C.cluster_windows(win, E, p, 10)
    assert K == 1 and (a == 0).all()  # b is short: its windows join a
    K, a, _ = C.cluster_windows(win, E, p, 10, num_speakers=2)
    assert K == 2 and list(a[40:]) == [1, 1, 1]  # the count keeps the longest clusters up to it
    K, _, _ = C.cluster_windows(win, E, p, 10, num_speakers=1)
    assert K == 1
    # min_speaker_share: 3 of 43 windows is 7 %, a speaker at a share of 5 %
    K, _, _ = C.cluster_windows(win, E, C.Params(**{**p.as_dict(), "min_speaker_share": 0.05}), 10)
    assert K == 2
    # the cap merges the kept speakers
    K, _, _ = C.cluster_windows(win, E, C.Params(**{**p.as_dict(), "min_speaker_s": 0.0}), 1)
    assert K == 1


def test_exact_arithmetic_and_ties():
    v = np.array([0.1, 0.2, 0.3, 1e-17, -0.7])
    s = 0.0
    for x in v:
        s += x * x
    assert C.normalise(v).tolist() == (v * (1 / np.sqrt(s))).tolist()  # sequential sum, times the reciprocal
    assert C.dot(v, v) == s
    E = C.normalise(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]))
    p = C.Params(hop_steps=12, segment_threshold=2.0, merge_threshold=0.5, refine_iterations=1, min_speaker_s=0.0,
                 center=False)
    K, a, _ = C.cluster_windows(np.arange(4), E, p, 10)  # four segments, ties merge the lowest pair first
    assert K == 2 and list(a) == [0, 0, 1, 1]
    pr = C.step_probs(30, np.array([0, 1]), np.array([[0.5, 0.5], [0.5, 0.5]]), 12, 2, True)
    assert (C.labels_of(pr) == 0).all()  # ties: the lowest speaker


def test_centring_and_speech_gating():
    rng = np.random.default_rng(4)
    E = _two_speakers(rng, 20, 20)
    p = C.Params(hop_steps=6, segment_threshold=0.9, merge_threshold=0.3, min_speaker_s=1.0)
    S = 40 * 6 + 19
    speech = np.ones(S, dtype=bool)
    speech[:60] = False  # windows 0-7 are mostly not speech: not clustered, still given probabilities
    r = C.file_map(S, np.arange(40), E, p, speech=speech)
    assert list(r["clustered"]) == list(range(8, 40)) and r["K"] == 2
    Ec = C.centred(C.normalise(E), np.arange(40))
    assert np.allclose(np.linalg.norm(Ec, axis=1), 1) and abs(float(Ec.mean(0) @ Ec.mean(0))) < 1e-3
    assert C.Params.from_manifest().as_dict().keys() == C.Params().as_dict().keys()


def test_stream_confirm_variant_off_by_default():
    rng = np.random.default_rng(3)
    E = C.normalise(np.concatenate([_two_speakers(rng, 20, 20), _two_speakers(rng, 4, 0)]))
    p = C.Params(hop_steps=6, segment_threshold=0.9, merge_threshold=0.6, refine_iterations=2, min_speaker_s=1.0)
    k1, P1 = C.online_assign(E, p)
    k2, P2 = C.online_assign(E, p, confirm=1)
    assert (k1 == k2).all() and np.array_equal(P1, P2)
    k3, _ = C.online_assign(E, p, confirm=3)
    assert k3.max() <= k1.max()


def test_segments_need_adjacent_windows():
    E = C.normalise(np.ones((3, 4)))
    assert C.Clusterer(E, C.Params(segment_threshold=0.5)).segments(np.array([0, 1, 3])) == [[0, 1], [2]]


def test_windows_and_step_rules():
    levels = np.array([-60.0] * 10 + [-30.0] * 30 + [-60.0] * 12)
    p = C.Params(hop_steps=12, min_voiced_steps=8)
    assert C.num_windows(52, 12) == 5
    assert list(C.voiced_counts(levels, 12, -50)) == [15, 25, 16, 4, 0]
    assert list(C.embedded_windows(levels, p)) == [0, 1, 2]
    P = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    f = C.step_probs(52, np.array([1, 2]), P[1:], 12, 2, look_ahead=True)
    assert np.allclose(f[0], P[1])          # before any window: the first embedded one (files)
    s = C.step_probs(52, np.array([1, 2]), P[1:], 12, 2, look_ahead=False)
    assert np.allclose(s[0], 0)             # streams: zeros
    assert np.allclose(f[30], (P[1] + P[2]) / 2)
    assert np.allclose(f[51], P[2])         # after the last window: the latest one
    r = C.file_map(5, np.array([], int), np.zeros((0, 256)), p)
    assert r["K"] == 1 and np.all(r["probs"] == 0) and r["probs"].shape == (5, 1)


def test_online_new_speaker_and_cap():
    rng = np.random.default_rng(2)
    E = _two_speakers(rng, 5, 5)
    p = C.Params(online_threshold=0.6, max_speakers=10)
    k, P = C.online_assign(E, p)
    assert list(k) == [0] * 5 + [1] * 5
    assert P[0, 0] == 1 and P[5, :2].sum() == pytest.approx(1)
    k, _ = C.online_assign(E, C.Params(online_threshold=0.6, max_speakers=1))
    assert list(k) == [0] * 10


def test_sparse_windows_are_scored_not_assigned():
    """Streams' sparse windows (speakers 1.9.0): fewer voiced steps than min_voiced_steps, at least
    sparse_min_voiced_steps; each scored by the speakers as they stand, counting in the steps it covers."""
    levels = np.array([-30.0] * 40 + [-60.0] * 10 + [-30.0] * 40 + [-60.0] * 20)  # voice a, a pause, voice b, silence
    p = C.Params(hop_steps=6, min_voiced_steps=12, sparse_min_voiced_steps=4, online_threshold=0.6, temperature=30.0,
                 provisional_lookahead_steps=5)
    counts = C.voiced_counts(levels, 6, -50)
    win, sparse = C.embedded_windows(levels, p), C.sparse_windows(levels, p)
    assert list(win) == [j for j, c in enumerate(counts) if c >= 12]
    assert list(sparse) == [j for j, c in enumerate(counts) if 4 <= c < 12] == [14]  # b's last steps
    assert len(C.sparse_windows(levels, C.Params(hop_steps=6, min_voiced_steps=12))) == 0  # 0: none
    rng = np.random.default_rng(3)
    a, b = C.normalise(rng.standard_normal(256)), C.normalise(rng.standard_normal(256))
    E = np.stack([a if j * 6 + 12 < 45 else b for j in win])  # each window the voice of its middle
    X = np.stack([a for _ in sparse])  # voice a again after b's turn: scored, never opening or moving a speaker
    steps = len(levels)
    plain = C.stream_map(steps, win, E, p)
    with_sparse = C.stream_map(steps, win, E, p, sparse_win=sparse, sparse_E=X)
    assert with_sparse["K"] == plain["K"] == 2 and list(with_sparse["assigned"]) == list(plain["assigned"])
    # the last steps are covered by the last sparse window alone: its vector (voice a: speaker 0); without it, the
    # latest window's (voice b: speaker 1); the provisional answers follow the same windows
    s = int(sparse[-1]) * 6 + 24
    assert s < steps and not any(j * 6 <= s < j * 6 + 25 for j in win)
    assert plain["labels"][s] == 1 and with_sparse["labels"][s] == 0
    assert plain["provisional"][s] == 1 and with_sparse["provisional"][s] == 0


# ------------------------------------------------------------------ golden fixture
GOLDEN = os.path.join(ROOT, "test", "fixtures", "speakers_golden.json")


@pytest.mark.skipif(not os.path.exists(GOLDEN), reason="no golden fixture yet")
def test_golden_reproduced():
    from training.diarization.golden import check
    cases = json.load(open(GOLDEN))["cases"]
    assert len(cases) >= 4 and any("num_speakers" in c for c in cases)
    for case in cases:
        check(case)


def test_reference_turns_split_at_their_own_pauses():
    """simulate.speaking_spans: pauses of PAUSE_S or more split a turn, shorter ones are bridged, silence at the
    ends is no speech."""
    import numpy as np
    from training.diarization import simulate as S
    sr = S.SR
    x = np.zeros(3 * sr, np.float32)
    tone = lambda a, b: 0.1 * np.sin(np.arange(int(a * sr), int(b * sr)) * 0.3)
    x[int(0.1 * sr):int(0.5 * sr)] = tone(0.1, 0.5)
    x[int(0.7 * sr):int(1.1 * sr)] = tone(0.7, 1.1)    # 0.2 s pause: bridged
    x[int(1.9 * sr):int(2.5 * sr)] = tone(1.9, 2.5)    # 0.8 s pause: split
    spans = S.speaking_spans(x)
    assert len(spans) == 2
    (a0, b0), (a1, b1) = spans
    assert abs(a0 - 0.1) < 0.03 and abs(b0 - 1.1) < 0.04 and abs(a1 - 1.9) < 0.03 and abs(b1 - 2.5) < 0.04


# ------------------------------------------------------------------ each speaker's gender (speaker_gender.py)
def test_speaker_gender_pools_each_speakers_windows():
    from training.diarization import speaker_gender as SG
    # two voices along axes 0 and 1; the head says male along axis 0
    rng = np.random.default_rng(0)
    E = np.concatenate([np.eye(4)[[0] * 6] + 0.05 * rng.standard_normal((6, 4)), np.eye(4)[[1] * 6] + 0.05 * rng.standard_normal((6, 4))])
    E = C.normalise(E)
    win = np.arange(12)
    p = C.Params(hop_steps=12, segment_threshold=0.8, merge_threshold=0.5, min_speaker_s=1.0, min_speaker_share=0.05,
                 refine_iterations=0, center=False)
    res = C.file_map(12 * 12 + 25, win, E, p, speech=np.ones(12 * 12 + 25, dtype=bool))
    assert res["K"] == 2
    assign = SG.file_assignment(res)
    assert assign.tolist() == [0] * 6 + [1] * 6
    coef, bias = np.array([3.0, -3.0, 0.0, 0.0]), 0.0
    z = SG.speaker_log_odds(res["embeddings"][res["clustered"]], assign, 2, coef, bias)
    assert z[0] > 2 and z[1] < -2  # speaker 1 male, speaker 2 female
    # the mean of the windows' log-odds (the head is linear)
    assert z[0] == pytest.approx(float(np.mean(E[:6] @ coef)), abs=1e-9)
    assert SG.speaker_log_odds(E, np.zeros(12, dtype=int), 3, coef, bias)[1:] == [None, None]


# ------------------------------------------------------------------ files' alike merge (merge_rule.py, speakers 1.6.0)
def _rule(**w):
    return {"bias": 0.0, **{n: 0.0 for n in C.PAIR_FEATURES}, "min_probability": 0.5, "max_windows": 100, **w}


def test_merge_alike_joins_through_another_speaker_and_orders_by_first_window():
    e = np.eye(4)
    # speakers 0 and 2 apart, 1 between them, 3 elsewhere: whitened cosines 0~1 0.8, 1~2 0.6, 0~2 0
    W = np.array([e[0], e[0], 0.8 * e[0] + 0.6 * e[1], e[1], e[1], e[2]])
    assignment = np.array([0, 0, 1, 2, 2, 3])
    cents = C.merge_alike(assignment, 4, W, W, _rule(bias=-0.5, whitened_cosine=1.0))
    assert len(cents) == 2  # 0, 1, 2 one through speaker 1; 3 alone, after them
    np.testing.assert_allclose(cents[1], e[2])
    # sizes: the larger speaker's log size (2 windows) pulls both merges under the bar
    assert len(C.merge_alike(assignment, 4, W, W, _rule(bias=-0.5, whitened_cosine=1.0, log_more_windows=-1.0))) == 4
    # sizes count up to max_windows: at 1 every log size is 0
    assert len(C.merge_alike(assignment, 4, W, W, _rule(bias=-0.5, whitened_cosine=1.0, log_more_windows=-1.0, max_windows=1))) == 2
    # the compared view's cosine counts too
    assert len(C.merge_alike(assignment, 4, W, W, _rule(bias=-0.5, centred_cosine=1.0))) == 2


def _a_b_a(b: np.ndarray, min_speaker_s: float):
    """Three runs of 5 windows (3.8 s each at hop 12), voices A, B, A: clustered view A = (1, 0.1, 0, 0) and the unit
    `b`; second view A on axis 2, B on axis 3 -> (E, V, win, params)."""
    a = C.normalise(np.array([1.0, 0.1, 0, 0]))
    E = np.array([a] * 5 + [C.normalise(b)] * 5 + [a] * 5)
    V = np.array([np.eye(4)[2]] * 5 + [np.eye(4)[3]] * 5 + [np.eye(4)[2]] * 5)
    win = np.array([*range(0, 5), *range(10, 15), *range(20, 25)])
    p = C.Params(hop_steps=12, segment_threshold=0.8, merge_threshold=0.7, refine_iterations=2,
                 min_speaker_s=min_speaker_s, min_speaker_share=1.0, center=False)
    return E, V, win, p


def test_keep_apart_skips_long_pairs_the_rule_calls_two_voices():
    # clustered view: A and B alike (cosine 0.92); second view apart
    E, V, win, p = _a_b_a(np.array([1.0, -0.3, 0, 0]), 2.0)
    rule = _rule(bias=-0.5, whitened_cosine=1.0, keep_apart_below=0.4)  # two voices: logit -0.5 < logit(0.4)
    assert C.cluster_windows(win, E, p, 10)[0] == 1
    assert C.cluster_windows(win, E, p, 10, V=V)[0] == 1  # the rule is p's: none here
    K, assignment, _ = C.cluster_windows(win, E, C.Params(**{**p.as_dict(), "alike_merge": rule}), 10, V=V)
    assert K == 2 and list(assignment) == [0] * 5 + [1] * 5 + [0] * 5  # A's two runs still merge
    short = C.Params(**{**p.as_dict(), "alike_merge": rule, "min_speaker_s": 10.0})
    assert C.cluster_windows(win, E, short, 10, V=V)[0] == 1  # too short to be speakers: merged anyway
    assert C.cluster_windows(win, E, C.Params(**{**p.as_dict(), "alike_merge": rule}), 10, 1, V)[0] == 1  # a count


def test_short_cluster_the_rule_calls_another_voice_is_a_speaker():
    # speakers 1.9.2: C (5 windows, 3.8 s, under min_speaker_s 5) stays its own cluster (cosine 0.36 to A); second
    # view: A on axis 2, C on axis 3, logit -0.5 (probability 0.38 of one voice)
    E, V, win, p = _a_b_a(np.array([0.5, -1.0, 0, 0]), 5.0)
    with_rule = lambda **kw: C.Params(**{**p.as_dict(), "alike_merge": _rule(bias=-0.5, whitened_cosine=1.0,  # noqa: E731
                                                                             keep_apart_below=0.4, **kw)})
    assert C.cluster_windows(win, E, with_rule(), 10, V=V)[0] == 1  # no short-speaker rule: C joins A
    K, assignment, _ = C.cluster_windows(win, E, with_rule(short_speaker_min_s=2.0, short_speaker_below=0.45), 10, V=V)
    assert K == 2 and list(assignment) == [0] * 5 + [1] * 5 + [0] * 5
    assert C.cluster_windows(win, E, with_rule(short_speaker_min_s=2.0, short_speaker_below=0.3), 10, V=V)[0] == 1
    assert C.cluster_windows(win, E, with_rule(short_speaker_min_s=4.0, short_speaker_below=0.45), 10, V=V)[0] == 1
    assert C.cluster_windows(win, E, with_rule(short_speaker_min_s=2.0, short_speaker_below=0.45), 10, 1, V)[0] == 1


def test_service_speech_replaces_the_oracle(tmp_path):
    from training.diarization import service_speech as SS
    recs = [{"meta": {"key": "x-clean-2spk-0"}, "levels": np.zeros(6), "speech": np.ones(6, dtype=bool)}]
    (tmp_path / "x-clean-2spk-0.txt").write_text("0110\n")  # shorter than the conversation: the rest not speech
    out = SS.load_into(recs, tmp_path)
    assert list(out[0]["speech"]) == [False, True, True, False, False, False]
    assert out[0]["oracle_speech"].all()
    with pytest.raises(SystemExit, match="no service speech for 1 conversations"):
        SS.load_into([{"meta": {"key": "y"}, "levels": np.zeros(3), "speech": np.ones(3, dtype=bool)}], tmp_path)
    assert SS.folder(tmp_path, -60.0).name == "service_speech-60"


def test_whitened_centroids_follow_the_compared_view():
    e = np.eye(4)
    cents = np.array([e[0], e[1], e[2]])  # speaker 2: no window is closest to it
    Ec = np.array([e[0], e[0], e[1], C.normalise(e[0] + e[1])])  # the last: a tie, the lower speaker
    Wc = np.array([e[3], C.normalise(e[3] + e[2]), e[1], e[2]])
    W = C.whitened_centroids(cents, Ec, Wc)
    np.testing.assert_allclose(W[0], C.normalise(e[3] + C.normalise(e[3] + e[2]) + e[2]))
    np.testing.assert_allclose(W[1], e[1])
    assert not W[2].any()


def test_logistic_fit_is_the_penalised_optimum():
    from training.diarization import merge_rule as R
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = (X @ np.array([2.0, -1.0, 0.0]) + 0.5 + rng.normal(size=400) > 0).astype(float)
    bias, w = R.fit_logistic(X, y, c=10.0)
    q = 1 / (1 + np.exp(-(bias + X @ w)))
    assert abs(float(np.sum(q - y))) < 1e-8  # the bias is not penalised
    np.testing.assert_allclose(X.T @ (q - y) + w / 10.0, 0, atol=1e-8)
    assert w[0] > 1 and w[1] < -0.5 and abs(w[2]) < 0.3


def test_window_voices_take_the_voice_speaking_most():
    from training.diarization import merge_rule as R
    rec = {"levels": np.zeros(200), "turns": [("b", 0.0, 1.0), ("a", 1.0, 6.4)]}  # b: steps 0-15, a: 15-100
    # windows of 25 steps from 0, 6, 12, 90, 180: b 16 vs a 10, then a, a, a alone, nobody
    assert R.window_voices(rec, np.array([0, 1, 2, 15, 30]), 6).tolist() == [1, 0, 0, 0, -1]


def test_speech_gate_matches_the_stage():
    """The speaker map's file speech gate (an option since session 40), the case of test/inference/encoder-views.test.ts: hop 6, music
    in steps 30-59 (voiced, not speech), a silent pause 90-113; at most 6 of a window's first 13 steps voiced yet not
    speech. Windows 4-8 start in the music and are not embedded; window 16 (silent first steps) is a sparse window, as are
    14 (the voice before the pause) and 21 (the last, 4 steps)."""
    steps = 130
    levels = np.array([-20.0 if s < 90 or s >= 114 else -90.0 for s in range(steps)])
    speech = np.array([0 if 30 <= s < 60 or 90 <= s < 114 else 1 for s in range(steps)])
    gate = {"steps": 13, "min_speech_steps": 0, "max_non_speech_steps": 6}
    p = C.Params(hop_steps=6, min_voiced_steps=8, sparse_min_voiced_steps=4, gate_db=-50, file_speech_gate=gate)
    win = set(C.embedded_windows(levels, p, speech, p.file_speech_gate))
    passed = C.gate_passes(levels, p, speech, gate)
    sparse = {int(j) for j in C.sparse_windows(levels, p) if passed[j]}  # the stage's sparse windows under that gate
    assert not win & {4, 5, 6, 7, 8} and {3, 9, 17} <= win and 15 not in win | sparse and sparse == {14, 16, 21}
    ungated = set(C.embedded_windows(levels, p))  # a stream's: no gate
    assert ungated - win == {4, 5, 6, 7, 8}
    try:
        C.embedded_windows(levels, p, None, gate)
        raise AssertionError("a gated schedule without speech decisions must fail")
    except ValueError:
        pass
