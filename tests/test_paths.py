"""gtd.paths.user_dir computes platformdirs' Linux directories itself in the ordinary cases (so a start
need not import platformdirs, tempfile, shutil and random) and must give exactly what platformdirs gives
in every case, the unusual ones included (those it hands to platformdirs)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest

from gtd import paths

KINDS = ("config", "state", "cache", "data")
XDG_VALUES = (None, "", " ", "/x/y", "/x/y/", "//x", "relative/dir", "~/x", "/")
HOME_VALUES = (None, "", "/home/u", "/home/u/", "/", "relative")


@pytest.mark.parametrize("kind", KINDS)
def test_user_dir_is_what_platformdirs_says(kind, monkeypatch):
    variable = paths._XDG[kind][0]
    for xdg, home in itertools.product(XDG_VALUES, HOME_VALUES):
        for name, value in ((variable, xdg), ("HOME", home)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        try:
            expected = Path(getattr(platformdirs, f"user_{kind}_dir")("gtd"))
        except RuntimeError as exc:  # platformdirs refuses: so must gtd
            with pytest.raises(RuntimeError, match=str(exc)[:20]):
                paths.user_dir(kind)
            continue
        assert paths.user_dir(kind) == expected, (variable, xdg, home)


def test_ordinary_directories_need_no_platformdirs(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("XDG_CONFIG_HOME", None)
    code = ("import json, sys\nfrom gtd import paths\n"
            "print(json.dumps([str(paths.user_config_dir()), str(paths.user_state_dir()), 'platformdirs' in sys.modules]))")
    out = json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
    assert out == [str(tmp_path / ".config" / "gtd"), str(tmp_path / "state" / "gtd"), False]
