"""gtd's host side acting on a workspace the agent could change: the git guard, quarantine of planted
files, host-side creation of writable paths. Built on gtd.workspace_files: never follows a symlink."""
