"""Ports for local brokers and their controllers lie outside the kernel's ephemeral range, so no
outgoing connection can hold a killed node's port when it restarts."""
from __future__ import annotations

import socket

from kafka_eos.connectors.dev.local_kafka import PORT_FLOOR, ephemeral_range, free_port


def test_ports_are_free_and_outside_the_ephemeral_range():
    low, high = ephemeral_range()
    ports = {free_port() for _ in range(50)}
    assert all(PORT_FLOOR <= p < low or high < p <= 65535 for p in ports), sorted(ports)
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))   # still free: nothing was left listening


def test_an_outgoing_connection_never_takes_such_a_port():
    """What broke the restart: a client's local port. The kernel picks those in the range only."""
    low, high = ephemeral_range()
    with socket.create_server(("127.0.0.1", 0)) as server:
        locals_ = []
        for _ in range(20):
            with socket.create_connection(server.getsockname()) as client:
                locals_.append(client.getsockname()[1])
                server.accept()[0].close()
    assert all(low <= p <= high for p in locals_), locals_
