"""`manualqa install-service`: a systemd unit for running the gateway as a hardened service."""
