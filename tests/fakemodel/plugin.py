"""pytest plugin for the fake model server: add `pytest_plugins = ["fakemodel.plugin"]` to a conftest.

Fixture `fake_model`: a started FakeModelServer on 127.0.0.1 (random port), closed after the test.
Script it with `fake_model.script([...])` using the step helpers in `fakemodel.server`.
"""

from __future__ import annotations

import pytest

from fakemodel.server import FakeModelServer


@pytest.fixture
def fake_model():
    with FakeModelServer() as server:
        yield server
