"""gtd: run a coding agent through plan -> build -> learn inside an OS sandbox."""

__version__ = "0.1.0"
