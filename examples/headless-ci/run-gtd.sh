#!/bin/sh
# Run gtd in CI: every step until the plan is done or a person is needed, events as JSONL.
# The model credential comes from the CI secret store (ANTHROPIC_API_KEY for claude).
set -u
gtd --all --non-interactive --json > gtd-events.jsonl
status=$?
case $status in
  0) echo "gtd: done" ;;
  4) echo "gtd: needs approval -- run 'gtd approve' in a terminal on this branch, then re-run CI"
     grep '"event": "run_end"' gtd-events.jsonl ;;
  6) echo "gtd: the agent timed out (see timeouts.* in .gtdrc.json)" ;;
  *) echo "gtd: failed with exit $status" ;;
esac
exit $status
