"""The executor's data-loss decision needs real watermarks: an answer without offsets is no answer."""
import pytest
from confluent_kafka import OFFSET_INVALID, KafkaError, KafkaException

from kafka_eos.connectors.source.options import parse_source_options
from kafka_eos.connectors.source.range_reader import RangeReader
from kafka_eos.connectors.source.planning import KafkaDataLossError
from kafka_eos.offsets.ranges import OffsetRange


class Consumer:
    def __init__(self, low: int, high: int) -> None:
        self.watermarks = (low, high)

    def get_watermark_offsets(self, tp, timeout=None, cached=False):
        return self.watermarks


def reader(fail_on_data_loss: bool) -> RangeReader:
    options = parse_source_options({"kafka.bootstrap.servers": "b:1", "subscribe": "in",
                                    "failOnDataLoss": str(fail_on_data_loss).lower()}, streaming=True)
    return RangeReader(OffsetRange("in", 0, 100, 200), options, schema=None)


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_watermarks_without_offsets_fail_the_task_instead_of_deciding_data_loss(fail_on_data_loss):
    # Before: (-1001, -1001) read as "offsets went backwards"; with failOnDataLoss=false the
    # reader jumped to the range's end and silently dropped offsets 150..199.
    err = KafkaError(KafkaError.OFFSET_OUT_OF_RANGE)
    with pytest.raises(KafkaException):
        reader(fail_on_data_loss)._data_loss(Consumer(OFFSET_INVALID, OFFSET_INVALID), err, 150)


def test_real_watermarks_past_the_offset_still_resume_at_the_earliest_offset():
    err = KafkaError(KafkaError.OFFSET_OUT_OF_RANGE)
    assert reader(False)._data_loss(Consumer(170, 300), err, 150) == 170


class FailingConsumer:
    def __init__(self, code: int) -> None:
        self.code = code

    def get_watermark_offsets(self, tp, timeout=None, cached=False):
        raise KafkaException(KafkaError(self.code))


def test_a_failed_watermark_lookup_fails_the_task_instead_of_dropping_the_partition():
    # Before: any failed lookup read as "partition gone"; with failOnDataLoss=false the reader
    # returned the range's end, dropping offsets 150..199 because of a timeout.
    err = KafkaError(KafkaError.OFFSET_OUT_OF_RANGE)
    with pytest.raises(KafkaException):
        reader(False)._data_loss(FailingConsumer(KafkaError._TIMED_OUT), err, 150)


def test_a_partition_kafka_does_not_know_is_gone():
    err = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
    assert reader(False)._data_loss(FailingConsumer(KafkaError.UNKNOWN_TOPIC_OR_PART), err, 150) == 200
    with pytest.raises(KafkaDataLossError, match="no longer exists"):
        reader(True)._data_loss(FailingConsumer(KafkaError.UNKNOWN_TOPIC_OR_PART), err, 150)
