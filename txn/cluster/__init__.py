"""txn/cluster: the cluster's side: client settings, the control plane, broker support and configs,
ACL checks, refused logins, keystores."""
