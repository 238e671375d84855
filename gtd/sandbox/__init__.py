"""The OS sandbox: one backend-neutral policy per phase, rendered by bubblewrap (Linux) or seatbelt (macOS).

Submodules are imported on demand (no heavy imports here) so that starting a sandboxed command
stays a few milliseconds over bare bwrap.
"""
