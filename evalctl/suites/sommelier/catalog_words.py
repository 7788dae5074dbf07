"""Turn customers' (and models') words into the catalog's vocabulary.

Models pass filters in whatever language the customer used: "красное", "red wine", "Italian",
"из Италии". The catalog stores one canonical spelling per value, so every filter goes through
these functions before it reaches SQL, and the spy records the canonical value. English words
are matched whole; Russian words by stem, because Russian inflects ("красное", "красного",
"красные" are one colour). Everything is folded first (case, accents, ё/й) so that tables and
input agree on spelling.
"""

# This module is bilingual by design: Cyrillic letters here are Russian words, not look-alikes.
# ruff: noqa: RUF001

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

COLORS = ("red", "white", "rose", "sparkling")
SWEETNESS = ("dry", "off-dry", "semi-sweet", "sweet")


class WordError(ValueError):
    """A value that cannot be mapped to the catalog's vocabulary; the message is for the model."""


# Typographic quotes and dashes models like to emit, mapped to ASCII.
_TYPOGRAPHY = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u2013": "-", "\u2014": "-"})


def fold(text: str) -> str:
    """Case- and accent-insensitive key: 'Château' -> 'chateau', 'Лёгкое' -> 'легкое'."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(stripped.translate(_TYPOGRAPHY).casefold().split())


def words(text: str) -> list[str]:
    """Folded words; hyphens and punctuation separate words ('off-dry' -> ['off', 'dry'])."""
    return re.findall(r"[^\W_]+", fold(text))


def word_key(text: str) -> str:
    """Folded words joined by spaces: the form the catalog's search columns are stored in."""
    return " ".join(words(text))


def _tidy(value: str) -> str:
    return " ".join(value.split())


def _table(groups: Mapping[str, str]) -> dict[str, str]:
    """{"word, other word": canonical} -> {folded word key: canonical}."""
    return {word_key(k): v for key, v in groups.items() for k in key.split(",")}


def _stems(table: Mapping[str, str]) -> list[tuple[str, str]]:
    # Longest stem first, so "сливоч" (creamy) wins over "слив" (plum).
    return sorted(((fold(k), v) for k, v in table.items()), key=lambda kv: -len(kv[0]))


# Words that carry no filter meaning in a filter value ("red wine", "вино из Италии").
_FILLER = frozenset(words("wine wines vino vin the a from of style вино вина вин из от с"))


def _lookup(
    value: str, phrases: Mapping[str, str], stems: list[tuple[str, str]], what: str
) -> str | None:
    """The one canonical value named in `value`, None if none is; error if several differ."""
    tokens = [w for w in words(value) if w not in _FILLER]
    joined = " ".join(tokens)
    if joined in phrases:
        return phrases[joined]
    found: list[str] = []
    i = 0
    while i < len(tokens):
        pair = " ".join(tokens[i : i + 2])
        if i + 1 < len(tokens) and pair in phrases:  # "new zealand red", "off dry riesling"
            found.append(phrases[pair])
            i += 2
            continue
        token = tokens[i]
        hit = phrases.get(token)
        if hit is None:
            hit = next((v for stem, v in stems if token.startswith(stem)), None)
        if hit is not None:
            found.append(hit)
        i += 1
    distinct = list(dict.fromkeys(found))
    if len(distinct) > 1:
        raise WordError(
            f"{value!r} names several {what} values ({', '.join(distinct)}); "
            f"search one {what} at a time"
        )
    return distinct[0] if distinct else None


# fmt: off
# --- colour ---------------------------------------------------------------------------------
# "Colour" is the shop's type: sparkling wines of any hue are `sparkling`.
_COLOR_PHRASES = _table({
    "red, reds, rouge, rosso, tinto": "red",
    "white, whites, blanc, bianco, blanco, weiss": "white",
    "rose, rosé, roses, rosado, rosato, pink, blush": "rose",
    "sparkling, bubbly, bubbles, fizz, fizzy, spumante, frizzante, sekt, cava, prosecco,"
    " champagne, cremant, mousseux": "sparkling",
})
_COLOR_STEMS = _stems({
    "красн": "red", "бел": "white", "розов": "rose", "игрист": "sparkling",
    "шампанск": "sparkling", "шипуч": "sparkling", "просекко": "sparkling",
})

