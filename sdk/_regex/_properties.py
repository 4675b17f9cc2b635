"""The Unicode properties ECMA-262 lets ``\\p{...}`` and ``\\P{...}`` name, written once as data.

ECMA-262 (its tables of non-binary and binary Unicode properties, with the values and
aliases of Unicode's PropertyValueAliases.txt) accepts exactly three forms, spelled exactly as
listed here (case-sensitive, no loose matching: ``\\p{l}``, ``\\p{Lowercase_letter}`` and
``\\p{Script=latin}`` are syntax errors):

- ``\\p{General_Category=V}``, ``\\p{gc=V}`` or a lone ``\\p{V}``, for V a General_Category
  value or alias (``L``, ``Letter``, ``digit``, ``Combining_Mark``...);
- ``\\p{Script=V}``, ``\\p{sc=V}``, ``\\p{Script_Extensions=V}``, ``\\p{scx=V}``, for V a Script
  value or alias (``Latin``, ``Latn``, ``Qaac``...);
- a lone binary property name or alias (``Alphabetic``, ``Alpha``, ``ASCII``, ``Any``...).

The lists follow Unicode 17 as Node 20 (ICU 78) reads them, which is the oracle the tests use:
``Katakana_Or_Hiragana`` (``Hrkt``) is a Script value with no characters that V8 refuses, and so
is it here. :func:`property_class` maps a valid property to the ``regex`` package's spelling.
"""

from __future__ import annotations

from functools import cache

import regex

__all__ = ["property_class"]

# Each row: the canonical (long) name first, then its aliases.
GENERAL_CATEGORY: tuple[tuple[str, ...], ...] = (
    ("Other", "C"),
    ("Control", "Cc", "cntrl"),
    ("Format", "Cf"),
    ("Unassigned", "Cn"),
    ("Private_Use", "Co"),
    ("Surrogate", "Cs"),
    ("Letter", "L"),
    ("Cased_Letter", "LC"),
    ("Lowercase_Letter", "Ll"),
    ("Modifier_Letter", "Lm"),
    ("Other_Letter", "Lo"),
    ("Titlecase_Letter", "Lt"),
    ("Uppercase_Letter", "Lu"),
    ("Mark", "M", "Combining_Mark"),
    ("Spacing_Mark", "Mc"),
    ("Enclosing_Mark", "Me"),
    ("Nonspacing_Mark", "Mn"),
    ("Number", "N"),
    ("Decimal_Number", "Nd", "digit"),
    ("Letter_Number", "Nl"),
    ("Other_Number", "No"),
    ("Punctuation", "P", "punct"),
    ("Connector_Punctuation", "Pc"),
    ("Dash_Punctuation", "Pd"),
    ("Close_Punctuation", "Pe"),
    ("Final_Punctuation", "Pf"),
    ("Initial_Punctuation", "Pi"),
    ("Other_Punctuation", "Po"),
    ("Open_Punctuation", "Ps"),
    ("Symbol", "S"),
    ("Currency_Symbol", "Sc"),
    ("Modifier_Symbol", "Sk"),
    ("Math_Symbol", "Sm"),
    ("Other_Symbol", "So"),
    ("Separator", "Z"),
    ("Line_Separator", "Zl"),
    ("Paragraph_Separator", "Zp"),
    ("Space_Separator", "Zs"),
)

