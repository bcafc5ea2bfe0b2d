

def test_a_folder_inside_an_s3_location_keeps_its_query_at_the_end():
    """The segments' folder of an S3 sink log with pyarrow's query (CI: 'A region must be set', the
    region read as 'us-east-1/_segments')."""
    from kafka_eos.txn.log.log_store import child
    assert child("s3a://b/ck/kafka-eos-sink?endpoint_override=h:1&region=us-east-1", "_segments") == \
        "s3a://b/ck/kafka-eos-sink/_segments?endpoint_override=h:1&region=us-east-1"
    assert child("/tmp/ck/kafka-eos-sink/", "_verify-follow") == "/tmp/ck/kafka-eos-sink/_verify-follow"
