"""txn/protocol: the two-phase commit: its steps, states, errors, the committer and aborter, ids,
timeouts, test faults."""