SCRIPT: tuple[tuple[str, ...], ...] = (
    ("Adlam", "Adlm"), ("Caucasian_Albanian", "Aghb"), ("Ahom",), ("Arabic", "Arab"),
    ("Imperial_Aramaic", "Armi"), ("Armenian", "Armn"), ("Avestan", "Avst"),
    ("Balinese", "Bali"), ("Bamum", "Bamu"), ("Bassa_Vah", "Bass"), ("Batak", "Batk"),
    ("Bengali", "Beng"), ("Beria_Erfe", "Berf"), ("Bhaiksuki", "Bhks"), ("Bopomofo", "Bopo"),
    ("Brahmi", "Brah"), ("Braille", "Brai"), ("Buginese", "Bugi"), ("Buhid", "Buhd"),
    ("Chakma", "Cakm"), ("Canadian_Aboriginal", "Cans"), ("Carian", "Cari"), ("Cham",),
    ("Cherokee", "Cher"), ("Chorasmian", "Chrs"), ("Coptic", "Copt", "Qaac"),
    ("Cypro_Minoan", "Cpmn"), ("Cypriot", "Cprt"), ("Cyrillic", "Cyrl"),
    ("Devanagari", "Deva"), ("Dives_Akuru", "Diak"), ("Dogra", "Dogr"), ("Deseret", "Dsrt"),
    ("Duployan", "Dupl"), ("Egyptian_Hieroglyphs", "Egyp"), ("Elbasan", "Elba"),
    ("Elymaic", "Elym"), ("Ethiopic", "Ethi"), ("Garay", "Gara"), ("Georgian", "Geor"),
    ("Glagolitic", "Glag"), ("Gunjala_Gondi", "Gong"), ("Masaram_Gondi", "Gonm"),
    ("Gothic", "Goth"), ("Grantha", "Gran"), ("Greek", "Grek"), ("Gujarati", "Gujr"),
    ("Gurung_Khema", "Gukh"), ("Gurmukhi", "Guru"), ("Hangul", "Hang"), ("Han", "Hani"),
    ("Hanunoo", "Hano"), ("Hatran", "Hatr"), ("Hebrew", "Hebr"), ("Hiragana", "Hira"),
    ("Anatolian_Hieroglyphs", "Hluw"), ("Pahawh_Hmong", "Hmng"),
    ("Nyiakeng_Puachue_Hmong", "Hmnp"), ("Old_Hungarian", "Hung"), ("Old_Italic", "Ital"),
    ("Javanese", "Java"), ("Kayah_Li", "Kali"), ("Katakana", "Kana"), ("Kawi",),
    ("Kharoshthi", "Khar"), ("Khmer", "Khmr"), ("Khojki", "Khoj"),
    ("Khitan_Small_Script", "Kits"), ("Kannada", "Knda"), ("Kirat_Rai", "Krai"),
    ("Kaithi", "Kthi"), ("Tai_Tham", "Lana"), ("Lao", "Laoo"), ("Latin", "Latn"),
    ("Lepcha", "Lepc"), ("Limbu", "Limb"), ("Linear_A", "Lina"), ("Linear_B", "Linb"),
    ("Lisu",), ("Lycian", "Lyci"), ("Lydian", "Lydi"), ("Mahajani", "Mahj"),
    ("Makasar", "Maka"), ("Mandaic", "Mand"), ("Manichaean", "Mani"), ("Marchen", "Marc"),
    ("Medefaidrin", "Medf"), ("Mende_Kikakui", "Mend"), ("Meroitic_Cursive", "Merc"),
    ("Meroitic_Hieroglyphs", "Mero"), ("Malayalam", "Mlym"), ("Modi",),
    ("Mongolian", "Mong"), ("Mro", "Mroo"), ("Meetei_Mayek", "Mtei"), ("Multani", "Mult"),
    ("Myanmar", "Mymr"), ("Nag_Mundari", "Nagm"), ("Nandinagari", "Nand"),
    ("Old_North_Arabian", "Narb"), ("Nabataean", "Nbat"), ("Newa",), ("Nko", "Nkoo"),
    ("Nushu", "Nshu"), ("Ogham", "Ogam"), ("Ol_Chiki", "Olck"), ("Ol_Onal", "Onao"),
    ("Old_Turkic", "Orkh"), ("Oriya", "Orya"), ("Osage", "Osge"), ("Osmanya", "Osma"),
    ("Old_Uyghur", "Ougr"), ("Palmyrene", "Palm"), ("Pau_Cin_Hau", "Pauc"),
    ("Old_Permic", "Perm"), ("Phags_Pa", "Phag"), ("Inscriptional_Pahlavi", "Phli"),
    ("Psalter_Pahlavi", "Phlp"), ("Phoenician", "Phnx"), ("Miao", "Plrd"),
    ("Inscriptional_Parthian", "Prti"), ("Rejang", "Rjng"), ("Hanifi_Rohingya", "Rohg"),
    ("Runic", "Runr"), ("Samaritan", "Samr"), ("Old_South_Arabian", "Sarb"),
    ("Saurashtra", "Saur"), ("SignWriting", "Sgnw"), ("Shavian", "Shaw"),
    ("Sharada", "Shrd"), ("Siddham", "Sidd"), ("Sidetic", "Sidt"), ("Khudawadi", "Sind"),
    ("Sinhala", "Sinh"), ("Sogdian", "Sogd"), ("Old_Sogdian", "Sogo"),
    ("Sora_Sompeng", "Sora"), ("Soyombo", "Soyo"), ("Sundanese", "Sund"),
    ("Sunuwar", "Sunu"), ("Syloti_Nagri", "Sylo"), ("Syriac", "Syrc"), ("Tagbanwa", "Tagb"),
    ("Takri", "Takr"), ("Tai_Le", "Tale"), ("New_Tai_Lue", "Talu"), ("Tamil", "Taml"),
    ("Tangut", "Tang"), ("Tai_Viet", "Tavt"), ("Tai_Yo", "Tayo"), ("Telugu", "Telu"),
    ("Tifinagh", "Tfng"), ("Tagalog", "Tglg"), ("Thaana", "Thaa"), ("Thai",),
    ("Tibetan", "Tibt"), ("Tirhuta", "Tirh"), ("Tangsa", "Tnsa"), ("Todhri", "Todr"),
    ("Tolong_Siki", "Tols"), ("Toto",), ("Tulu_Tigalari", "Tutg"), ("Ugaritic", "Ugar"),
    ("Vai", "Vaii"), ("Vithkuqi", "Vith"), ("Warang_Citi", "Wara"), ("Wancho", "Wcho"),
    ("Old_Persian", "Xpeo"), ("Cuneiform", "Xsux"), ("Yezidi", "Yezi"), ("Yi", "Yiii"),
    ("Zanabazar_Square", "Zanb"), ("Inherited", "Zinh", "Qaai"), ("Common", "Zyyy"),
    ("Unknown", "Zzzz"),
)  # fmt: skip

