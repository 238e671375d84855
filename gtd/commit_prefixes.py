"""The emoji every commit gtd makes starts with, one per workflow step: the workflow reads its state back
from them (gtd.workflow.steps), and an approval saved to the project config is committed with `config`'s
(gtd.escalation.escalator)."""

COMMIT_PREFIXES = {
    "feedback": "💬",
    "fix": "🔧",
    "plan": "📝",
    "build": "🔨",
    "learn": "📚",
    "cleanup": "🧹",
    "config": "🔐",
}
