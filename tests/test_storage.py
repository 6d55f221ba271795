"""Storage by URI (mtabench/engines/spark/storage.py): a local folder and an S3 prefix on a real
S3-compatible server (tests/s3_server.py) behave the same for every operation, and Spark
reads and writes `s3a://` through spark_conf().

Oracles: the bytes and names the tests write; for the bucket, pyarrow's S3FileSystem built by
the test server module and the files s3s-fs keeps under its data folder (not the Store); for
the local folder, os.walk.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from s3_server import S3Server, running_server, script_env

from mtabench.engines.spark.storage import MANIFEST, Store, spark_conf

REPO = Path(__file__).resolve().parents[1]


# -- the server -------------------------------------------------------------------------------


def test_server_script(s3_server):
    """Generated credentials are private; start again is the running server; env is what a
    client needs; install is skipped when the binary is there."""
    assert (s3_server.home / "credentials").stat().st_mode & 0o777 == 0o600
    env = script_env(s3_server.home)

    def run(*args: str) -> subprocess.CompletedProcess:
        cmd = ["bash", str(REPO / "scripts" / "s3_server.sh"), *args]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    assert run("start").stdout.strip() == s3_server.endpoint
    exports = dict(shlex.split(line)[1].split("=", 1) for line in run("env").stdout.splitlines())
    assert exports == s3_server.env
    install = run("install")
    assert install.returncode == 0 and install.stderr == ""  # nothing built
    assert run("status").returncode == 0


def test_keys_that_start_with_a_dash(s3_server, tmp_path):
    """A user's key or secret may start with "-" (a generated url-safe secret can): the server
    still starts with it, and a client signing with it is let in."""
    key, secret = "-Kmtabench", "-Usecret" + "x" * 24
    with running_server(tmp_path, key, secret) as server:
        server.fs().create_dir("dash")
        assert (tmp_path / "data" / "dash").is_dir()
        wrong = S3Server(tmp_path, server.endpoint, key, secret + "y")
        with pytest.raises(OSError):
            wrong.fs().create_dir("refused")
        assert not (tmp_path / "data" / "refused").exists()


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri", ["hdfs://nn/landing", "gs://bucket/landing", "http://host/x", "abfss://c@a/x"]
)
def test_an_unsupported_scheme_is_refused_not_made_a_folder(uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as err:
        Store.from_uri(uri)
    assert uri in str(err.value) and "s3a://" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_a_uri_that_went_through_a_path_is_refused():
    # Path() collapses "//": Path("s3a://bucket/landing") is s3a:/bucket/landing
    with pytest.raises(ValueError, match="pass the URI as a str"):
        Store.from_uri(Path("s3a://bucket/landing"))


def test_local_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Store.from_uri("landing").uri == str(tmp_path / "landing")
    assert Store.from_uri(tmp_path / "x").path == str(tmp_path / "x")
    assert Store.from_uri(f"file://{tmp_path}/x") == Store.from_uri(tmp_path / "x")
    assert Store.from_uri("./odd:name").uri == str(tmp_path / "odd:name")
    store = Store.from_uri("landing")
    assert store.is_local and store.child("a", "b/c").uri == str(tmp_path / "landing" / "a" / "b" / "c")
    with pytest.raises(ValueError):
        store.child("../out")


def test_s3_and_s3a_are_one_name():
    a, b = Store.from_uri("s3a://bucket/land/x"), Store.from_uri("s3://bucket/land/x/")
    assert a == b and not a.is_local
    assert (a.uri, a.path, a.bucket) == ("s3a://bucket/land/x", "bucket/land/x", "bucket")
    assert a.child("t", "run_key=1").uri == "s3a://bucket/land/x/t/run_key=1"


def test_a_uri_names_its_store_again_whatever_the_key_holds():
    """Spark names a partition folder run_key=copy-1%2Frun: the "%2F" is three characters of
    the key, as Hadoop's Path takes it, not a "/" to decode."""
    for uri in ("s3a://b/landing/run_key=copy-1%2Frun/input", "/tmp/landing/run_key=copy-1%2Frun"):
        store = Store.from_uri(uri)
        assert store.uri == uri and "%2F" in store.name + store.parent.name
        assert Store.from_uri(store.uri) == store and store.parent.child(store.name) == store
    for bad in ("s3a:bucket/key", "s3a:///key"):
        with pytest.raises(ValueError, match="names a bucket"):
            Store.from_uri(bad)


