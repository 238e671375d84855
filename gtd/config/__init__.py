"""Layered configuration: defaults < user config < project .gtdrc.json < CLI flags."""
