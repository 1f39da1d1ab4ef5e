"""The data side of the pipeline: corpus finding and reading, the Multi30k download, the demo corpus, the tokenizer,
token-bucketed batches."""
import gzip
import hashlib
import io
import urllib.error

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from train.data import batching, corpus, demo_corpus, download
from train.cli.errors import TrainError
from train.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer, train_tokenizer


def write(path, lines, gz=False):
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if gz else data)


@pytest.fixture
def isolated_home(tmp_path, monkeypatch):
    """No real Multi30k anywhere: HOME is an empty folder and MINITORCH_DATA is unset."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("MINITORCH_DATA", raising=False)
    return home


# ----- corpora -----
def test_read_lines_plain_and_gz_agree(tmp_path):
    lines = ["Ein Hund läuft.", "", "Zwei Männer\tmit Hüten."]
    write(tmp_path / "a.de", lines)
    write(tmp_path / "a.de.gz", lines, gz=True)
    assert corpus.read_lines(tmp_path / "a.de") == lines
    assert corpus.read_lines(tmp_path / "a.de.gz") == lines


def test_read_parallel_rejects_unaligned_files_naming_both(tmp_path):
    write(tmp_path / "train.de", ["a", "b", "c"])
    write(tmp_path / "train.en.gz", ["a", "b"], gz=True)
    with pytest.raises(TrainError, match=r"train\.de has 3 lines but .*train\.en\.gz has 2"):
        corpus.read_parallel(tmp_path, "train", "de", "en")


def test_read_lines_reports_bad_encoding_and_bad_gzip(tmp_path):
    (tmp_path / "x.de").write_bytes(b"ok\n\xff\xfe broken\n")
    with pytest.raises(TrainError, match=r"x\.de, line 2: not UTF-8"):
        corpus.read_lines(tmp_path / "x.de")
    (tmp_path / "y.de.gz").write_bytes(b"not gzip at all")
    with pytest.raises(TrainError, match=r"y\.de\.gz: cannot read"):
        corpus.read_lines(tmp_path / "y.de.gz")


def test_data_dir_missing_files_are_named(tmp_path):
    write(tmp_path / "train.de", ["a"])
    write(tmp_path / "train.en", ["a"])
    with pytest.raises(TrainError, match=r"missing val\.de\[\.gz\], val\.en\[\.gz\]"):
        corpus.find_corpus(tmp_path, "de", "en")
    with pytest.raises(TrainError, match="no such folder"):
        corpus.find_corpus(tmp_path / "nope", "de", "en")


def make_corpus(folder, langs=("de", "en")):
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test_2016_flickr"):
        for lang in langs:
            write(folder / f"{split}.{lang}.gz", [f"{split} {lang}"], gz=True)
    return folder


def test_default_corpus_search_order(tmp_path, isolated_home, monkeypatch):
    cache = make_corpus(isolated_home / ".cache" / "minitorch" / "multi30k")
    assert corpus.find_corpus(None, "de", "en") == cache
    env = make_corpus(tmp_path / "data" / "multi30k")
    monkeypatch.setenv("MINITORCH_DATA", str(tmp_path / "data"))
    assert corpus.find_corpus(None, "de", "en") == env          # $MINITORCH_DATA before the cache
    assert corpus.find_corpus(cache, "de", "en") == cache       # --data-dir before both
    assert corpus.available_splits(env, "de", "en") == ["test_2016_flickr", "train", "val"]
    assert corpus.available_splits(env, "de", "fr") == []


# ----- download -----
def test_download_without_network_says_where_to_put_the_files(isolated_home, monkeypatch):
    def no_network(url, timeout=None):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
    monkeypatch.setattr(download.urllib.request, "urlopen", no_network)
    with pytest.raises(TrainError) as err:
        corpus.find_corpus(None, "de", "en", download=download.download_multi30k)
    message = str(err.value)
    assert "could not be downloaded" in message and "name resolution" in message
    assert str(isolated_home / ".cache" / "minitorch" / "multi30k") in message
    assert "train.de.gz" in message and "--data-dir" in message
    assert not list((isolated_home / ".cache" / "minitorch" / "multi30k").glob("*"))  # no partial files left


class FakeResponse(io.BytesIO):
    def __init__(self, data):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}


def test_download_checks_the_sha256(tmp_path, monkeypatch):
    payload = {name: gzip.compress(f"{name}\n".encode()) for name in download.SHA256}
    requested = []

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return FakeResponse(payload[url.rsplit("/", 1)[1]])
    monkeypatch.setattr(download.urllib.request, "urlopen", fake_urlopen)
    monkeypatch.setattr(download, "SHA256", {k: hashlib.sha256(v).hexdigest() for k, v in payload.items()})
    download.download_multi30k(tmp_path / "ok", ("de", "en"))
    assert sorted(p.name for p in (tmp_path / "ok").iterdir()) == sorted(
        f"{s}.{lang}.gz" for s in download.SPLITS for lang in ("de", "en"))
    assert all(url.startswith("https://raw.githubusercontent.com/multi30k/dataset/") for url in requested)
    assert corpus.read_lines(tmp_path / "ok" / "val.en.gz") == ["val.en.gz"]

    monkeypatch.setattr(download, "SHA256", {k: "0" * 64 for k in payload})
    with pytest.raises(TrainError, match="SHA-256"):
        download.download_multi30k(tmp_path / "bad", ("de", "en"))
    assert not list((tmp_path / "bad").glob("*"))


def test_download_rejects_languages_multi30k_lacks(tmp_path):
    with pytest.raises(TrainError, match="no language xx"):
        download.download_multi30k(tmp_path, ("de", "xx"))


# ----- the demo corpus -----
def test_demo_corpus_is_deterministic_and_held_out_splits_are_new():
    a, b = demo_corpus.generate(seed=3, sizes={"train": 300, "val": 40, "test": 40}), \
        demo_corpus.generate(seed=3, sizes={"train": 300, "val": 40, "test": 40})
    assert a == b
    assert demo_corpus.generate(seed=4, sizes={"train": 300, "val": 40, "test": 40}) != a
    train = set(a["train"][0])
    assert not train & set(a["val"][0]) and not train & set(a["test"][0])


def test_demo_target_reorders_the_source():
    """Verb last with its tense suffix, object marked by `ke`, subject adjectives mirrored after the noun."""
    forms = {}
    for third, base, past, stem in demo_corpus.VERBS:
        forms.update({third: stem + "a", base: stem + "a", past: stem + "eti"})
    adjectives = dict(demo_corpus.ADJECTIVES)
    src, tgt = demo_corpus.generate(seed=0, sizes={"train": 200, "val": 1, "test": 1})["train"]
    for en, toy in zip(src, tgt):
        en_words, toy_words = en.rstrip(".").lower().split(), toy.rstrip(".").lower().split()
        verb = next(w for w in en_words if w in forms)
        assert toy_words[-2:] == ["ke", forms[verb]]
        subject_adjectives = [adjectives[w] for w in en_words[1:en_words.index(verb)] if w in adjectives]
        assert toy_words[1:1 + len(subject_adjectives)] == subject_adjectives[::-1]
        assert en[0].isupper() and toy[0].isupper() and toy.endswith(".")


# ----- tokenizer -----
@pytest.fixture(scope="module")
def demo_tokenizer(tmp_path_factory):
    src, tgt = demo_corpus.generate(seed=0, sizes={"train": 500, "val": 1, "test": 1})["train"]
    path = tmp_path_factory.mktemp("tok") / "spm.model"
    return train_tokenizer(src + tgt, path, vocab_size=150), src, tgt


def test_tokenizer_special_ids_and_round_trip(demo_tokenizer):
    (tok, note), src, tgt = demo_tokenizer
    assert note is None and tok.vocab_size == 150
    assert [tok.sp.id_to_piece(i) for i in (PAD_ID, UNK_ID, BOS_ID, EOS_ID)] == ["<pad>", "<unk>", "<s>", "</s>"]
    ids = tok.encode(src[:20] + tgt[:20])
    assert all(min(seq) > EOS_ID for seq in ids)
    assert tok.decode(ids) == src[:20] + tgt[:20]
    assert Tokenizer(tok.path).encode(["The big dog."]) == tok.encode(["The big dog."])


def test_tokenizer_vocab_is_capped_for_a_small_corpus_and_too_small_is_an_error(demo_tokenizer, tmp_path):
    _, src, tgt = demo_tokenizer
    tok, note = train_tokenizer(src + tgt, tmp_path / "big.model", vocab_size=8000)
    assert tok.vocab_size < 8000 and f"capped at {tok.vocab_size}" in note
    with pytest.raises(TrainError, match="--vocab-size 10 is too small.*at least"):
        train_tokenizer(src + tgt, tmp_path / "small.model", vocab_size=10)
    with pytest.raises(TrainError, match="no tokenizer model"):
        Tokenizer(tmp_path / "missing.model")


# ----- batches -----
lengths = st.lists(st.tuples(st.integers(1, 60), st.integers(1, 60)), min_size=1, max_size=300)


@hsettings(max_examples=40)
@given(pairs=lengths, batch_tokens=st.integers(1, 2000), seed=st.integers(0, 3), epoch=st.integers(0, 3))
def test_token_batches_cover_every_sentence_once_within_the_budget(pairs, batch_tokens, seed, epoch):
    src, tgt = map(np.array, zip(*pairs))
    batches = batching.token_batches(src, tgt, batch_tokens, seed, epoch)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(pairs)))
    for b in batches:
        longest = max(src[b].max(), tgt[b].max())
        assert len(b) * longest <= batch_tokens or len(b) == 1   # a sentence longer than the budget goes alone
    again = batching.token_batches(src, tgt, batch_tokens, seed, epoch)
    assert all(np.array_equal(x, y) for x, y in zip(batches, again)) and len(batches) == len(again)


def test_token_batches_have_little_padding_and_change_each_epoch():
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(3, 40, 3000), rng.integers(3, 40, 3000)
    e0, e1 = (batching.token_batches(src, tgt, 1000, seed=1, epoch=e) for e in (0, 1))
    padded = sum(len(b) * max(src[b].max(), tgt[b].max()) for b in e0)
    assert np.maximum(src, tgt).sum() / padded > 0.9          # over 90% of the padded slots are real tokens
    assert [b.tolist() for b in e0] != [b.tolist() for b in e1]
    sizes = [len(b) * max(src[b].max(), tgt[b].max()) for b in e0]
    assert np.median(sizes) > 900                               # "about batch_tokens" each


def test_training_batch_teacher_forcing_layout():
    src, tgt_in, tgt_out = batching.training_batch([[5, 6, 7], [8]], [[9], [10, 11]])
    assert src.tolist() == [[5, 6, 7, EOS_ID], [8, EOS_ID, PAD_ID, PAD_ID]]
    assert tgt_in.tolist() == [[BOS_ID, 9, PAD_ID], [BOS_ID, 10, 11]]
    assert tgt_out.tolist() == [[9, EOS_ID, PAD_ID], [10, 11, EOS_ID]]
    assert src.dtype == tgt_in.dtype == tgt_out.dtype == np.int64
