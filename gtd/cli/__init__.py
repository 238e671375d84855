"""The `gtd` command line (typer)."""
