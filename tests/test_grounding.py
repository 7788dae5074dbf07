"""The grounding primitive: names matched as whole normalised word sets, never substrings."""

from __future__ import annotations

import pytest

from evalctl.scoring.grounding import Names, mentions_value, name_words

RETURNED = ["Planeta Nero d'Avola", "Yellow Tail Shiraz", "Château Cantenac Brown Margaux"]
GENERIC = ["Nero d'Avola", "Shiraz", "Margaux", "Port", "Barolo", "Brut", "red"]


def names() -> Names:
    return Names(RETURNED, generic=GENERIC, extras={"Yellow Tail Shiraz": "Casella Family"})


def test_name_words_fold_case_accents_apostrophes_particles_and_aliases() -> None:
    assert name_words("Planeta Nero d\u2019Avola") == ("planeta", "nero", "avola")
    assert name_words("Stag's Leap") == ("stag", "leap")
    assert name_words("St. Émilion & Co") == ("saint", "emilion", "co")
    assert name_words("Castello di Ama") == ("castello", "ama")


@pytest.mark.parametrize(
    ("mention", "expected"),
    [
        ("Planeta Nero d'Avola", "Planeta Nero d'Avola"),
        ("nero d'avola planeta", "Planeta Nero d'Avola"),  # reordered
        ("Planeta Nero d'Avola 2021", "Planeta Nero d'Avola"),  # a vintage added
        ("Planeta", "Planeta Nero d'Avola"),  # shortened, still one wine
        ("Casella Family Yellow Tail Shiraz", "Yellow Tail Shiraz"),  # its producer added
        ("Chateau Cantenac-Brown", "Château Cantenac Brown Margaux"),
        ("Fake Estate Planeta Nero d'Avola", None),  # other words: another name
        ("Nero d'Avola", None),  # a grape, not a wine
        ("Brut", None),
        ("Plan", None),  # never a substring
    ],
)
def test_lookup(mention: str, expected: str | None) -> None:
    assert names().lookup(mention) == expected


def test_citation_says_why_not() -> None:
    assert names().cite("Port", what="wine").reason == "'Port' is a generic term, not a wine"
    assert names().cite("Opus One").reason == "'Opus One' matches no name a tool call returned"


def test_prose_mentions_need_the_distinctive_words_together() -> None:
    text = "For under $20 I would pick the Planeta Nero d'Avola; the Yellow Tail is fine too."
    assert names().named_in(text) == ["Planeta Nero d'Avola", "Yellow Tail Shiraz"]
    # The words far apart do not name the wine.
    assert names().named_in("Yellow is the bright colour of sun; any tail wags.") == []


def test_numbers_in_a_name_do_not_make_a_prose_mention() -> None:
    tokaji = Names(["Royal Tokaji 5 Puttonyos Aszu"], generic=["Tokaji", "Puttonyos", "Aszu"])
    assert tokaji.named_in("Five royal reasons: 5 of them.") == ["Royal Tokaji 5 Puttonyos Aszu"]
    assert tokaji.named_in("I have 5 bottles of red.") == []


def test_mentions_value_matches_whole_words_and_numbers() -> None:
    assert mentions_value("It costs 21 dollars in Paris.", {"price": 21.0, "city": "paris"})
    assert not mentions_value("It costs 210 dollars.", 21)
    assert not mentions_value("Parisian prices", "Paris")
    assert mentions_value("Leap of the Stag", "Stag's Leap")
    assert not mentions_value("anything", None)


def test_terms_overlap_needs_a_stem_of_four_letters_for_a_prefix() -> None:
    from evalctl.suites.sommelier.catalog_words import terms_overlap

    assert terms_overlap(["light"], ["li"]) == []  # "li" says nothing
    assert terms_overlap(["light"], ["lig"]) == []
    assert terms_overlap(["spicy"], ["spice"]) == ["spicy"]  # the same stem
    assert terms_overlap(["seafood"], ["sea"]) == []
    assert terms_overlap(["fish"], ["fishy"]) == ["fish"]
    assert terms_overlap(["red"], ["red"]) == ["red"]  # a short word still equals itself