# --- sweetness ------------------------------------------------------------------------------
_SWEETNESS_PHRASES = _table({
    "dry, brut, extra brut, brut nature, secco, seco, trocken, bone dry": "dry",
    "off dry, semi dry, medium dry, demi sec, halbtrocken, feinherb": "off-dry",
    "semi sweet, medium sweet, amabile, abboccato, lieblich, moelleux": "semi-sweet",
    "sweet, dessert, doux, dolce, sticky, late harvest": "sweet",
})
_SWEETNESS_STEMS = _stems({
    "полусух": "off-dry", "полуслад": "semi-sweet", "сух": "dry", "брют": "dry",
    "слад": "sweet", "десертн": "sweet",
})

# --- country --------------------------------------------------------------------------------
# Includes countries the catalog has no wine from: "Chile" must normalise (and then match
# nothing, which triggers broadening), not be mistaken for a typo.
_COUNTRY_PHRASES = _table({
    "france, french": "France",
    "italy, italian, italia": "Italy",
    "spain, spanish, espana": "Spain",
    "germany, german, deutschland": "Germany",
    "portugal, portuguese": "Portugal",
    "usa, us, u s, u s a, united states, united states of america, america, american,"
    " california, californian, сша": "USA",
    "australia, australian, aussie": "Australia",
    "new zealand, nz, новая зеландия, новой зеландии": "New Zealand",
    "argentina, argentinian, argentine": "Argentina",
    "chile, chilean": "Chile",
    "south africa, south african, южная африка, южной африки, юар": "South Africa",
    "austria, austrian": "Austria",
    "georgia, georgian, sakartvelo": "Georgia",
    "hungary, hungarian": "Hungary",
    "greece, greek": "Greece",
    "russia, russian": "Russia",
    "moldova, moldovan": "Moldova",
    "israel, israeli": "Israel",
    "lebanon, lebanese": "Lebanon",
    "canada, canadian": "Canada",
    "uruguay, uruguayan": "Uruguay",
    "switzerland, swiss": "Switzerland",
})
_COUNTRY_STEMS = _stems({
    "франц": "France", "итал": "Italy", "испан": "Spain", "герман": "Germany",
    "немец": "Germany", "португал": "Portugal", "америк": "USA", "калифорн": "USA",
    "австрал": "Australia", "новозеланд": "New Zealand", "аргентин": "Argentina",
    "чили": "Chile", "южноафрикан": "South Africa", "австри": "Austria", "грузи": "Georgia",
    "грузин": "Georgia", "венгр": "Hungary", "венгер": "Hungary", "греци": "Greece",
    "греческ": "Greece", "росси": "Russia", "русск": "Russia", "молдав": "Moldova",
    "молдов": "Moldova", "израил": "Israel", "ливан": "Lebanon", "канад": "Canada",
    "уругва": "Uruguay", "швейцар": "Switzerland",
})

# --- region ---------------------------------------------------------------------------------
# A well-known appellation maps to the region the catalog files it under (a customer asking
# for "Chianti" gets Tuscany): broader, never empty-handed for a name the shop knows.
_REGION_PHRASES = _table({
    "tuscany, toscana, chianti, bolgheri": "Tuscany",
    "piedmont, piemonte, barolo, barbaresco, asti": "Piedmont",
    "bordeaux, margaux, sauternes, medoc, pauillac": "Bordeaux",
    "burgundy, bourgogne, chablis, cote d'or": "Burgundy",
    "rhone, rhone valley, chateauneuf du pape": "Rhône",
    "loire, loire valley, sancerre, vouvray": "Loire",
    "napa, napa valley, долина напа": "Napa Valley",
    "sonoma, sonoma county": "Sonoma County",
    "rias baixas, риас байшас": "Rías Baixas",
    "penedes": "Penedès",
    "tokaj, tokaji": "Tokaj",
    "sicily, sicilia": "Sicily",
    "alto adige, south tyrol, sudtirol, альто адидже": "Alto Adige",
    "mosel, moselle": "Mosel",
    "рибера дель дуэро": "Ribera del Duero",
    "винью верде": "Vinho Verde",
})
_REGION_STEMS = _stems({
    "тоскан": "Tuscany", "кьянти": "Tuscany", "пьемонт": "Piedmont", "бароло": "Piedmont",
    "бордо": "Bordeaux", "бургунд": "Burgundy", "шабли": "Burgundy", "шампан": "Champagne",
    "рон": "Rhône", "луар": "Loire", "эльзас": "Alsace", "прованс": "Provence",
    "божоле": "Beaujolais", "риох": "Rioja", "рибер": "Ribera del Duero", "мозел": "Mosel",
    "рейнгау": "Rheingau", "дору": "Douro", "доуру": "Douro", "напа": "Napa Valley",
    "соном": "Sonoma County", "калифорн": "California", "орегон": "Oregon",
    "мальборо": "Marlborough", "отаго": "Central Otago", "мендос": "Mendoza",
    "стелленбос": "Stellenbosch", "кахет": "Kakheti", "тока": "Tokaj", "венето": "Veneto",
    "сицил": "Sicily", "кампан": "Campania", "пенедес": "Penedès",
})
# Broader areas a region belongs to, so `region="California"` finds Napa and Sonoma wines.
REGION_AREAS = {
    "Napa Valley": "California", "Sonoma County": "California", "Carneros": "California",
    "Willamette Valley": "Oregon",
}

