"""Escalations: when the agent hits the sandbox boundary, a person (or a saved rule) decides."""

APPROVAL_COMMIT_PREFIX = "🔐"  # an approval saved to the project config is committed so; gtd.workflow.steps reads it as its config step
