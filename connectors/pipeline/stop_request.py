"""The stop request: what ``kafka-eos stop`` leaves in the checkpoint and ``kafka-eos resume`` withdraws.

``kafka-eos stop pipeline.yaml`` places the request ``<checkpoint>/kafka-eos-stop-requested`` (when
it was asked) and the stop marker ``<checkpoint>/kafka-eos-stop`` (what the running source and run
read: ``stop.StopControl``). Enforced here:
- the request outlives the run it stopped: while it stands no run of the pipeline starts
  (``check_no_stop_request`` raises ``StopRequested``, exit 0), so a supervisor's automatic
  restart (``--restarts``, systemd, Kubernetes, compose) keeps a stopped pipeline stopped, and a
  stop sent while no run is alive (a supervisor's back-off) is honoured by the next start;
- only ``withdraw_stop`` (``kafka-eos resume``, an operator's explicit act) removes it, with the
  marker; nothing a run does removes the request;
- a signal is a supervisor's own stop and places no request (``StopControl``);
- both files live where the pipeline keeps its own records (``config.records.records_home``): in the Kafka record
  store under ``checkpoint.records: kafka``, else in the checkpoint (``source.stop_marker``); a
  store that cannot be asked now reads as no request, never as a failed start.
"""
from __future__ import annotations

import time

from kafka_eos import KafkaEosError
from kafka_eos.connectors.source.stop_marker import StopMarker, request_location

PREFIX = "requested "


class StopRequested(KafkaEosError):
    """A stop request stands (``kafka-eos stop``): no run of the pipeline starts until it is withdrawn."""

    @classmethod
    def of_request(cls, location: str, text: str) -> "StopRequested":
        when = text.strip().removeprefix(PREFIX.strip()).strip()
        return cls(f"a stop was requested ({location}{', at ' + when if when else ''}) and stands: nothing was "
                   "started. The pipeline stays stopped, also across a supervisor's restarts, until `kafka-eos "
                   "resume <pipeline.yaml>` withdraws the request; then start it.")


def place_request(home: str) -> str:
    """Create the stop request of ``home`` (a request already there is kept); its location."""
    request = StopMarker(request_location(home))
    request.place(PREFIX + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n")
    return request.location


def request_stands(home: str) -> bool:
    return StopMarker(request_location(home)).present()


def check_no_stop_request(home: str) -> None:
    """Raise ``StopRequested`` while the stop request of ``home`` stands."""
    request = StopMarker(request_location(home))
    if request.present():
        raise StopRequested.of_request(request.location, request.text())


def withdraw_stop(home: str) -> bool:
    """Remove the stop request and the stop marker of ``home``; True when a request stood."""
    request = StopMarker(request_location(home))
    stood = request.exists()
    StopMarker.of_checkpoint(home).remove()
    request.remove()
    return stood
