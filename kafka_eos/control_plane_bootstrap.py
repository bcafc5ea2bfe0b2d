"""The control-plane client's bootstrap: every broker of ``bootstrap.servers`` in turn, each with
a short timeout, and one clear error when none answers.

kafka-python 3 bootstraps from one listed broker picked at random and gives that connection the
whole bootstrap deadline: a hung broker (its kernel accepts the connection, nothing answers)
costs the whole deadline and the others are never tried ("Unable to bootstrap from <all>").

Enforced here (``FailoverConnectionManager``, the connection manager of
``kafka_eos.control_plane_client.ControlPlaneClient``):
- the listed brokers are tried one after another, starting at a random one, each within
  ``BOOTSTRAP_TRY_S`` in the first round, the try doubled every round up to ``REQUEST_S``, the
  next broker at once when one fails, until ``BOOTSTRAP_DEADLINE_S``;
- what each broker did last (refused, no answer, TLS, login refused: ``broker_outcomes``' words)
  is kept; past the deadline ``BrokersUnreachable`` names the list and each broker's outcome, in
  one line.
"""
from __future__ import annotations

import random
import time

import kafka.errors as Errors
from kafka.net.manager import KafkaConnectionManager

from kafka_eos import broker_outcomes
from kafka_eos.kafka_clients import REQUEST_S, BrokersUnreachable, deadline_s, request_s

BOOTSTRAP_TRY_S = request_s("control.bootstrap")        # one listed broker's first try
BOOTSTRAP_DEADLINE_S = deadline_s("control.bootstrap")  # the whole bootstrap, when the client sets none

PAUSE_S = 0.5  # between rounds when every broker failed at once (refused): no busy loop


class FailoverConnectionManager(KafkaConnectionManager):
    """kafka-python's connection manager with the bootstrap of the module docstring."""

    async def _do_bootstrap(self, deadline):  # noqa: ANN001 - kafka-python's signature
        began = time.monotonic()
        deadline = began + BOOTSTRAP_DEADLINE_S if deadline is None else deadline
        brokers = self.cluster.bootstrap_brokers()
        start = random.randrange(len(brokers))
        order = brokers[start:] + brokers[:start]
        outcomes: dict[str, str] = {}
        try_s = BOOTSTRAP_TRY_S
        while not self.closed and time.monotonic() < deadline:
            for broker in order:
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    break
                outcome = await self._try_broker(broker, min(try_s, left))
                if outcome is None:
                    return True
                outcomes[f"{broker.host}:{broker.port}"] = outcome
            try_s = min(try_s * 2, REQUEST_S)
            await self._bootstrap_wakeup(min(PAUSE_S, max(0.0, deadline - time.monotonic())))
        raise BrokersUnreachable(str(self.cluster.config["bootstrap_servers"]), outcomes, time.monotonic() - began)

    async def _try_broker(self, broker, try_s: float) -> str | None:  # noqa: ANN001 - kafka-python's broker metadata
        """Bootstrap from ``broker`` within ``try_s``: None when done, else what the broker did."""
        node_id = broker.node_id
        self.reset_backoff(node_id)  # every try connects now: the rotation is the backoff
        self._auth_failures.pop(node_id, None)
        began = time.monotonic()
        try:
            conn = self.get_connection(node_id, timeout_ms=try_s * 1000, pop_on_close=False,
                                       refresh_metadata_on_err=False, reset_backoff_on_connect=False)
            await conn
        except Errors.IncompatibleBrokerVersion:
            raise
        except Exception as exc:  # noqa: BLE001 - classified: the next broker is tried
            stale = self._conns.pop(node_id, None)
            if stale is not None:
                stale.close(exc)
            return broker_outcomes.from_kafka_python(exc, time.monotonic() - began)
        try:
            await self.cluster.refresh_metadata(node_id)
            if not self.cluster.brokers():
                return broker_outcomes.no_brokers()
        except Exception as exc:  # noqa: BLE001 - classified: the next broker is tried
            return broker_outcomes.from_kafka_python(exc, time.monotonic() - began)
        finally:
            self._conns.pop(node_id, conn).close()
        self.reset_backoff(node_id)
        self.cluster.start_refresh_loop()
        return None