# --- grape ----------------------------------------------------------------------------------
# Russian grape names word by word, so "каберне совиньон" and "совиньон блан" compose.
_GRAPE_RU_WORDS = _stems({
    "каберне": "cabernet", "совиньон": "sauvignon", "фран": "franc", "мерло": "merlot",
    "пино": "pinot", "нуар": "noir", "гриджо": "grigio", "гри": "gris", "менье": "meunier",
    "шардоне": "chardonnay", "блан": "blanc", "рислинг": "riesling", "шираз": "shiraz",
    "сира": "syrah", "мальбек": "malbec", "темпранильо": "tempranillo",
    "санджовезе": "sangiovese", "неббиоло": "nebbiolo", "гренаш": "grenache",
    "гарнача": "garnacha", "зинфандель": "zinfandel", "примитиво": "primitivo",
    "гевюрцтраминер": "gewurztraminer", "грюнер": "gruner", "вельтлинер": "veltliner",
    "шенен": "chenin", "альбариньо": "albarino", "вионье": "viognier", "мускат": "muscat",
    "москато": "moscato", "фурминт": "furmint", "саперави": "saperavi",
    "ркацители": "rkatsiteli", "пинотаж": "pinotage", "карменер": "carmenere",
    "глера": "glera", "корвина": "corvina", "гаме": "gamay", "торронтес": "torrontes",
    "фиано": "fiano", "ламбруско": "lambrusco", "семильон": "semillon",
    "мурведр": "mourvedre", "турига": "touriga", "насьональ": "nacional",
})
# Canonical spellings, with their accents.
_GRAPE_CANONICAL = (
    "Cabernet Sauvignon", "Cabernet Franc", "Merlot", "Pinot Noir", "Pinot Gris",
    "Pinot Meunier", "Chardonnay", "Sauvignon Blanc", "Riesling", "Syrah", "Malbec",
    "Tempranillo", "Sangiovese", "Nebbiolo", "Grenache", "Zinfandel", "Gewürztraminer",
    "Grüner Veltliner", "Chenin Blanc", "Albariño", "Viognier", "Muscat", "Furmint",
    "Saperavi", "Rkatsiteli", "Pinotage", "Carmenère", "Glera", "Corvina", "Gamay",
    "Torrontés", "Fiano", "Lambrusco", "Sémillon", "Mourvèdre", "Touriga Nacional",
    "Nero d'Avola", "Cinsault", "Carignan", "Petite Sirah", "Macabeo", "Touriga Franca",
)
# One grape, several names: synonym key -> canonical key.
_GRAPE_SYNONYMS = {
    "shiraz": "syrah", "garnacha": "grenache", "pinot grigio": "pinot gris",
    "spatburgunder": "pinot noir", "primitivo": "zinfandel", "moscato": "muscat",
    "tinta roriz": "tempranillo", "tinto fino": "tempranillo", "monastrell": "mourvedre",
    "carignane": "carignan",
}
_GRAPE_FILLER = frozenset(words("wine grape grapes variety вино виноград сорт"))

