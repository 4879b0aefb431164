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


@pytest.mark.parametrize("profile", PROFILES)
def test_settings_missing_a_key_in_any_profile_fail_in_every_profile(monkeypatch, profile):
    # a key forgotten in full must fail the quick run too, not only the GPU run
    monkeypatch.setenv("NLPBOOK_PROFILE", profile)
    with pytest.raises(ValueError, match=r"differ in their keys \(full lacks 'seeds'\)"):
        choose(quick=dict(steps=1, seeds=[0]), standard=dict(steps=2, seeds=[0, 1]), full=dict(steps=3))
    # two profiles given as settings (full left to fall back on standard) are compared too
    with pytest.raises(ValueError, match=r"differ in their keys \(standard lacks 'seeds'\)"):
        choose(quick=dict(steps=1, seeds=[0]), standard=dict(steps=2))


def test_settings_with_the_same_keys_pass_and_non_dicts_are_not_compared(monkeypatch):
    monkeypatch.setenv("NLPBOOK_PROFILE", "quick")
    assert choose(quick=dict(steps=1), standard=dict(steps=2), full=dict(steps=3)) == {"steps": 1}
    assert choose(quick=dict(steps=1), standard=dict(steps=2)) == {"steps": 1}
    assert choose(quick=None, standard=dict(steps=2), full=3) is None
