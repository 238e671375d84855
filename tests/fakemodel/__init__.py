"""The fake model server used by the test suite (see fakemodel.server)."""

from fakemodel.server import FakeModelServer, Step, error, hang, say, shell, tool

__all__ = ["FakeModelServer", "Step", "error", "hang", "say", "shell", "tool"]