# --- free-text queries ----------------------------------------------------------------------
_STOPWORDS = frozenset(words("""
    a an the and or but not with without for to of in on at by from as into some something
    anything any wine wines bottle bottles glass i me my we our us you your it its is are be
    was like likes love loves want wants need needs looking look please recommend suggest
    suggestion tonight today good nice great best really very quite that this which what who
    do does have has can could would should will go goes going pair pairs paired pairing
    match matches serve served taste tastes tasting flavour flavor flavours flavors note
    notes aroma aromas hint style kind type bodied whatever also ones one
    вино вина вин что нибудь чтонибудь чего к ко с со и или для на в во из под мне нам меня
    хочу хочется хотелось бы нужно нужен нужна нужны посоветуй посоветуйте порекомендуй
    порекомендуйте подскажи подскажите есть ли у вас какое какой какая какие бутылка
    бутылку бутылочку сегодня очень хорошее хороший чем то тоже вкус вкусом нотками нотами
    нотки ароматом аромат стиле подойдет подходит подать
"""))
# Russian taste, food and occasion words -> English terms used in the catalog's descriptions.
_TASTE_RU = _stems({
    "легк": "light", "свеж": "fresh", "фрукт": "fruit", "ягод": "berry", "вишн": "cherry",
    "черешн": "cherry", "клубник": "strawberry", "малин": "raspberry", "смородин": "currant",
    "сливоч": "creamy", "слив": "plum", "персик": "peach", "абрикос": "apricot",
    "яблок": "apple", "яблоч": "apple", "груш": "pear", "цитрус": "citrus", "лимон": "lemon",
    "лайм": "lime", "грейпфрут": "grapefruit", "медов": "honey", "мед": "honey",
    "ванил": "vanilla", "дуб": "oak", "шоколад": "chocolate", "кофе": "coffee",
    "табак": "tobacco", "кож": "leather", "перец": "pepper", "перч": "pepper",
    "пряност": "spice", "пряный": "spice", "пряное": "spice", "специ": "spice",
    "остр": "spicy", "минерал": "mineral", "цвет": "flower", "дым": "smoke",
    "танин": "tannin", "терпк": "tannin", "насыщ": "rich", "полнотел": "full",
    "мощн": "powerful", "кисл": "acidity", "сух": "dry", "слад": "sweet",
    "десерт": "dessert", "мягк": "soft", "бархат": "velvet", "элегант": "elegant",
    "шелк": "silk", "масл": "butter", "орех": "nut", "карамел": "caramel", "земл": "earth",
    "гриб": "mushroom", "трюфел": "truffle", "трав": "herb", "праздн": "celebration",
    "вечерин": "party", "пикник": "picnic", "летн": "summer", "лето": "summer",
    "аперитив": "aperitif", "рыб": "fish", "морепродукт": "seafood", "устриц": "oyster",
    "лосос": "salmon", "суши": "sushi", "стейк": "steak", "мяс": "meat", "говядин": "beef",
    "баранин": "lamb", "ягнят": "lamb", "свинин": "pork", "куриц": "chicken",
    "курин": "chicken", "утк": "duck", "утин": "duck", "дич": "game", "шашлык": "grill",
    "барбекю": "barbecue", "гриль": "grill", "паст": "pasta", "пицц": "pizza",
    "сыр": "cheese", "салат": "salad", "тапас": "tapas", "торт": "tart", "пирог": "tart",
    "азиат": "asian", "тайск": "thai", "карри": "curry", "спарж": "asparagus",
    "бургер": "burger", "ребр": "ribs", "красн": "red", "бел": "white", "розов": "rose",
    "игрист": "sparkling", "пузыр": "bubbles", "смел": "bold", "ярк": "bold", "богат": "rich",
})
# fmt: on


# --- normalisers, one per filter ------------------------------------------------------------


def normalize_color(value: str) -> str:
    hit = _lookup(value, _COLOR_PHRASES, _COLOR_STEMS, "color")
    if hit is None:
        raise WordError(f"unknown color {value!r}; use one of: {', '.join(COLORS)}")
    return hit


def normalize_sweetness(value: str) -> str:
    hit = _lookup(value, _SWEETNESS_PHRASES, _SWEETNESS_STEMS, "sweetness")
    if hit is None:
        raise WordError(f"unknown sweetness {value!r}; use one of: {', '.join(SWEETNESS)}")
    return hit


