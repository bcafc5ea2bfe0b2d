"""txn/topics: output topics and prefixes: the topic guard, output-topic identities, prefix claims
and ownership."""
