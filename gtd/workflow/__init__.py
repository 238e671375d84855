"""The plan -> build -> learn workflow. Git is the state: every step is a commit."""
