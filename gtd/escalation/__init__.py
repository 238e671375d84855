"""Escalations: when the agent hits the sandbox boundary, a person (or a saved rule) decides."""
