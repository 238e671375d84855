"""The sandbox's network: the host-side filtering proxy, the relay that moves allowed bytes, DNS stand-ins,
and what the host serves into a sandbox's network namespace."""
