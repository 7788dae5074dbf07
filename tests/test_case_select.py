"""`--case` takes one glob or several, comma-separated, on the id or the suite/id key."""

from __future__ import annotations

from evalctl.cases.select import case_matches


def test_one_glob_matches_id_or_key() -> None:
    assert case_matches("k9s", "release-assets/k9s", "k9*")
    assert case_matches("k9s", "release-assets/k9s", "release-assets/*")
    assert not case_matches("k9s", "release-assets/k9s", "asset-triage/*")


def test_several_globs_select_their_union() -> None:
    pattern = "asset-triage/stern-*, release-assets/k9s"
    assert case_matches("stern-checksums", "asset-triage/stern-checksums", pattern)
    assert case_matches("k9s", "release-assets/k9s", pattern)
    assert not case_matches("helix", "release-assets/helix", pattern)
    assert not case_matches("x", "s/x", ",")
