"""The benchmark: Momor against a direct baseline and peer gateways (see bench/README.md)."""
