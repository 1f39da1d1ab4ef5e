"""The demo corpus: a small artificial language pair that the project generates itself (no data, no network).

The source is a toy English (`en`): subject, verb, object, an optional place, adjectives before nouns. The target
(`toy`) says the same thing in another order, so that attention has something to learn:

    The big dog saw a red ball in the park.   ->   Vasko toma lo parko lo inu balo rubi na ke mireti.

- verb last (SVO -> SOV) with a tense suffix (-a present, -eti past), and no agreement with the subject;
- the place phrase before the object, with a postposition (in the park -> parko lo inu);
- inside a noun phrase the order is mirrored: noun, adjectives (reversed), determiner; plural adds -ri;
- the object is marked by the particle `ke`.
Everything is deterministic from a seed.
"""
import random
from pathlib import Path

SRC, TGT = "en", "toy"
SPLIT_SIZES = {"train": 12000, "val": 400, "test": 400}

# English singular, English plural, toy stem
NOUNS = [("dog", "dogs", "vasko"), ("cat", "cats", "mili"), ("man", "men", "doru"), ("woman", "women", "sena"),
         ("child", "children", "pilo"), ("bird", "birds", "fiva"), ("horse", "horses", "kavalo"),
         ("boy", "boys", "tiko"), ("girl", "girls", "nila"), ("teacher", "teachers", "masu"),
         ("farmer", "farmers", "gorvi"), ("ball", "balls", "balo"), ("book", "books", "libu"),
         ("apple", "apples", "pomi"), ("house", "houses", "kasa"), ("tree", "trees", "arbo"), ("car", "cars", "roda"),
         ("fish", "fish", "piska"), ("cake", "cakes", "tarta"), ("letter", "letters", "karta"),
         ("hat", "hats", "kapo"), ("boat", "boats", "navi")]
PLACES = [("park", "parko"), ("garden", "horta"), ("river", "flumo"), ("street", "via"), ("kitchen", "kusina"),
          ("market", "merka"), ("forest", "silva"), ("school", "skola")]
ADJECTIVES = [("big", "toma"), ("small", "piti"), ("red", "rubi"), ("old", "velo"), ("young", "jova"),
              ("happy", "felu"), ("green", "verdi"), ("tall", "alto"), ("quiet", "kalmi"), ("blue", "blu"),
              ("black", "nero"), ("white", "bjan")]
# English 3rd person singular, plural/base, past, toy stem
VERBS = [("sees", "see", "saw", "mir"), ("likes", "like", "liked", "am"), ("eats", "eat", "ate", "manj"),
         ("holds", "hold", "held", "ten"), ("finds", "find", "found", "trov"), ("carries", "carry", "carried", "port"),
         ("watches", "watch", "watched", "gard"), ("paints", "paint", "painted", "pint"),
         ("follows", "follow", "followed", "sekv"), ("wants", "want", "wanted", "vol")]
PREPOSITIONS = [("in", "inu"), ("near", "pres"), ("behind", "dorsu"), ("at", "ce")]
# English determiner, toy determiner, number it needs
DETERMINERS = [("the", "lo", None), ("a", "na", "sg"), ("this", "ti", "sg"), ("two", "du", "pl"),
               ("many", "mul", "pl"), ("my", "mi", None)]


def noun_phrase(rng, plural, nouns=NOUNS, max_adjectives=2):
    """(English words, toy words) of one noun phrase: det adj* noun -> noun adj* (mirrored) det."""
    det = rng.choice([d for d in DETERMINERS if d[2] in (None, "pl" if plural else "sg")])
    adjectives = rng.sample(ADJECTIVES, rng.choice([0, 0, 1, 1, 2][:max_adjectives * 2 + 1]))
    noun = rng.choice(nouns)
    en = [det[0]] + [a[0] for a in adjectives] + [noun[1] if plural else noun[0]]
    toy = [noun[-1] + ("ri" if plural else "")] + [a[1] for a in reversed(adjectives)] + [det[1]]
    return en, toy


def sentence(rng):
    """One (English, toy) sentence pair."""
    subj_plural, obj_plural = rng.random() < 0.3, rng.random() < 0.3
    subj_en, subj_toy = noun_phrase(rng, subj_plural)
    obj_en, obj_toy = noun_phrase(rng, obj_plural)
    verb = rng.choice(VERBS)
    past = rng.random() < 0.5
    verb_en = verb[2] if past else (verb[1] if subj_plural else verb[0])
    verb_toy = verb[3] + ("eti" if past else "a")
    place_en, place_toy = [], []
    if rng.random() < 0.5:
        prep = rng.choice(PREPOSITIONS)
        np_en, np_toy = noun_phrase(rng, False, nouns=[(p[0], p[0] + "s", p[1]) for p in PLACES], max_adjectives=1)
        place_en, place_toy = [prep[0]] + np_en, np_toy + [prep[1]]
    en = subj_en + [verb_en] + obj_en + place_en
    toy = subj_toy + place_toy + obj_toy + ["ke", verb_toy]
    return _finish(en), _finish(toy)


def _finish(words):
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def generate(seed=0, sizes=None):
    """{split: (English lines, toy lines)}; val and test hold no sentence that is in train."""
    rng = random.Random(seed)
    sizes = sizes or SPLIT_SIZES
    seen, splits = set(), {}
    for split in ("train", "val", "test"):
        src, tgt = [], []
        while len(src) < sizes[split]:
            en, toy = sentence(rng)
            if split != "train" and en in seen:
                continue
            seen.add(en)
            src.append(en)
            tgt.append(toy)
        splits[split] = (src, tgt)
    return splits


def write_demo_corpus(folder, seed=0, sizes=None):
    """Write train/val/test .en and .toy files into folder (made if needed); returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for split, (src, tgt) in generate(seed, sizes).items():
        for lang, lines in ((SRC, src), (TGT, tgt)):
            tmp = folder / f".{split}.{lang}.tmp"
            tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            tmp.replace(folder / f"{split}.{lang}")
    return folder
