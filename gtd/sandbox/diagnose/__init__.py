"""Diagnostics: `gtd doctor`'s sandbox checks, answers to "why was this blocked?", hints for errors that
hide their cause, and refusals read from a command's output."""
