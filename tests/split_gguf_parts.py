"""Fake split-GGUF part packages, installed into a folder on sys.path as pip would leave them, and the fixtures
their tests share: `cache` (SPECVIZ_CACHE in the test's own folder) and `site` (a site-packages searched first).
The fixtures are named with `name=`, so a test's `cache` and `site` arguments do not shadow the imported functions."""

from pathlib import Path

import pytest


def install_parts(site: Path, package: str, version: str, parts: dict[int, bytes],
                  data_file: str = "data/part{index:02d}.bin") -> None:
    """Install part packages as pip would leave them: `<module>/data/partNN.bin` (or `data_file`, as SplitModel
    spells it) and a dist-info whose RECORD lists it. Written in the dict's order (the tests give it shuffled)."""
    site.mkdir(parents=True, exist_ok=True)
    for index, data in parts.items():
        module = f"{package.replace('-', '_')}{index}"
        relative = f"{module}/{data_file.format(index=index, offset=index - 1)}"
        (site / relative).parent.mkdir(parents=True)
        (site / relative).write_bytes(data)
        info = site / f"{module}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}{index}\nVersion: {version}\n")
        (info / "RECORD").write_text(f"{relative},,{len(data)}\n{info.name}/RECORD,,\n")


@pytest.fixture(name="cache")
def cache_fixture(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(name="site")
def site_fixture(tmp_path, monkeypatch):
    """A site-packages of its own, searched first."""
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return tmp_path / "site"
