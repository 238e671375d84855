"""The answers to an escalation request (apart from the prompt, which needs rich: every phase imports this)."""

from __future__ import annotations

from enum import Enum


class Decision(str, Enum):
    ONCE = "once"  # allow for the rest of this run only
    PROJECT = "project"  # save the rule to .gtdrc.json (committed, shared with the team)
    USER = "user"  # save the rule to the user config
    DENY = "deny"
    NETWORK = "network"  # run the phase at level network for the rest of this run (a registry at readwrite)