def test_a_key_with_a_percent_is_one_object(s3_env):
    bucket = s3_env.new_bucket()
    folder = Store.from_uri(f"s3a://{bucket}/landing").child("run_key=copy-1%2Frun")
    with folder.open_output("input") as f:
        f.write(b"one object")
    staged = Store.from_uri(folder.child("input").uri)
    with staged.parent.open_input(staged.name) as f:
        assert f.read() == b"one object"
    assert s3_env.objects(f"{bucket}/landing") == {"run_key=copy-1%2Frun/input": b"one object"}


def test_parent_and_name():
    s3 = Store.from_uri("s3a://bucket/land/x")
    assert (s3.parent.uri, s3.name) == ("s3a://bucket/land", "x")
    assert s3.parent.parent.parent == Store.from_uri("s3a://bucket")
    assert Store.from_uri("s3a://bucket").parent == Store.from_uri("s3a://bucket")
    assert Store.from_uri("s3a://bucket").name == ""
    local = Store.from_uri("/tmp/a/b.gz")
    assert (local.parent.uri, local.name) == ("/tmp/a", "b.gz")
    assert Store.from_uri("/").parent == Store.from_uri("/")
    for store in (s3, local):
        assert store.parent.child(store.name) == store


def test_copy_warehouse_from_a_bucket_leaves_no_stream_behind(s3_env):
    """Marts and seeds gathered from an S3 warehouse: every row read, and the Arrow streams
    the gather registers are gone after it."""
    from mtabench.engines.spark.engine import copy_warehouse

    bucket = s3_env.new_bucket()
    fs = s3_env.fs()
    tables = {
        "main.db/runs": pa.table({"run_id": ["r1", "r2"], "n": [1, 2]}),
        "main.db/minutes": pa.table({"run_id": ["r1"] * 3, "minute": [0, 1, 2]}),
        "reference.db/student_t": pa.table({"df": [1, 2], "t": [12.7, 4.3]}),
    }
    for folder, table in tables.items():
        with fs.open_output_stream(f"{bucket}/wh/{folder}/part-00000.parquet") as f:
            pq.write_table(table, f)
    con = duckdb.connect()
    copy_warehouse(con, Store.from_uri(f"s3a://{bucket}/wh"))
    for folder, table in tables.items():
        name = folder.replace(".db/", ".")
        assert con.execute(f"select * from {name} order by all").to_arrow_table().equals(table)
    assert con.execute("select view_name from duckdb_views() where not internal").fetchall() == []


def test_s3_and_s3a_reach_the_same_objects(s3_env):
    bucket = s3_env.new_bucket()
    with Store.from_uri(f"s3://{bucket}/p").open_output("a/f.txt") as f:
        f.write(b"written as s3")
    with Store.from_uri(f"s3a://{bucket}/p").open_input("a/f.txt") as f:
        assert f.read() == b"written as s3"
    assert s3_env.objects(f"{bucket}/p") == {"a/f.txt": b"written as s3"}


def test_spark_conf_only_for_s3(s3_env):
    assert spark_conf(Store.from_uri("/tmp/a"), "/tmp/b") == {}
    conf = spark_conf(Store.from_uri("/tmp/a"), Store.from_uri("s3a://b/k"))
    jars = Path(pytest.importorskip("pyspark").__file__).parent / "jars"
    (client,) = jars.glob("hadoop-client-api-*.jar")
    version = client.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    assert conf["spark.jars.packages"] == f"org.apache.hadoop:hadoop-aws:{version}"
    assert not Path(conf["spark.jars.ivy"]).is_relative_to(REPO)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == s3_env.endpoint
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"  # http endpoint
    assert conf["spark.hadoop.fs.s3a.access.key"] == s3_env.access_key
    assert conf["spark.executorEnv.AWS_SECRET_ACCESS_KEY"] == s3_env.secret_key


