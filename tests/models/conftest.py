"""Model tests never download: the torch hub cache is a fresh folder per test, and every
way to fetch a URL fails loudly (a test that serves a file itself patches its own way)."""

from __future__ import annotations

import urllib.request

import pytest
import torch.hub

from computeshare_desktop.models import hubcache


def _no_download(*args: object, **kwargs: object) -> None:
    raise AssertionError(f"a test tried to download: {args[:1]}")


@pytest.fixture(autouse=True)
def offline_torch_hub(tmp_path, monkeypatch):
    """TORCH_HOME in tmp_path; hubcache.fetch_url, urlopen and torch.hub's downloader fail."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))
    monkeypatch.setattr(hubcache, "fetch_url", _no_download)
    monkeypatch.setattr(urllib.request, "urlopen", _no_download)
    monkeypatch.setattr(torch.hub, "download_url_to_file", _no_download)
    return tmp_path / "torch-home" / "hub" / "checkpoints"
