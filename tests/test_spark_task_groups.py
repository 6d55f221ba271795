"""How the Spark parse packs runs into tasks: Spark's own rule for packing files into read
partitions (FilePartition.maxSplitBytes / getFilePartitions, with its defaults
spark.sql.files.maxPartitionBytes = 128 MiB and openCostInBytes = 4 MiB), applied to runs.
The expected groupings below are worked out by hand from that rule."""

from __future__ import annotations

from mtabench.engines.spark.maillog_udf import task_groups

MIB = 1 << 20


def _runs(*files_per_run: list[int]) -> list[dict]:
    return [{"run_key": f"r{i}", "files": [{"bytes": b} for b in fs]} for i, fs in enumerate(files_per_run)]


def _check_partition(groups: list[list[int]], n: int) -> None:
    flat = [i for g in groups for i in g]
    assert sorted(flat) == list(range(n)), "every run in exactly one task"


def test_many_small_runs_fill_128_mib_tasks():
    # 352 runs of one 1 MiB file on 2 cores: total 352 x (1 + 4) MiB, so the split is
    # min(128, 1760 / 2) = 128 MiB. A run is added while filled + 1 <= 128: after 25 runs
    # 125 MiB are filled, the 26th fits (126) and makes it 130, the 27th does not: 26 runs
    # a task, 352 / 26 -> 14 tasks (13 of 26, one of 14).
    runs = _runs(*[[MIB] for _ in range(352)])
    groups = task_groups(runs, parallelism=2)
    _check_partition(groups, 352)
    assert [len(g) for g in groups] == [26] * 13 + [14]


def test_a_small_archive_still_uses_every_core():
    # 8 runs of 10 KiB on 2 cores: total 8 x (4 MiB + 10 KiB), the split half of it
    # (16 MiB + 40 KiB); after 4 runs 16 MiB + 40 KiB are filled, the 5th overflows: 2 tasks.
    runs = _runs(*[[10 << 10] for _ in range(8)])
    groups = task_groups(runs, parallelism=2)
    _check_partition(groups, 8)
    assert [len(g) for g in groups] == [4, 4]


def test_a_run_bigger_than_the_split_is_a_task_of_its_own_and_goes_first():
    # one 300 MiB run (two files) among 3 runs of 1 MiB on 4 cores: total 303 MiB of data
    # + 5 files x 4 MiB = 323 MiB, so the split is min(128, 323 / 4) = 80.75 MiB. Largest
    # first: the big run alone (it overflows any split), then the three small ones together.
    runs = _runs([MIB], [200 * MIB, 100 * MIB], [MIB], [MIB])
    groups = task_groups(runs, parallelism=4)
    _check_partition(groups, 4)
    assert groups[0] == [1]
    assert sorted(groups[1]) == [0, 2, 3] and len(groups) == 2


def test_one_core_and_one_run():
    assert task_groups(_runs([5 * MIB]), parallelism=1) == [[0]]
    assert task_groups([], parallelism=2) == []
