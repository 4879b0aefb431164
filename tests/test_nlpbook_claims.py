import json

import pytest

from nlpbook import claims


@pytest.mark.parametrize("profile", ["standard", "full"])
def test_a_false_claim_stops_the_page_with_the_sentence_and_the_figures(monkeypatch, profile):
    monkeypatch.setenv("NLPBOOK_PROFILE", profile)
    with pytest.raises(claims.ClaimError, match=rf'"the LSTM wins", which does not hold in the {profile} '
                                                r"profile \(lstm = 4\.63, rnn = 4\.5\)"):
        claims.claim(4.63 < 4.5, "the LSTM wins", lstm=4.63, rnn=4.5)
    assert claims.CLAIMS[-1].status == "FAILED"


def test_a_true_claim_is_recorded_as_held_and_prints_nothing(monkeypatch):
    monkeypatch.setenv("NLPBOOK_PROFILE", "standard")
    # A cell that ends with a claim would print what it returned under the code.
    assert claims.claim(True, "attention helps", gap=3.0) is None
    assert claims.CLAIMS[-1].status == "held" and claims.CLAIMS[-1].figures == {"gap": 3.0}


@pytest.mark.parametrize("condition", [True, False])
def test_in_quick_a_claim_is_recorded_unchecked_and_never_stops_the_page(monkeypatch, condition):
    monkeypatch.setenv("NLPBOOK_PROFILE", "quick")
    claims.claim(condition, "the Transformer wins")
    assert claims.CLAIMS[-1].status == "unchecked" and claims.CLAIMS[-1].held is condition


def test_every_claim_goes_to_the_log_when_one_is_named(monkeypatch, tmp_path):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(claims.LOG_VARIABLE, str(log))
    monkeypatch.setenv("NLPBOOK_PROFILE", "quick")
    (tmp_path / "05-transformers").mkdir()
    monkeypatch.chdir(tmp_path / "05-transformers")  # a book build runs each page in its chapter's folder
    claims.claim(True, "first", x=1)
    monkeypatch.setenv("NLPBOOK_PROFILE", "standard")
    with pytest.raises(claims.ClaimError):
        claims.claim(False, "second")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["statement"], r["status"], r["profile"]) for r in lines] == [
        ("first", "unchecked", "quick"), ("second", "FAILED", "standard")]
    assert lines[0]["figures"] == {"x": 1.0}
    assert lines[0]["where"] == lines[1]["where"] == "05-transformers"  # the claims report's chapter column


def test_choose_words_picks_the_wording_of_the_result():
    assert claims.choose_words(3 > 2, "ahead", "behind") == "ahead"
    assert claims.choose_words(1 > 2, "ahead", "behind") == "behind"


def test_listed_joins_items_as_a_sentence_does():
    assert claims.listed(["the RNN"]) == "the RNN"
    assert claims.listed(["the RNN", "the LSTM"]) == "the RNN and the LSTM"
    assert claims.listed(iter(["a", "b", "c"])) == "a, b and c"
    with pytest.raises(ValueError):
        claims.listed([])


def test_counted_agrees_in_number():
    assert claims.counted(1, "seed") == "1 seed"
    assert claims.counted(3, "seed") == "3 seeds"
    assert claims.counted(0, "epoch") == "0 epochs"
    assert claims.counted(2, "analysis", "analyses") == "2 analyses"


def test_agreement_says_exactly_only_for_a_zero_difference():
    import nlpbook

    assert nlpbook.agreement(0.0) == "exactly"
    assert nlpbook.agreement(3.0e-7) == "to within 3e-07"
    assert nlpbook.agreement(2.4e-7) == "to within 3e-07"  # a bound: rounded up
    assert nlpbook.agreement(9.6e-5) == "to within 1e-04"
    with pytest.raises(ValueError, match="a size"):
        nlpbook.agreement(-1e-9)
