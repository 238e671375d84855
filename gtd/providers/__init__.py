"""Agent providers: each turns one agent CLI into the common event model."""
