"""Data-loss findings name the partition, the offsets and the fix."""
from kafka_eos.offsets.data_loss import detect

EARLIEST = {("t", 0): 100, ("t", 1): 0}
LATEST = {("t", 0): 200, ("t", 1): 10}


def test_no_loss():
    assert detect({("t", 0): 100, ("t", 1): 10}, EARLIEST, EARLIEST, LATEST) == []


def test_deleted_offsets():
    [f] = detect({("t", 0): 40, ("t", 1): 5}, EARLIEST, EARLIEST, LATEST)
    assert (f.kind, f.topic, f.partition, f.expected, f.available, f.resume_at) == \
        ("offsets-deleted", "t", 0, 40, (100, 200), 100)
    failing = f.message(failing=True)
    assert "'t' partition 0" in failing and "40" in failing and "[100, 200)" in failing
    assert "failOnDataLoss=false" in failing
    assert "continuing from offset 100" in f.message(failing=False)


def test_offsets_went_backwards():
    [f] = detect({("t", 1): 50}, EARLIEST, EARLIEST, LATEST)
    assert (f.kind, f.expected, f.resume_at) == ("offsets-reset", 50, 0)
    assert "went backwards" in f.message(failing=True)


def test_partition_gone():
    [f] = detect({("t", 0): 150, ("gone", 3): 7}, [("t", 0)], EARLIEST, LATEST)
    assert (f.kind, f.topic, f.partition, f.resume_at) == ("partition-gone", "gone", 3, None)
    assert "no longer reading" in f.message(failing=False)


def test_new_partition_truncated():
    [f] = detect({}, EARLIEST, EARLIEST, LATEST, new_partitions=[("t", 0), ("t", 1)])
    assert (f.kind, f.partition, f.resume_at) == ("new-partition-truncated", 0, 100)
