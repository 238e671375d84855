"""The OS sandbox: one backend-neutral policy per phase (policy/), enforced by a backend (linux/: bubblewrap;
macos/: seatbelt) behind one interface (backend.py), with the network served from the host (network/),
gtd's own host-side steps kept apart from the agent's work (host/), and the answers to "why?" (diagnose/).
ARCHITECTURE.md has the module map.

Submodules are imported on demand (no heavy imports here) so that starting a sandboxed command
stays a few milliseconds over bare bwrap.
"""