# -- the same behaviour on both kinds ---------------------------------------------------------


@pytest.fixture(params=["local", "s3", "s3-bucket"])
def store(request, tmp_path) -> Store:
    """A local folder, a prefix in a bucket, a whole bucket."""
    if request.param == "local":
        return Store.from_uri(tmp_path / "store")
    bucket = request.getfixturevalue("s3_env").new_bucket()
    return Store.from_uri(f"s3a://{bucket}/store" if request.param == "s3" else f"s3://{bucket}")


def listed(store: Store, request) -> dict[str, bytes]:
    """What is really under `store`, seen without the Store."""
    if store.is_local:
        root = Path(store.path)
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }
    return request.getfixturevalue("s3_env").objects(store.path)


def backing_inode(store: Store, name: str, request) -> int:
    if store.is_local:
        return os.stat(Path(store.path) / name).st_ino
    return os.stat(request.getfixturevalue("s3_env").backing_file(f"{store.path}/{name}")).st_ino


def test_every_operation(store, tmp_path, request):
    assert not store.exists() and store.files() == [] and store.list_dirs() == []
    store.delete_dir()  # nothing there is fine
    store.mkdir()
    assert not store.exists()  # a directory is the prefix of its files
    big = os.urandom(12 << 20)  # past one part: a multipart upload on S3
    (tmp_path / "big.bin").write_bytes(big)
    with store.open_output("a/b/one.txt") as f:
        f.write(b"one")
    store.upload(tmp_path / "big.bin", "a/big.bin")
    store.upload(tmp_path / "big.bin", "c/d/e/big.bin")

    assert listed(store, request) == {"a/b/one.txt": b"one", "a/big.bin": big, "c/d/e/big.bin": big}
    assert store.exists() and store.child("a").exists() and store.child("a/b/one.txt").is_file()
    assert not store.child("a/b").is_file() and not store.child("zz").exists()
    assert store.list_dirs() == ["a", "c"] and store.child("a").list_dirs() == ["b"]
    assert store.files() == ["a/b/one.txt", "a/big.bin", "c/d/e/big.bin"]
    assert store.files(".txt") == ["a/b/one.txt"] and store.child("c").files() == ["d/e/big.bin"]
    with store.open_input("a/b/one.txt") as f:
        assert f.read() == b"one"
    assert store.download("a/big.bin", tmp_path / "got" / "big.bin").read_bytes() == big

    store.child("a", "b").delete_dir()
    assert store.child("a").list_dirs() == [] and not store.child("a/b").exists()
    store.child("c").delete_dir()
    assert listed(store, request) == {"a/big.bin": big} and store.list_dirs() == ["a"]
    store.delete_dir()
    assert not store.exists() and listed(store, request) == {} and store.files() == []


def test_sync_from_copies_only_what_changed(store, tmp_path, request):
    src = tmp_path / "landing"
    files = {
        "t/run_key=a/part-0.parquet": b"aaaa",
        "t/run_key=b/part-0.parquet": b"bbbb",
        "t/run_key=b/part-1.parquet": b"b1",
        "u/run_key=a/part-0.parquet": b"uuuu",
    }
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)

    first = store.sync_from(src)
    assert (first.copied, first.kept, first.removed) == (4, 0, 0)
    seen = listed(store, request)
    assert {k: v for k, v in seen.items() if k != MANIFEST} == files
    inodes = {name: backing_inode(store, name, request) for name in files}

    again = store.sync_from(src)
    assert (again.copied, again.kept, again.removed) == (0, 4, 0)
    assert {name: backing_inode(store, name, request) for name in files} == inodes  # not rewritten

    (src / "t/run_key=a/part-0.parquet").write_bytes(b"AAAA")  # same size, other bytes
    (src / "t/run_key=b/part-1.parquet").unlink()
    third = store.sync_from(src)
    assert (third.copied, third.kept, third.removed) == (1, 2, 1)
    files["t/run_key=a/part-0.parquet"] = b"AAAA"
    del files["t/run_key=b/part-1.parquet"]
    assert {k: v for k, v in listed(store, request).items() if k != MANIFEST} == files
    assert backing_inode(store, "u/run_key=a/part-0.parquet", request) == inodes["u/run_key=a/part-0.parquet"]

    (src / "u/run_key=a/part-0.parquet").unlink()  # a whole folder gone
    assert store.sync_from(src).removed == 1
    assert store.list_dirs() == ["t"] and store.files() == [
        "t/run_key=a/part-0.parquet",
        "t/run_key=b/part-0.parquet",
    ]


