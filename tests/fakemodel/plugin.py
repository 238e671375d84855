"""pytest plugin: the `fake_model` fixture (placeholder until the server lands)."""
