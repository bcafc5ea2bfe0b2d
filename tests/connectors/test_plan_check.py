"""plan_check without a JVM: a DataFrame with no ``_jdf`` (Spark Connect) is skipped, with a log line."""
from __future__ import annotations

from kafka_eos.connectors.plan_check import NonDeterministicPlanError, check_deterministic
from kafka_eos.config.determinism import expression


class ConnectLikeFrame:
    """Spark Connect's DataFrame raises AttributeError for ``_jdf``."""

    def __getattr__(self, name):
        raise AttributeError(name)


def test_connect_frames_are_skipped_with_a_warning():
    said: list[str] = []
    assert check_deterministic(ConnectLikeFrame(), warn=said.append) == []
    assert len(said) == 1 and "skipped on Spark Connect" in said[0]


def test_refusal_lists_every_expression_and_the_opt_out():
    error = NonDeterministicPlanError.of([expression("Rand", "rand(1)"), expression("Uuid", "uuid()")])
    text = str(error)
    assert "  - rand(1): rand is non-deterministic" in text and "  - uuid(): uuid" in text
    assert "transform.allow_nondeterministic: true" in text and "ReplayMismatchError" in text
