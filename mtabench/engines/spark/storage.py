"""Where the Spark engine keeps its files, by URI: a local folder or an S3 prefix.

The only module that knows about schemes. A `Store` is a folder-like location: a local path
(or `file://`) or `s3://bucket/key` / `s3a://bucket/key` (Hadoop's name for the same objects).
The Python side reads and writes through `pyarrow.fs`; the JVM side gets `Store.uri` and the
settings of `spark_conf()`.

S3 follows the object-store model on both kinds: a directory is the prefix of the files under
it, so an empty directory does not exist and `mkdir()` only makes sure the files can be written.

S3 settings come from the environment: MTABENCH_S3_ENDPOINT (e.g. http://127.0.0.1:9000; an
http endpoint means no TLS; unset means AWS itself), AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY (unset: the SDKs' own credential chains), AWS_REGION (us-east-1).
Addressing is path-style (bucket in the path, not in the host name).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import IO
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

S3_SCHEMES = ("s3", "s3a")
SUPPORTED = "a local path, file://, s3:// or s3a://"

# What sync_from last uploaded (name -> size, sha256): S3 listings carry no content hash, and
# an ETag is an MD5 only for single-part uploads. Spark and pyarrow skip `_` files as data.
MANIFEST = "_mtabench_sync.json"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")  # two letters at least: not a drive letter
_COPY_CHUNK = 8 << 20


@dataclass(frozen=True)
class S3Settings:
    endpoint: str | None  # scheme://host:port, or None for AWS
    access_key: str | None
    secret_key: str | None
    region: str

    @classmethod
    def from_env(cls) -> S3Settings:
        endpoint = os.environ.get("MTABENCH_S3_ENDPOINT") or None
        if endpoint and (urlsplit(endpoint).scheme not in ("http", "https") or not urlsplit(endpoint).netloc):
            raise ValueError(f"MTABENCH_S3_ENDPOINT={endpoint!r}: expected http(s)://host:port")
        return cls(
            endpoint=endpoint,
            access_key=os.environ.get("AWS_ACCESS_KEY_ID") or None,
            secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY") or None,
            region=os.environ.get("AWS_REGION") or "us-east-1",
        )

    @property
    def tls(self) -> bool:
        return self.endpoint is None or urlsplit(self.endpoint).scheme != "http"


@lru_cache(maxsize=8)
def _s3_filesystem(settings: S3Settings) -> pafs.S3FileSystem:
    endpoint = urlsplit(settings.endpoint) if settings.endpoint else None
    return pafs.S3FileSystem(
        access_key=settings.access_key,
        secret_key=settings.secret_key,
        region=settings.region,
        scheme="https" if settings.tls else "http",
        endpoint_override=endpoint.netloc if endpoint else None,
        force_virtual_addressing=False,
        allow_bucket_creation=True,
        connect_timeout=10,
        request_timeout=120,
    )


@dataclass(frozen=True)
class SyncReport:
    copied: int
    kept: int
    removed: int


class Store:
    """A folder-like location; `name`s in its methods are relative, '/'-separated paths."""

    def __init__(self, kind: str, path: str):
        if kind not in ("local", "s3"):
            raise ValueError(f"unknown store kind {kind!r}")
        self._kind = kind
        self._path = path.rstrip("/") if path != "/" else path

    # -- naming -------------------------------------------------------------------------------

    @classmethod
    def from_uri(cls, uri: str | os.PathLike) -> Store:
        if isinstance(uri, Store):
            return uri
        text = os.fspath(uri)
        if not isinstance(text, str):
            raise ValueError(f"{uri!r}: a store is named by a str or a path, not bytes")
        m = _SCHEME.match(text)
        scheme = m.group(1).lower() if m else ""
        if not isinstance(uri, str) and scheme in S3_SCHEMES:
            # Path("s3a://b/k") is "s3a:/b/k": a URI that went through a Path lost its "//"
            raise ValueError(f"{text!r} is a URI turned into a path; pass the URI as a str")
        if scheme == "":
            return cls("local", os.path.abspath(text))
        # The rest is taken literally, as Hadoop's Path takes it: no %-decoding, no query or
        # fragment. A partition folder's name holds "%2F" (run_key=copy-1%2Frun), and
        # from_uri(store.uri) must be that store again.
        rest = text[m.end() :]
        if rest.startswith("//"):
            netloc, _, path = rest[2:].partition("/")
        else:
            netloc, path = "", rest
        if scheme == "file":
            if netloc not in ("", "localhost"):
                raise ValueError(f"{text!r}: file:// URIs name this machine (file:///path)")
            return cls("local", os.path.abspath("/" + path.lstrip("/")))
        if scheme in S3_SCHEMES:
            if not netloc:
                raise ValueError(f"{text!r}: an S3 URI names a bucket (s3a://bucket/key)")
            key = path.strip("/")
            return cls("s3", f"{netloc}/{key}" if key else netloc)
        raise ValueError(
            f"{text!r}: unsupported scheme {scheme!r}; a store is {SUPPORTED} "
            "(a local name with a colon: write it as ./name)"
        )

    @property
    def is_local(self) -> bool:
        return self._kind == "local"

    @property
    def path(self) -> str:
        """The path within `fs`: an absolute local path, or bucket/key."""
        return self._path

    @property
    def fs(self) -> pafs.FileSystem:
        if self.is_local:
            return pafs.LocalFileSystem()
        return _s3_filesystem(S3Settings.from_env())

    @property
    def uri(self) -> str:
        """The JVM's (Spark's, Hadoop's) name of this location."""
        return self._path if self.is_local else f"s3a://{self._path}"

    @property
    def bucket(self) -> str | None:
        return None if self.is_local else self._path.split("/", 1)[0]

    def child(self, *parts: str) -> Store:
        names = [p for part in parts for p in str(part).split("/") if p not in ("", ".")]
        if ".." in names:
            raise ValueError(f"{parts!r}: a child of {self.uri} cannot climb out of it")
        return Store(self._kind, "/".join([self._path.rstrip("/"), *names])) if names else self

    @property
    def name(self) -> str:
        """The last part of the path: "" for a bucket or the root."""
        if self.is_local:
            return os.path.basename(self._path)
        return self._path.rpartition("/")[2] if "/" in self._path else ""

    @property
    def parent(self) -> Store:
        """The folder holding this one; a bucket and the root are their own parent."""
        if self.is_local:
            return Store("local", os.path.dirname(self._path))
        return Store("s3", self._path.rpartition("/")[0]) if "/" in self._path else self

    def _full(self, name: str) -> str:
        return self.child(name).path

    def __truediv__(self, name: str) -> Store:
        return self.child(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Store) and (self._kind, self._path) == (other._kind, other._path)

    def __hash__(self) -> int:
        return hash((self._kind, self._path))

    def __repr__(self) -> str:
        return f"Store({self.uri!r})"

    def __str__(self) -> str:
        return self.uri

    def __reduce__(self):
        # by name: a Spark executor rebuilds the file system from its own environment
        return (Store, (self._kind, self._path))

    # -- folders ------------------------------------------------------------------------------

    def _info(self, path: str | None = None) -> pafs.FileInfo:
        return self.fs.get_file_info(path or self._path)

    def _listing(self, recursive: bool) -> list[pafs.FileInfo]:
        selector = pafs.FileSelector(self._path, recursive=recursive, allow_not_found=True)
        try:
            return self.fs.get_file_info(selector)
        except NotADirectoryError:
            return []

    def exists(self) -> bool:
        """A file here, or a directory with a file somewhere below."""
        info = self._info()
        if info.type == pafs.FileType.File:
            return True
        if info.type != pafs.FileType.Directory:
            return False
        if self.is_local:
            return any(files for _, _, files in os.walk(self._path))
        # a prefix is listed as a directory only when files are below it; a bucket always is
        return "/" in self._path or bool(self._listing(False))

    def is_file(self) -> bool:
        return self._info().type == pafs.FileType.File

    def mkdir(self) -> None:
        """Make sure files can be written below: the folders, or the bucket."""
        if self.is_local:
            os.makedirs(self._path, exist_ok=True)
        elif self._info(self.bucket).type == pafs.FileType.NotFound:
            self.fs.create_dir(self.bucket, recursive=False)

    def delete_dir(self) -> None:
        """Everything under this location, recursively; nothing there is fine."""
        if self.is_local:
            shutil.rmtree(self._path, ignore_errors=True)
        elif self._info(self.bucket).type == pafs.FileType.NotFound:
            return
        elif "/" not in self._path:  # a whole bucket: its objects, not the bucket
            self.fs.delete_dir_contents(self._path, missing_dir_ok=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.fs.delete_dir(self._path)

    def list_dirs(self) -> list[str]:
        """The names of the directories right below (those holding files)."""
        dirs = [i.base_name for i in self._listing(False) if i.type == pafs.FileType.Directory]
        if self.is_local:
            dirs = [d for d in dirs if self.child(d).exists()]
        return sorted(dirs)

    def files(self, suffix: str = "") -> list[str]:
        """Every file below (relative names, '/'-separated, sorted), but the sync manifest."""
        base = len(self._path.rstrip("/")) + 1
        names = (
            i.path[base:]
            for i in self._listing(True)
            if i.type == pafs.FileType.File and i.path.endswith(suffix)
        )
        return sorted(n for n in names if n != MANIFEST)

    def _sizes(self) -> dict[str, int]:
        base = len(self._path.rstrip("/")) + 1
        return {i.path[base:]: i.size for i in self._listing(True) if i.type == pafs.FileType.File}

    # -- files --------------------------------------------------------------------------------

    def open_input(self, name: str) -> pa.NativeFile:
        return self.fs.open_input_stream(self._full(name))

    def open_output(self, name: str) -> pa.NativeFile:
        """A stream that writes `name` (its folders made as needed); on S3 the object
        appears whole when the stream closes."""
        path = self._full(name)
        if self.is_local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        return self.fs.open_output_stream(path)

    def download(self, name: str, local: Path) -> Path:
        local = Path(local)
        local.parent.mkdir(parents=True, exist_ok=True)
        with self.open_input(name) as src, open(local, "wb") as dst:
            _copy(src, dst)
        return local

    def upload(self, local: Path, name: str) -> None:
        """`local` as `name`; a reader sees the old file or the new one whole, never a part."""
        if self.is_local:
            final = self._full(name)
            tmp = f"{os.path.dirname(final)}/.{os.path.basename(final)}.uploading"
            os.makedirs(os.path.dirname(final), exist_ok=True)
            shutil.copyfile(local, tmp)
            os.replace(tmp, final)
            return
        with open(local, "rb") as src, self.open_output(name) as dst:
            _copy(src, dst)

    def sync_from(self, local_dir: Path) -> SyncReport:
        """Mirror the files of `local_dir` here: a file whose size and SHA-256 match what the
        last sync uploaded (and which is still here with that size) is kept, the others are
        uploaded; files here that are gone locally are deleted."""
        local_dir = Path(local_dir)
        wanted = {
            p.relative_to(local_dir).as_posix(): p
            for p in sorted(local_dir.rglob("*"))
            if p.is_file() and p.name != MANIFEST
        }
        before = self._read_manifest()
        present = self._sizes()
        after: dict[str, list] = {}
        copied = kept = 0
        for name, path in wanted.items():
            size = path.stat().st_size
            entry = [size, _sha256(path)]
            if before.get(name) == entry and present.get(name) == size:
                kept += 1
            else:
                self.upload(path, name)
                copied += 1
            after[name] = entry
        gone = sorted(n for n in present if n not in wanted and n != MANIFEST)
        if gone:
            for name in gone:
                self.fs.delete_file(self._full(name))
            if self.is_local:
                _prune_empty_dirs(Path(self._path))
        if after != before or MANIFEST not in present:
            with self.open_output(MANIFEST) as f:
                f.write(json.dumps(after, sort_keys=True).encode())
        return SyncReport(copied=copied, kept=kept, removed=len(gone))

    def _read_manifest(self) -> dict[str, list]:
        try:
            with self.open_input(MANIFEST) as f:
                return json.loads(f.read())
        except (FileNotFoundError, ValueError):
            return {}

    # -- Parquet ------------------------------------------------------------------------------

    def parquet_reader(self, hive: bool = True, batch_size: int = 64 * 1024) -> pa.RecordBatchReader:
        """Every *.parquet file below as one stream of record batches (not loaded whole), with
        the Hive partition columns (`key=value` folders) as strings, last; the schema is the
        union of all the files'. Raises FileNotFoundError when there is no Parquet file."""
        names = [n for n in self.files(".parquet") if not _hidden(n)]
        if not names:
            raise FileNotFoundError(f"no Parquet file under {self.uri}")
        options = ds.FileSystemFactoryOptions(partition_base_dir=self._path)
        if hive:
            keys = _partition_keys(names)
            options.partitioning = ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive")
        # Spark writes timestamps as INT96; read them as microseconds, as DuckDB's own reader
        # does (TIMESTAMP, not TIMESTAMP_NS)
        fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
        factory = ds.FileSystemDatasetFactory(self.fs, [self._full(n) for n in names], fmt, options)
        dataset = factory.finish(factory.inspect(fragments=None))
        return dataset.scanner(batch_size=batch_size).to_reader()

    # -- Delta ------------------------------------------------------------------------------

    def delta_reader(self, batch_size: int = 64 * 1024) -> pa.RecordBatchReader | None:
        """The current version of the Delta table here as a stream of record batches (None when
        this is no Delta table): only the files that version lists, never those an overwrite
        or a delete left behind. Timestamps come as Spark wrote them (UTC, no zone), as
        DuckDB's TIMESTAMP."""
        from deltalake import DeltaTable

        uri, options = self._delta_location()
        if not DeltaTable.is_deltatable(uri, options):
            return None
        table = DeltaTable(uri, storage_options=options)
        fmt = ds.ParquetReadOptions(coerce_int96_timestamp_unit="us")
        dataset = table.to_pyarrow_dataset(parquet_read_options=fmt)
        schema = pa.schema(
            [
                f.with_type(pa.timestamp(f.type.unit)) if pa.types.is_timestamp(f.type) and f.type.tz else f
                for f in dataset.schema
            ]
        )
        batches = (b.cast(schema) for b in dataset.to_batches(batch_size=batch_size))
        return pa.RecordBatchReader.from_batches(schema, batches)

    def _delta_location(self) -> tuple[str, dict[str, str]]:
        """delta-rs's name of this location and its storage options (S3Settings)."""
        if self.is_local:
            return self._path, {}
        s3 = S3Settings.from_env()
        options = {"AWS_REGION": s3.region, "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false"}
        if s3.endpoint:
            options["AWS_ENDPOINT_URL"] = s3.endpoint
            if not s3.tls:
                options["AWS_ALLOW_HTTP"] = "true"
        if s3.access_key and s3.secret_key:
            options["AWS_ACCESS_KEY_ID"] = s3.access_key
            options["AWS_SECRET_ACCESS_KEY"] = s3.secret_key
        return f"s3://{self._path}", options


def _hidden(name: str) -> bool:
    """Spark's and pyarrow's rule: a file or folder whose name starts with _ or . is no data."""
    return any(part.startswith(("_", ".")) for part in name.split("/"))


def _partition_keys(names: list[str]) -> list[str]:
    """The Hive keys of the folders, outermost first (every file has the same ones)."""
    keys: list[str] = []
    for name in names:
        for part in PurePosixPath(name).parts[:-1]:
            k, eq, _ = part.partition("=")
            if eq and k not in keys:
                keys.append(k)
    return keys


def _copy(src: IO[bytes], dst: IO[bytes]) -> None:
    while chunk := src.read(_COPY_CHUNK):
        dst.write(chunk)


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _prune_empty_dirs(root: Path) -> None:
    for folder, _, _ in sorted(os.walk(root), key=lambda w: -len(w[0])):
        if folder != str(root):
            with contextlib.suppress(OSError):  # not empty
                os.rmdir(folder)


# -- the JVM side ----------------------------------------------------------------------------


def hadoop_version() -> str:
    """The Hadoop pyspark bundles (hadoop-aws must match it), from its client jar's name."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    found = sorted(jars.glob("hadoop-client-api-*.jar"))
    if not found:
        raise FileNotFoundError(f"no hadoop-client-api-*.jar in {jars}")
    return found[0].name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def cache_dir() -> Path:
    """Downloads kept outside the clone, so a fresh clone reuses them."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(os.environ.get("MTABENCH_CACHE") or Path(base) / "mtabench")


S3_ENV = ("MTABENCH_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")


def spark_conf(*stores: Store | str | os.PathLike) -> dict[str, str]:
    """The settings a SparkSession needs to read and write `stores` (empty when all are local):
    the S3A connector matching pyspark's Hadoop, the endpoint, path-style addressing, the
    credentials, and the same environment for the Python code in executors."""
    if all(Store.from_uri(s).is_local for s in stores):
        return {}
    s3 = S3Settings.from_env()
    conf = {
        "spark.jars.packages": f"org.apache.hadoop:hadoop-aws:{hadoop_version()}",
        "spark.jars.ivy": str(cache_dir() / "ivy"),
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": str(s3.tls).lower(),
        "spark.hadoop.fs.s3a.endpoint.region": s3.region,
        # no "Expect: 100-continue": with it, 15 of 150 HEADs that followed a directory
        # marker's empty PUT got a bare 400 from s3s-fs (the request never reached its S3
        # layer) and failed the write; without it, 0 of 150
        "spark.hadoop.fs.s3a.connection.expect.continue": "false",
    }
    if s3.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = s3.endpoint
    if s3.access_key and s3.secret_key:
        conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        )
        conf["spark.hadoop.fs.s3a.access.key"] = s3.access_key
        conf["spark.hadoop.fs.s3a.secret.key"] = s3.secret_key
    for name in S3_ENV:
        if value := os.environ.get(name):
            conf[f"spark.executorEnv.{name}"] = value
    return conf
