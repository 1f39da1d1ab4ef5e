"""Finding and reading parallel corpora: a folder of aligned splits `SPLIT.LANG` (plain or .gz), one sentence a line;
and which corpus a run reads (prepare_corpus: --data-dir, the generated demo corpus, or Multi30k).

The default corpus, Multi30k, is looked for in `$MINITORCH_DATA/multi30k/`, then in `~/.cache/minitorch/multi30k/`
(where `download.py` puts it); `--data-dir DIR` names any other folder directly.
"""
import gzip
import os
from pathlib import Path

from ..cli import memory
from ..cli.errors import TrainError
from . import demo_corpus, download

FIT_SPLITS = ("train", "val")


def cache_dir():
    """~/.cache/minitorch/multi30k: where a download of Multi30k goes."""
    return Path.home() / ".cache" / "minitorch" / "multi30k"


def default_dirs():
    """The folders searched for Multi30k when no --data-dir is given, in order."""
    dirs = []
    if os.environ.get("MINITORCH_DATA"):
        dirs.append(Path(os.environ["MINITORCH_DATA"]) / "multi30k")
    dirs.append(cache_dir())
    return dirs


def split_file(folder, split, lang):
    """The path of SPLIT.LANG or SPLIT.LANG.gz in folder, or None when neither exists."""
    for name in (f"{split}.{lang}", f"{split}.{lang}.gz"):
        path = Path(folder) / name
        if path.is_file():
            return path
    return None


def has_splits(folder, src, tgt, splits=FIT_SPLITS):
    return all(split_file(folder, s, lang) for s in splits for lang in (src, tgt))


def available_splits(folder, src, tgt):
    """The names of the splits that have both a source and a target file, e.g. ['test_2016_flickr', 'train', 'val']."""
    names = set()
    for path in Path(folder).iterdir():
        name = path.name[:-3] if path.name.endswith(".gz") else path.name
        split, _, lang = name.rpartition(".")
        if split and lang == src and split_file(folder, split, tgt):
            names.add(split)
    return sorted(names)


def find_corpus(data_dir, src, tgt, download=None):
    """The folder holding train and val for src-tgt: data_dir if given, else the Multi30k locations (downloading there
    with `download(folder, langs)` when nothing is found and download is given)."""
    if data_dir is not None:
        folder = Path(data_dir)
        if folder.is_file():
            raise TrainError(f"--data-dir {folder}: a file, not a folder; give the folder that holds train.{src}, "
                             f"train.{tgt}, val.{src} and val.{tgt}")
        if not folder.is_dir():
            raise TrainError(f"--data-dir {folder}: no such folder")
        missing = [f"{s}.{lang}[.gz]" for s in FIT_SPLITS for lang in (src, tgt) if not split_file(folder, s, lang)]
        if missing:
            raise TrainError(f"--data-dir {folder}: missing {', '.join(missing)} in {folder.resolve()} (a corpus "
                             f"folder holds aligned files SPLIT.LANG, one sentence a line)")
        return folder
    for folder in default_dirs():
        if folder.is_dir() and has_splits(folder, src, tgt):
            return folder
    if download is None:
        raise TrainError(f"Multi30k {src}-{tgt} not found in {' or '.join(map(str, default_dirs()))}")
    download(cache_dir(), (src, tgt))
    return cache_dir()


def read_lines(path):
    """The lines of a UTF-8 text file (plain or .gz), without their line ends (and without a leading BOM).

    Lines end at "\n" only (a "\r" before it is dropped), so that two aligned files split the same way.
    """
    path = Path(path)
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise TrainError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TrainError(f"{path}: is a folder, not a text file") from None
    except (gzip.BadGzipFile, EOFError, OSError) as e:
        raise TrainError(f"{path}: cannot read ({e})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise TrainError(f"{path}, line {line}: not UTF-8 text ({e.reason}: byte {data[e.start]:#04x} at byte "
                         f"{column} of the line)") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline at the end of the last line ends it; it does not start another
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def line_list(numbers, at_most=5):
    """'3, 8, 12' or '3, 8, 12, 20, 31 and 7 more': line numbers for a message."""
    shown = ", ".join(map(str, numbers[:at_most]))
    return shown + (f" and {len(numbers) - at_most} more" if len(numbers) > at_most else "")


def read_parallel(folder, split, src, tgt):
    """(source lines, target lines) of one split; TrainError naming the files if they are missing or unaligned."""
    paths = [split_file(folder, split, lang) for lang in (src, tgt)]
    for path, lang in zip(paths, (src, tgt)):
        if path is None:
            raise TrainError(f"{Path(folder) / f'{split}.{lang}'}[.gz]: no such file")
    return read_aligned(*paths)


def read_aligned(src_path, tgt_path):
    """Lines of two files that must have the same number of lines."""
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    if len(src_lines) != len(tgt_lines):
        raise TrainError(f"{src_path} has {len(src_lines)} lines but {tgt_path} has {len(tgt_lines)}; "
                         f"parallel files must be aligned line by line")
    return src_lines, tgt_lines


def recorded_folder(settings, run_dir, instead):
    """The corpus folder the run in run_dir recorded (config.json's settings.data_dir); TrainError saying what to
    give `instead` when it records none."""
    if settings.data_dir is None:
        raise TrainError(f"{Path(run_dir) / 'config.json'}: settings.data_dir is missing, so the run's corpus folder "
                         f"is not known; give {instead}")
    return Path(settings.data_dir)


def prepare_corpus(settings, run_dir, data_dir):
    """The corpus folder: --data-dir, the generated demo corpus (inside the run folder), or Multi30k."""
    if settings.data_dir is not None:  # a resumed run reads what it read before
        if data_dir is not None and Path(data_dir).resolve() != Path(settings.data_dir):
            raise TrainError(f"--resume: --data-dir {data_dir} differs from the run's {settings.data_dir}")
        return Path(settings.data_dir)
    src, tgt = settings.src, settings.tgt
    if data_dir is None and settings.corpus == "demo":
        if (src, tgt) != (demo_corpus.SRC, demo_corpus.TGT):
            raise TrainError(f"the demo corpus is {demo_corpus.SRC}->{demo_corpus.TGT}; drop --src/--tgt, or pass "
                             f"--data-dir for another corpus")
        folder = Path(run_dir) / "data"
        if not has_splits(folder, src, tgt):
            with memory.during("generating the demo corpus"):
                demo_corpus.write_demo_corpus(folder)
            print(f"generated the demo corpus in {folder}: English and `toy`, a language invented for the demo "
                  f"(see train/data/demo_corpus.py)")
        return folder.resolve()
    return find_corpus(data_dir, src, tgt, download=download.download_multi30k).resolve()
