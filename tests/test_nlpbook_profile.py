import pytest

from nlpbook.profile import PROFILES, choose, current_profile


def test_default_profile_is_standard(monkeypatch):
    monkeypatch.delenv("NLPBOOK_PROFILE", raising=False)
    assert current_profile() == "standard"


@pytest.mark.parametrize("profile", PROFILES)
def test_choose_follows_the_profile(monkeypatch, profile):
    monkeypatch.setenv("NLPBOOK_PROFILE", profile.upper())
    assert current_profile() == profile
    assert choose(quick=1, standard=2, full=3) == {"quick": 1, "standard": 2, "full": 3}[profile]


def test_full_falls_back_to_standard(monkeypatch):
    monkeypatch.setenv("NLPBOOK_PROFILE", "full")
    assert choose(quick=1, standard=2) == 2


def test_unknown_profile_names_the_variable_and_the_choices(monkeypatch):
    monkeypatch.setenv("NLPBOOK_PROFILE", "fast")
    with pytest.raises(ValueError, match=r"NLPBOOK_PROFILE is 'fast'; expected one of quick, standard, full"):
        current_profile()
