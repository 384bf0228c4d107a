"""The gender label audit: a label is doubted only when pitch, the network and the speaker view all disagree."""
from training.encoders import label_audit as A


def speaker(label, f0, net, view, source="x"):
    return {"source": source, "label": label, "clips": 4, "median_f0_hz": f0, "net_p_male": net, "view_p_male": view}


def test_all_three_witnesses_are_needed():
    ev = {
        "m_sounds_female": speaker("male", 230.0, 0.05, 0.04),
        "f_sounds_male": speaker("female", 110.0, 0.9, 0.95),
        "shouting_man": speaker("male", 260.0, 0.2, 0.7),       # high pitch, one model unsure: kept
        "models_only": speaker("female", 200.0, 0.9, 0.9),       # pitch agrees with the label: kept
        "pitch_unknown": speaker("male", float("nan"), 0.1, 0.1),
        "ordinary": speaker("female", 210.0, 0.1, 0.05),
    }
    report = A.audit(ev)
    assert sorted(report["suspect"]) == ["f_sounds_male", "m_sounds_female"]
    assert report["each_witness_alone_against"] == {"pitch": 3, "network": 5, "speaker view": 4}
    assert report["per_source"]["x"] == {"speakers": 6, "suspect": 2}


def test_committed_audit_names_only_speakers_the_rule_doubts():
    import json
    report = json.loads(A.OUT.read_text())
    for s, e in report["suspect"].items():
        assert all(A.witnesses_against(e).values()), s
