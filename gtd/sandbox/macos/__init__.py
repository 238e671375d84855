"""The macOS backend: the policy rendered as a seatbelt profile for `sandbox-exec`."""