# ECMA-262's table of binary Unicode properties.
BINARY: tuple[tuple[str, ...], ...] = (
    ("ASCII",), ("ASCII_Hex_Digit", "AHex"), ("Alphabetic", "Alpha"), ("Any",),
    ("Assigned",), ("Bidi_Control", "Bidi_C"), ("Bidi_Mirrored", "Bidi_M"),
    ("Case_Ignorable", "CI"), ("Cased",), ("Changes_When_Casefolded", "CWCF"),
    ("Changes_When_Casemapped", "CWCM"), ("Changes_When_Lowercased", "CWL"),
    ("Changes_When_NFKC_Casefolded", "CWKCF"), ("Changes_When_Titlecased", "CWT"),
    ("Changes_When_Uppercased", "CWU"), ("Dash",), ("Default_Ignorable_Code_Point", "DI"),
    ("Deprecated", "Dep"), ("Diacritic", "Dia"), ("Emoji",), ("Emoji_Component", "EComp"),
    ("Emoji_Modifier", "EMod"), ("Emoji_Modifier_Base", "EBase"),
    ("Emoji_Presentation", "EPres"), ("Extended_Pictographic", "ExtPict"),
    ("Extender", "Ext"), ("Grapheme_Base", "Gr_Base"), ("Grapheme_Extend", "Gr_Ext"),
    ("Hex_Digit", "Hex"), ("IDS_Binary_Operator", "IDSB"), ("IDS_Trinary_Operator", "IDST"),
    ("ID_Continue", "IDC"), ("ID_Start", "IDS"), ("Ideographic", "Ideo"),
    ("Join_Control", "Join_C"), ("Logical_Order_Exception", "LOE"), ("Lowercase", "Lower"),
    ("Math",), ("Noncharacter_Code_Point", "NChar"), ("Pattern_Syntax", "Pat_Syn"),
    ("Pattern_White_Space", "Pat_WS"), ("Quotation_Mark", "QMark"), ("Radical",),
    ("Regional_Indicator", "RI"), ("Sentence_Terminal", "STerm"), ("Soft_Dotted", "SD"),
    ("Terminal_Punctuation", "Term"), ("Unified_Ideograph", "UIdeo"),
    ("Uppercase", "Upper"), ("Variation_Selector", "VS"), ("White_Space", "space"),
    ("XID_Continue", "XIDC"), ("XID_Start", "XIDS"),
)  # fmt: skip

