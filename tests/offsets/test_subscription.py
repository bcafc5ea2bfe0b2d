"""subscribe / subscribePattern / assign selection over a cluster listing."""
import pytest

from kafka_eos.offsets.subscription import Subscription, SubscriptionError

LISTING = {"orders": [0, 1], "orders-eu": [0], "payments": [0], "__consumer_offsets": [0, 1]}


def test_subscribe_lists_existing_topics_only():
    sub = Subscription.parse("subscribe", "payments, orders,missing")
    assert sub.select(LISTING) == {("orders", 0), ("orders", 1), ("payments", 0)}


def test_pattern_is_full_match_and_skips_internal():
    assert Subscription.parse("subscribePattern", "orders.*").select(LISTING) == \
        {("orders", 0), ("orders", 1), ("orders-eu", 0)}
    assert Subscription.parse("subscribePattern", "order").select(LISTING) == set()
    assert Subscription.parse("subscribePattern", ".*").select(LISTING) >= {("payments", 0)}
    assert not any(t.startswith("__") for t, _ in Subscription.parse("subscribePattern", ".*").select(LISTING))


def test_pattern_picks_up_new_topic():
    sub = Subscription.parse("subscribePattern", "orders.*")
    assert ("orders-us", 0) in sub.select({**LISTING, "orders-us": [0]})


def test_assign():
    sub = Subscription.parse("assign", '{"orders": [1], "payments": [0, 3]}')
    assert sub.select(LISTING) == {("orders", 1), ("payments", 0)}
    assert sub.missing(LISTING) == [("payments", 3)]


@pytest.mark.parametrize("kind, text", [("subscribe", " , "), ("subscribePattern", "(["), ("assign", "[1]"),
                                        ("assign", "{}"), ("assign", '{"a": [0, "x"]}')])
def test_bad(kind, text):
    with pytest.raises(SubscriptionError):
        Subscription.parse(kind, text)
