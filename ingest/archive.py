"""Finding runs in an archive: run folders and .tar.gz/.tgz/.zip bundles.

A run is a folder that directly holds files (a run.toml among them, or not), or a
bundle. Bundles are extracted (once, by content hash) and searched the same way.
Extraction refuses any member that would land outside its target.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tarfile
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

BUNDLE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
IGNORED_NAMES = {".DS_Store", "Thumbs.db"}


class UnsafeArchive(Exception):
    pass


@dataclass
class RunFolder:
    run_key: str  # archive-relative identity, e.g. "runs/a-baseline-t5" or "x.tar.gz!x"
    path: Path
    files: list[tuple[Path, str]] = field(default_factory=list)  # (disk path, archive-relative name)
    bundle: str | None = None

    @property
    def default_run_id(self) -> str:
        name = self.run_key.rsplit("!", 1)[-1].rstrip("/").rsplit("/", 1)[-1]
        return _strip_bundle_suffix(name) or "run"


@dataclass
class BundleProblem:
    rel_path: str
    path: Path
    message: str


def is_bundle(name: str) -> bool:
    return name.lower().endswith(BUNDLE_SUFFIXES)


def _strip_bundle_suffix(name: str) -> str:
    for suf in BUNDLE_SUFFIXES:
        if name.lower().endswith(suf):
            return name[: -len(suf)]
    return name


def extraction_dir(work_dir: Path) -> Path:
    """A folder of this process's own under `<work>/extracted`: two ingests sharing a data
    folder (other databases, same $MTABENCH_DATA) never unpack into, or remove, each
    other's files; each removes only its own."""
    return work_dir / "extracted" / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"


def discover(archive: Path, extract_root: Path) -> Iterator[RunFolder | BundleProblem]:
    """Every run of the archive; what bundle extraction wrote is removed once the walk ends."""
    archive = archive.resolve()
    try:
        yield from _walk(archive, archive, "", extract_root)
    finally:
        _remove(extract_root)


@contextlib.contextmanager
def discovered(archive: Path, extract_root: Path) -> Iterator[list[RunFolder | BundleProblem]]:
    """Every run of the archive as a list (bundles stay unpacked until the block ends)."""
    archive = archive.resolve()
    try:
        yield list(_walk(archive, archive, "", extract_root))
    finally:
        _remove(extract_root)


def _remove(extract_root: Path) -> None:
    # only this walk's own folder: its shared parent may be another ingest's at this moment
    shutil.rmtree(extract_root, ignore_errors=True)


# Bounds on what one bundle may unpack to: a few KB of zeros must not fill the disk.
# Benchmark text compresses well (a vmstat log ~160:1), zeros ~1000:1 and more.
MAX_BUNDLE_BYTES = int(os.environ.get("MTABENCH_MAX_BUNDLE_BYTES", 8 << 30))
MAX_BUNDLE_RATIO = int(os.environ.get("MTABENCH_MAX_BUNDLE_RATIO", 400))


class _Budget:
    """Counts extracted bytes against the size and compression-ratio bounds of one bundle."""

    def __init__(self, bundle: Path) -> None:
        self.packed = max(bundle.stat().st_size, 1)
        self.limit = min(MAX_BUNDLE_BYTES, self.packed * MAX_BUNDLE_RATIO)
        self.used = 0

    def declared(self, total: int) -> None:
        """Refuse up front what the bundle's own headers say is too big (liars are caught in copy)."""
        if total > self.limit:
            raise UnsafeArchive(
                f"bundle declares {total:,} bytes unpacked, more than {self.limit:,} "
                f"({MAX_BUNDLE_RATIO}x its {self.packed:,}-byte size or {MAX_BUNDLE_BYTES:,} bytes): "
                "refused as a possible decompression bomb"
            )

    def copy(self, src, dest: Path, name: str) -> None:
        with dest.open("wb") as out:
            while chunk := src.read(1 << 20):
                self.used += len(chunk)
                if self.used > self.limit:
                    raise UnsafeArchive(
                        f"bundle unpacks to more than {self.limit:,} bytes (at member {name!r}; "
                        f"limits: {MAX_BUNDLE_BYTES:,} bytes, {MAX_BUNDLE_RATIO}x its "
                        f"{self.packed:,}-byte size): refused as a possible decompression bomb"
                    )
                out.write(chunk)