def test_parquet_reader_streams_every_file_with_hive_columns_as_strings(store):
    def put(name: str, table: pa.Table) -> None:
        with store.open_output(name) as f:
            pq.write_table(table, f)

    put("t/run_key=007/part-0.parquet", pa.table({"n": pa.array(range(1000), pa.int64())}))
    put("t/run_key=007/part-1.parquet", pa.table({"n": pa.array([5000], pa.int64()), "s": ["x"]}))
    put("t/run_key=r%2F1/part-0.parquet", pa.table({"n": pa.array([7, 8], pa.int64())}))
    put("t/run_key=__schema__/part-0.parquet", pa.table({"n": pa.array([], pa.int64())}))
    with store.open_output("t/_SUCCESS") as f:
        f.write(b"")
    put("t/_temporary/0/part-9.parquet", pa.table({"n": pa.array([-1], pa.int64())}))  # no data

    reader = store.child("t").parquet_reader(batch_size=100)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.field("run_key").type == pa.string()
    con = duckdb.connect()
    con.execute("create table t as select * from reader")  # DuckDB pulls the batches
    got = con.execute("select run_key, count(*), sum(n), count(s) from t group by 1 order by 1").fetchall()
    assert got == [("007", 1001, sum(range(1000)) + 5000, 1), ("r/1", 2, 15, 0)]

    plain = store.child("t/run_key=007").parquet_reader(hive=False).read_all()
    assert plain.num_rows == 1001 and "run_key" not in plain.column_names
    with pytest.raises(FileNotFoundError):
        store.child("nothing").parquet_reader()


