"""Downloading Multi30k (task 1, raw text) from the dataset's official repository, github.com/multi30k/dataset.

Each file goes to a temporary name first, with a progress bar, and is renamed only after its SHA-256 matches.
Without a network the error says where to put the files by hand.
"""
import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

from tqdm import tqdm

from ..cli.errors import TrainError

BASE_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
SPLITS = ("train", "val", "test_2016_flickr")
LANGUAGES = ("cs", "de", "en", "fr")

# SHA-256 of the official gzip files (the ones with the December 2017 timestamps in their gzip headers).
SHA256 = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
}


def download_multi30k(folder, langs, timeout=30):
    """Fetch {train,val,test_2016_flickr}.{lang}.gz for each lang into folder, skipping files already there."""
    folder = Path(folder)
    unknown = [lang for lang in langs if lang not in LANGUAGES]
    if unknown:
        raise TrainError(f"Multi30k has no language {', '.join(unknown)} (it has {', '.join(LANGUAGES)}); "
                         f"use --data-dir for another corpus")
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"{split}.{lang}.gz" for split in SPLITS for lang in langs]
    for name in names:
        if not (folder / name).is_file():
            _fetch(f"{BASE_URL}/{name}", folder / name, SHA256.get(name), timeout, folder, names)


def _fetch(url, path, sha256, timeout, folder, names):
    tmp = path.with_name(path.name + ".part")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(tmp, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=f"download {path.name}") as bar:
                while chunk := response.read(1 << 16):
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, OSError) as e:
        if tmp.exists():
            tmp.unlink()
        reason = getattr(e, "reason", e)
        raise TrainError(f"Multi30k was not found locally and could not be downloaded from {url} ({reason}). "
                         f"Put the files {', '.join(names)} (from github.com/multi30k/dataset, data/task1/raw) into "
                         f"{folder} or into $MINITORCH_DATA/multi30k/, or pass --data-dir DIR") from None
    if sha256 is not None and digest.hexdigest() != sha256:
        tmp.unlink()
        raise TrainError(f"{url}: the download's SHA-256 is {digest.hexdigest()}, expected {sha256}; "
                         f"the file was discarded (a damaged download, or the repository changed)")
    if sha256 is None:
        print(f"note: no known checksum for {path.name}; its SHA-256 is {digest.hexdigest()}")
    os.replace(tmp, path)
