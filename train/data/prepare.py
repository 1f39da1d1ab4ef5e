"""Where a run's corpus comes from: --data-dir, the generated demo corpus (inside the run folder), or Multi30k
(found in the usual folders, else downloaded)."""
from pathlib import Path

from ..cli.errors import TrainError
from . import corpus, demo_corpus, download


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
        if not corpus.has_splits(folder, src, tgt):
            demo_corpus.write_demo_corpus(folder)
            print(f"generated the demo corpus in {folder}: English and `toy`, a language invented for the demo "
                  f"(see train/data/demo_corpus.py)")
        return folder.resolve()
    return corpus.find_corpus(data_dir, src, tgt, download=download.download_multi30k).resolve()