_CATEGORY_NAMES = ("General_Category", "gc")
_SCRIPT_NAMES = {"Script": "Script", "sc": "Script", "Script_Extensions": "Script_Extensions",
                 "scx": "Script_Extensions"}  # fmt: skip


def _index(rows: tuple[tuple[str, ...], ...]) -> dict[str, str]:
    return {alias: row[0] for row in rows for alias in row}


_CATEGORIES = _index(GENERAL_CATEGORY)
_SCRIPTS = _index(SCRIPT)
_BINARY = _index(BINARY)


def property_class(text: str, *, negated: bool) -> str | None:
    """The ``regex``-package item for ``\\p{text}`` (``\\P{text}`` when ``negated``), or
    ``None`` when ``text`` is not a property ECMA-262 accepts. The item is valid both inside
    and outside a character class (with ``regex.V1``)."""
    name, eq, value = text.partition("=")
    letter = "P" if negated else "p"
    if eq:
        if name in _CATEGORY_NAMES and value in _CATEGORIES:
            return f"\\{letter}{{gc={_CATEGORIES[value]}}}"
        if name in _SCRIPT_NAMES and value in _SCRIPTS:
            return f"\\{letter}{{{_SCRIPT_NAMES[name]}={_SCRIPTS[value]}}}"
        return None
    if name in _CATEGORIES:
        return f"\\{letter}{{gc={_CATEGORIES[name]}}}"
    canonical = _BINARY.get(name)
    if canonical is None:
        return None
    if canonical == "Changes_When_NFKC_Casefolded":  # not in the regex package: computed
        return ("[^" if negated else "[") + _changes_when_nfkc_casefolded() + "]"
    return f"\\{letter}{{{canonical}}}"


@cache
def _changes_when_nfkc_casefolded() -> str:
    """Changes_When_NFKC_Casefolded as class ranges, from its definition in UAX #44: the code
    points that NFKC_Casefold (NFKC, full case folding, Default_Ignorable_Code_Point removed,
    to a fixed point) changes. Computed once (about a second) from Python's ``unicodedata``;
    it agrees with Node 20 on every code point assigned in that database (the tests check a
    sample)."""
    import unicodedata

    ignorable = regex.compile(r"\p{Default_Ignorable_Code_Point}")

    def folded(text: str) -> str:
        for _ in range(3):  # NFKC and case folding reach their fixed point within three rounds
            text = ignorable.sub("", unicodedata.normalize("NFKC", text).casefold())
        return unicodedata.normalize("NFKC", text)

    ranges: list[str] = []
    start = -1
    for code in range(0x110001):
        changes = (
            code <= 0x10FFFF and not 0xD800 <= code < 0xE000 and folded(chr(code)) != chr(code)
        )
        if changes and start < 0:
            start = code
        elif not changes and start >= 0:
            end = code - 1
            ranges.append(f"\\U{start:08x}" if start == end else f"\\U{start:08x}-\\U{end:08x}")
            start = -1
    return "".join(ranges)