def normalize_country(value: str) -> str:
    """Canonical country name; an unknown name passes through (and will simply not match)."""
    hit = _lookup(value, _COUNTRY_PHRASES, _COUNTRY_STEMS, "country")
    return hit if hit is not None else _tidy(value)


def normalize_region(value: str) -> str:
    """Canonical region name; an unknown one passes through and is matched as a substring."""
    if len(word_key(value).replace(" ", "")) < 2:
        raise WordError(f"region {value!r} has no searchable letters")
    hit = _lookup(value, _REGION_PHRASES, _REGION_STEMS, "region")
    return hit if hit is not None else _tidy(value)


_GRAPE_NAMES = {word_key(name): name for name in _GRAPE_CANONICAL}


def _grape_key(value: str) -> str:
    out = []
    for token in words(value):
        if token in _GRAPE_FILLER:
            continue
        hit = next((v for stem, v in _GRAPE_RU_WORDS if token.startswith(stem)), None)
        out.append(hit or token)
    key = " ".join(out)
    return _GRAPE_SYNONYMS.get(key, key)


def normalize_grape(value: str) -> str:
    if "," in value or "/" in value:
        raise WordError(f"{value!r} names several grapes; search one grape at a time")
    key = _grape_key(value)
    if len(key.replace(" ", "")) < 2:
        raise WordError(f"grape {value!r} has no searchable letters")
    if key in _GRAPE_NAMES:
        return _GRAPE_NAMES[key]
    # Unknown grape: keep the caller's spelling unless it was translated from Russian.
    return _tidy(value) if key == word_key(value) else key.title()


def grape_match_key(grape: str) -> str:
    return _grape_key(grape)


def grape_index_key(grapes: str) -> str:
    """Search key of a catalog grape list, canonical names, so 'Shiraz' is found as 'Syrah'.

    Parts are joined with ' | ' so a substring never spans two grapes.
    """
    return " | ".join(_grape_key(g) for g in grapes.split(","))


def region_index_key(region: str) -> str:
    area = REGION_AREAS.get(region)
    return " | ".join(word_key(part) for part in ([region, area] if area else [region]))


# --- free-text queries ----------------------------------------------------------------------

MAX_QUERY_TERMS = 12


def stem(term: str) -> str:
    """A crude English stem used as an FTS prefix: 'spicy' -> 'spic' finds spice and spicy.

    Deliberately simple: the catalog is small, and a prefix that matches slightly too much
    only lowers a wine's rank, while a missed inflection loses it altogether.
    """
    for suffix in ("ies", "ied", "ing", "ed", "es", "y", "s"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    if term.endswith("e") and len(term) >= 5:
        return term[:-1]
    return term


def query_terms(query: str) -> list[str]:
    """Searchable English words of a free-text query, Russian translated, stopwords dropped."""
    out: list[str] = []
    for token in words(query):
        if token in _STOPWORDS or len(token) < 2:
            continue
        if token.isascii():
            # "italian" should find wines whose country column says Italy.
            country = _COUNTRY_PHRASES.get(token)
            out.append(fold(country) if country else token)
            continue
        translated = next((v for s, v in _TASTE_RU if token.startswith(s)), None)
        if translated is None:
            translated = _lookup(token, {}, _COUNTRY_STEMS, "country")
        if translated is not None:  # an untranslated Russian word cannot match English notes
            out.append(fold(translated))
    return list(dict.fromkeys(out))[:MAX_QUERY_TERMS]


# A prefix shorter than this says nothing: "li" would cover "light", "lime" and "lively".
MIN_PREFIX_STEM = 4


def terms_overlap(expected: Iterable[str], actual: Iterable[str]) -> list[str]:
    """Expected terms the actual query covers: the same stem, or one stem prefixing the other
    when the shorter has at least MIN_PREFIX_STEM letters ("spic" covers "spicy")."""
    actual_stems = [stem(fold(a)) for a in actual]
    hits = []
    for term in expected:
        s = stem(fold(term))
        for a in actual_stems:
            shorter = min(a, s, key=len)
            if a == s or (len(shorter) >= MIN_PREFIX_STEM and (a.startswith(s) or s.startswith(a))):
                hits.append(term)
                break
    return hits
