"""A task's group of ranges (maxTasksPerBatch): read one after the other, the next range's consumer
opened while the current one is read, every consumer closed however the task ends."""
from kafka_eos.connectors.source.partition_reader import _read_ranges


class Reader:
    def __init__(self, n: int, events: list) -> None:
        self.n, self.events, self.opened = n, events, False

    def open(self):
        if not self.opened:
            self.opened = True
            self.events.append(("open", self.n))

    def batches(self):
        self.open()
        try:
            for b in range(2):
                self.events.append(("batch", self.n, b))
                yield (self.n, b)
        finally:
            self.close()

    def close(self):
        if self.opened:
            self.opened = False
            self.events.append(("close", self.n))


def test_ranges_in_order_with_the_next_consumer_opened_ahead():
    events: list = []
    readers = [Reader(n, events) for n in range(3)]
    assert list(_read_ranges(readers)) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert events.index(("open", 1)) < events.index(("batch", 0, 0))  # fetching while range 0 is read
    assert events.index(("open", 2)) < events.index(("batch", 1, 0))
    assert events.count(("close", 0)) == events.count(("close", 1)) == events.count(("close", 2)) == 1


def test_a_task_stopped_early_closes_the_consumer_opened_ahead():
    events: list = []
    readers = [Reader(n, events) for n in range(3)]
    batches = _read_ranges(readers)
    assert next(batches) == (0, 0)
    batches.close()  # the task failed or Spark stopped reading
    assert ("close", 0) in events and ("close", 1) in events and not any(r.opened for r in readers)