def _walk(root: Path, folder: Path, prefix: str, extract_root: Path) -> Iterator[RunFolder | BundleProblem]:
    files, bundles, subdirs = [], [], []
    # scandir: the kind of each entry comes with the listing, no stat per entry
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if entry.name.startswith(".") or entry.name in IGNORED_NAMES or entry.is_symlink():
            continue
        if entry.is_dir():
            subdirs.append(folder / entry.name)
        elif entry.is_file():
            (bundles if is_bundle(entry.name) else files).append(folder / entry.name)
    rel = folder.relative_to(root).as_posix()
    key = prefix + ("" if rel == "." else rel)
    if files:
        run = RunFolder(run_key=key or root.name, path=folder, bundle=prefix.rstrip("!") or None)
        for f in files:
            run.files.append((f, f"{run.run_key}/{f.name}"))
        yield run
    for b in bundles:
        brel = prefix + b.relative_to(root).as_posix()
        try:
            target = extract_bundle(b, extract_root)
        except (UnsafeArchive, tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
            yield BundleProblem(brel, b, f"bundle not loaded: {exc}")
            continue
        top = _single_top_folder(target)
        inner = list(_walk(top, top, brel + "!", extract_root))
        if not inner:
            yield BundleProblem(brel, b, "bundle holds no files")
        for item in inner:
            if isinstance(item, RunFolder) and item.run_key == brel + "!":
                item.run_key = brel  # files at the bundle's top level: the bundle is the run
                item.files = [(p, f"{brel}/{p.name}") for p, _ in item.files]
            yield item
    for d in subdirs:
        yield from _walk(root, d, prefix, extract_root)


def _single_top_folder(path: Path) -> Path:
    """A bundle usually wraps one folder (run/...); that folder is the run."""
    entries = [e for e in path.iterdir() if not e.name.startswith(".")]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return path


def extract_bundle(bundle: Path, extract_root: Path) -> Path:
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()[:20]
    target = extract_root / digest
    if (target / ".complete").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    try:
        if bundle.name.lower().endswith(".zip"):
            _extract_zip(bundle, target)
        else:
            _extract_tar(bundle, target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    (target / ".complete").touch()
    return target


def _check_member(name: str) -> PurePosixPath:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"member {name!r} has an absolute path")
    if ".." in p.parts:
        raise UnsafeArchive(f"member {name!r} escapes the target with '..'")
    return p


def _extract_tar(bundle: Path, target: Path) -> None:
    with tarfile.open(bundle, "r:*") as tar:
        members = tar.getmembers()  # reads the whole stream: a truncated bundle fails here
        for m in members:
            _check_member(m.name)
            if m.issym() or m.islnk():
                raise UnsafeArchive(f"member {m.name!r} is a link")
            if not (m.isfile() or m.isdir()):
                raise UnsafeArchive(f"member {m.name!r} is not a regular file")
        budget = _Budget(bundle)
        budget.declared(sum(m.size for m in members))
        for m in members:
            dest = target / _check_member(m.name)
            if m.isdir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(m)
            assert src is not None  # regular files only, checked above
            budget.copy(src, dest, m.name)


def _extract_zip(bundle: Path, target: Path) -> None:
    with zipfile.ZipFile(bundle) as zf:
        infos = zf.infolist()
        for info in infos:
            _check_member(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise UnsafeArchive(f"member {info.filename!r} is a link")
        budget = _Budget(bundle)
        budget.declared(sum(i.file_size for i in infos))
        for info in infos:  # reading a member to its end checks its CRC (BadZipFile)
            dest = target / _check_member(info.filename)
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src:
                budget.copy(src, dest, info.filename)
