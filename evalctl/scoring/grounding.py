"""Grounding: does an answer name only things that tool calls of this case returned?

The primitive behind the sommelier's `grounding` check and the `cites-tool-result`
assertion. It matches *names*, not substrings: a name becomes a set of normalised words
(accents and case folded, elided articles and possessives dropped, `St.` read as `saint`
through an alias table, particles such as `di`/`de`/`the` ignored), and two names match when
their word sets are equal, whatever the order. Substring matching got both directions wrong:
"Fake Estate Tignanello Reserve" contains "Tignanello" (an invented wine passed), while
"Nero d'Avola Planeta" does not contain "Planeta Nero d'Avola" (a real one failed).

Three rules decide what counts:
- a *marked* name (the answer said "this is a wine/entity") must equal a returned name's word
  set, give or take a vintage year and the words the caller allows for that name (a wine's
  producer); a strict subset counts only when it picks exactly one returned name and
  contains a word that is not generic (below). Other added words never count: "Fake Estate
  Tignanello Reserve" is a different name from "Tignanello";
- a name is found in *prose* when the distinctive words of a known name occur together (in a
  window about as long as the name);
- *generic* words (grape varieties, regions, styles such as "Port", "Barolo", "Brut") name a
  kind of thing, not one thing: a mention made only of them names nothing.

Which names count as returned is the caller's business: rows of successful tool calls made
during this case, never the whole catalog.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Particles that vary between spellings of one name ("Castello di Ama", "Castello Ama").
PARTICLES = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "and",
        "di",
        "de",
        "del",
        "della",
        "dei",
        "du",
        "des",
        "le",
        "la",
        "les",
        "el",
        "los",
        "do",
        "da",
        "dos",
        "das",
        "von",
        "van",
    ]
)
# One spelling per word: abbreviations and variants map to the full form.
ALIASES: Mapping[str, str] = {
    "st": "saint",
    "ste": "sainte",
    "sta": "santa",
    "mt": "mount",
    "ch": "chateau",
    "chateaux": "chateau",
    "dr": "doctor",
    "bros": "brothers",
    "yr": "year",
    "yrs": "year",
    "years": "year",
}
_VINTAGE = re.compile(r"(19|20)\d\d")
_TYPOGRAPHY = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "`": "'", "\u02bc": "'", "\u2013": "-", "\u2014": "-"}
)


def name_words(text: str, aliases: Mapping[str, str] = ALIASES) -> tuple[str, ...]:
    """The normalised words of `text`, in order: `Planeta Nero d'Avola` -> planeta nero avola,
    `Stag's Leap` -> stag leap, `St. Emilion` -> saint emilion, `Château` -> chateau."""
    decomposed = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c))
    folded = folded.translate(_TYPOGRAPHY).casefold().replace("&", " and ")
    folded = re.sub(r"\b([^\W\d_])'(?=[^\W\d_])", " ", folded)  # d'Avola, l'Ame: elided article
    folded = re.sub(r"'s\b", "", folded)  # Taylor's -> Taylor
    out = []
    for token in re.findall(r"[^\W_]+", folded):
        token = aliases.get(token, token)
        if token in PARTICLES or (len(token) == 1 and not token.isdigit()):
            continue
        out.append(token)
    return tuple(out)


def word_set(text: str) -> frozenset[str]:
    return frozenset(name_words(text))


@dataclass(frozen=True)
class Citation:
    """One mention in an answer and what it was matched to (None: nothing), and why."""

    mention: str
    name: str | None
    reason: str


class Names:
    """A set of known names (for example the rows tool calls returned) to match mentions
    against. `generic` lists words or phrases that name a kind, not one thing."""

    def __init__(
        self,
        names: Iterable[str],
        *,
        generic: Collection[str] = (),
        extras: Mapping[str, str] | None = None,
    ):
        self.names = list(dict.fromkeys(n for n in names if word_set(n)))
        self._keys = {n: word_set(n) for n in self.names}
        self.generic = frozenset(w for g in generic for w in name_words(g))
        # Words a mention may add to one name and still mean it (a wine's producer: the
        # answer may write "Antinori Tignanello" for "Tignanello").
        self._extras = {n: word_set((extras or {}).get(n, "")) for n in self.names}

    def __len__(self) -> int:
        return len(self.names)

    def is_generic(self, mention: str) -> bool:
        words = word_set(mention)
        return bool(words) and words <= self.generic

    def lookup(self, mention: str) -> str | None:
        """The known name a marked mention refers to, or None (see the module docstring)."""
        words = word_set(mention)
        core = frozenset(w for w in words if not _VINTAGE.fullmatch(w))
        if not core or core <= self.generic:
            return None
        for name in self.names:
            key = self._keys[name]
            if key == core or (key <= core <= key | self._extras[name]):
                return name
        shortened = [n for n in self.names if core < self._keys[n]]
        if len(shortened) == 1 and core - self.generic:
            return shortened[0]
        return None

    def cite(self, mention: str, *, what: str = "name") -> Citation:
        name = self.lookup(mention)
        if name is not None:
            return Citation(mention, name, f"{mention!r} is {name!r}")
        if self.is_generic(mention):
            return Citation(mention, None, f"{mention!r} is a generic term, not a {what}")
        return Citation(mention, None, f"{mention!r} matches no {what} a tool call returned")

    def named_in(self, text: str) -> list[str]:
        """Known names the text mentions in prose: every distinctive (non-generic) word of the
        name within a window about as long as the name, in any order."""
        tokens = name_words(text)
        found = []
        for name in self.names:
            # Numbers ("Bin 389", "20 Year Old") are left out when words remain: a stray
            # number near a common word must not name a wine.
            distinctive = self._keys[name] - self.generic
            need = {w for w in distinctive if not w.isdigit()} or distinctive or self._keys[name]
            if _within_window(tokens, frozenset(need), len(need) + 2):
                found.append(name)
        # A longer name found in the same words wins over a name it contains.
        return [n for n in found if not any(self._keys[n] < self._keys[m] for m in found if m != n)]


def _within_window(tokens: tuple[str, ...], need: frozenset[str], width: int) -> bool:
    if not need:
        return False
    for start, token in enumerate(tokens):
        if token in need and need <= set(tokens[start : start + width]):
            return True
    return False


# --- values returned by tools ---------------------------------------------------------------


def _scalar_forms(value: Any) -> list[str]:
    """The spellings of a number an answer may use: 21.0 may be written 21."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, float) and value.is_integer():
        return [str(int(value)), repr(value)]
    return [str(value)]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if value is None else [value]


def mentions_value(answer: str, value: Any) -> bool:
    """Whether `answer` mentions `value`, a value a tool returned: a string by its whole
    normalised words (in any order, close together, not inside longer words), a number or
    boolean as a whole token (21 is not in 210); an object or list by every scalar in it."""
    leaves = _leaves(value)
    if not leaves:
        return False
    tokens = name_words(answer)
    # Whole numbers only (21 is not in 210 or in A21); 1,200 is 1200.
    plain = re.sub(r"(?<=\d),(?=\d{3}\b)", "", answer)
    numbers = set(re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)", plain))
    for leaf in leaves:
        if isinstance(leaf, bool | int | float):
            if not any(form in numbers or form in tokens for form in _scalar_forms(leaf)):
                return False
            continue
        need = word_set(str(leaf))
        if not need or not _within_window(tokens, need, len(need) + 2):
            return False
    return True