def test_delta_reader_reads_the_current_version_only(store):
    """A Delta table overwritten and deleted from keeps its old files: the reader streams what
    the current version lists (delta-rs, with the store's S3 settings), timestamps without a
    zone as DuckDB's TIMESTAMP; a folder without a Delta log is None."""
    from deltalake import DeltaTable, write_deltalake

    table = store.child("main.db/runs")
    uri, options = table._delta_location()
    options = {**options, "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}  # one writer: this test
    at = pa.array([0, 60_000_000], pa.timestamp("us", tz="UTC"))
    write_deltalake(uri, pa.table({"run_id": ["old", "gone"], "ts": at}), storage_options=options)
    write_deltalake(
        uri, pa.table({"run_id": ["r1", "r2"], "ts": at}), mode="overwrite", storage_options=options
    )
    write_deltalake(uri, pa.table({"run_id": ["r3"], "ts": at[:1]}), mode="append", storage_options=options)
    DeltaTable(uri, storage_options=options).delete("run_id = 'r2'")
    assert len(table.files(".parquet")) > len(DeltaTable(uri, storage_options=options).file_uris())

    reader = table.delta_reader(batch_size=1)
    assert reader.schema.field("ts").type == pa.timestamp("us")
    con = duckdb.connect()
    con.execute("create table t as select * from reader")
    assert con.execute("select run_id, cast(ts as varchar) from t order by 1").fetchall() == [
        ("r1", "1970-01-01 00:00:00"),
        ("r3", "1970-01-01 00:00:00"),
    ]
    assert con.execute(
        "select data_type from information_schema.columns where column_name = 'ts'"
    ).fetchall() == [("TIMESTAMP",)]
    with table.parent.child("plain").open_output("part-0.parquet") as f:
        pq.write_table(pa.table({"n": [1]}), f)
    assert table.parent.child("plain").delta_reader() is None


# -- Spark ------------------------------------------------------------------------------------

SPARK_ROUND_TRIP = r"""
import json, os, sys
from mtabench.engines.spark.session import session_conf
from mtabench.engines.spark.storage import S3_ENV, Store, spark_conf

uri = sys.argv[1]
store = Store.from_uri(uri)
conf = {**session_conf(), **spark_conf(store)}
for name in S3_ENV:  # from here on only the conf tells the JVM and the executors where S3 is
    os.environ.pop(name)
from pyspark.sql import SparkSession

builder = SparkSession.builder.master("local[1]").appName("storage-test")
for k, v in conf.items():
    builder = builder.config(k, v)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
rows = json.loads(sys.stdin.read())
df = spark.createDataFrame([tuple(r) for r in rows], "id long, run_key string, v string")
df.write.mode("overwrite").partitionBy("run_key").parquet(uri)
back = sorted([r.id, r.run_key, r.v] for r in spark.read.parquet(uri).collect())


def count_in_executor(batches):
    import pyarrow as pa
    from mtabench.engines.spark.storage import Store
    for _ in batches:
        yield pa.RecordBatch.from_pylist([{"n": len(Store.from_uri(uri).files(".parquet"))}])


seen = spark.range(1, numPartitions=1).mapInArrow(count_in_executor, "n long").collect()[0]["n"]
spark.stop()
print(json.dumps({"rows": back, "executor_files": seen}))
"""


@pytest.mark.xdist_group("spark")
def test_spark_writes_and_reads_s3a(s3_env, request):
    bucket = s3_env.new_bucket()
    store = Store.from_uri(f"s3a://{bucket}/spark/t")
    rows = [[i, ("007", "r/1", "plain")[i % 3], f"v{i}"] for i in range(60)]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    p = subprocess.run(
        [sys.executable, "-c", SPARK_ROUND_TRIP, store.uri],
        input=json.dumps(rows),
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-6000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["rows"] == sorted(rows)

    objects = s3_env.objects(store.path)
    parts = sorted(k for k in objects if k.endswith(".parquet"))
    assert "_SUCCESS" in objects and not any(k.startswith("_temporary") for k in objects)
    assert {k.split("/")[0] for k in parts} == {"run_key=007", "run_key=r%2F1", "run_key=plain"}
    assert out["executor_files"] == len(parts)  # the Python executor reached the bucket

    con = duckdb.connect()
    reader = store.parquet_reader()  # noqa: F841 (DuckDB reads the Python variable by name)
    con.execute("create table t as select * from reader")
    got = con.execute("select id, run_key, v from t order by id").fetchall()
    assert [list(r) for r in got] == sorted(rows)


def test_a_spark_builds_inputs_change_with_any_landing_file_and_storage_root(tmp_path):
    """build_inputs decides whether a Spark build is skipped: the same files give the same
    digest; a rewritten, added or removed landing file, or another storage root, another."""
    from mtabench.engines.spark.engine import Layout, build_inputs

    landing = tmp_path / "landing"
    part = landing / "runs" / "run_key=a" / "data_0.parquet"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"one")
    local = Layout(Store.from_uri(str(tmp_path / "spark")), Store.from_uri(str(landing)))
    first = build_inputs(landing, local)
    assert build_inputs(landing, local) == first
    seen = {first}
    os.utime(part, ns=(part.stat().st_atime_ns, part.stat().st_mtime_ns + 1))  # rewritten, same size
    seen.add(build_inputs(landing, local))
    other = landing / "runs" / "run_key=b" / "data_0.parquet"
    other.parent.mkdir()
    other.write_bytes(b"two")
    seen.add(build_inputs(landing, local))
    other.unlink()
    part.write_bytes(b"three")
    seen.add(build_inputs(landing, local))
    remote = Layout(Store.from_uri("s3a://bucket/mtabench"), Store.from_uri("s3a://bucket/mtabench/landing"))
    seen.add(build_inputs(landing, remote))
    assert len(seen) == 5
