"""txn/log: the store of kafka-eos's own records and what lives in it: the sink log, segments,
markers, topic identities, sweeps, verify runs, follower state."""
