"""txn/audit: reading the output back and judging it: output and follow audits, scans, record sets,
the recompute audit."""
