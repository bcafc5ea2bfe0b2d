"""The pure parts of bench.scaling: the cell matrix, the job arguments, the task count, the report lines."""
from __future__ import annotations

from bench.method import summary
from bench.scaling import cell_key, cells, job_args, lines, sink_tasks
from bench.throughput import Input


def test_cells_run_every_worker_count_with_every_partition_count_in_order():
    assert cells() == [(1, 4), (1, 16), (2, 4), (2, 16)]
    assert [cell_key(c) for c in cells((2,), (16,))] == ["2w_16p"]


def test_job_args_run_eos_with_one_source_task_per_input_partition():
    inp = Input("b:9092", "in", "warm", 200_000, 100, 1.0, 50_000)
    args = job_args(inp, 16, "out", "warm-out")
    assert "--source-option=minPartitions=16" in args
    pairs = dict(zip(args[::2], args[1::2]))
    assert pairs["--format"] == "kafka-eos" and pairs["--guarantee"] == "exactly_once"
    assert (pairs["--records"], pairs["--max-offsets"]) == ("200000", "50000")
    assert args[-4:] == ["--output", "out", "--warmup-output", "warm-out"]


def test_sink_tasks_reads_the_transactions_per_batch():
    assert sink_tasks({"sink_log": {"transactions": [16.0, 16.0]}}) == [16, 16]
    assert sink_tasks({}) == []


def test_lines_give_one_report_line_per_cell():
    scaling = {"cells": [{"key": "2w_16p", "workers": 2, "partitions": 16}],
               "records_per_s": {"2w_16p": summary([50_000, 60_000, 40_000])}}
    assert lines(scaling) == ["scaling, 2 workers, 16 partitions: median 50,000 rec/s [40,000-60,000] NOISY"]
    assert lines({}) == []
