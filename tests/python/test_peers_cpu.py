"""bench/peers.py's import isolation, with fake packages (no GPU, no torch, no real peer):
the peer named `humming` loads from its own folder, its lazy imports inside a call resolve to
its own modules, and `import humming` outside a peer call still gives our facade."""
import importlib
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import peers  # noqa: E402

SUBMODULES = ("dtypes", "config", "schema", "transform", "tune", "forward", "ops")


def write_package(root, backend, lazy=False):
    pkg = root / "humming"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"BACKEND = {backend!r}\n")
    for name in SUBMODULES:
        (pkg / f"{name}.py").write_text(f"WHO = {backend!r}\n")
    if lazy:  # a function-level import of a submodule our facade lacks, as the real package does
        (pkg / "kernel.py").write_text(f"WHO = {backend!r}\n")
        (pkg / "forward.py").write_text(
            f"WHO = {backend!r}\n"
            "def humming_forward():\n"
            "    import humming\n"
            "    from humming import kernel\n"
            "    return humming.BACKEND, kernel.WHO\n")
    return root


@pytest.fixture
def clean_humming(tmp_path, monkeypatch):
    """Our facade stand-in on sys.path (fake `ours/humming`, BACKEND "chord"), with whatever
    `humming` modules the session had moved aside and restored afterwards."""
    saved = {n: sys.modules.pop(n) for n in list(sys.modules) if n == "humming" or n.startswith("humming.")}
    ours = write_package(tmp_path / "ours", "chord")
    monkeypatch.syspath_prepend(str(ours))
    importlib.invalidate_caches()
    try:
        yield tmp_path
    finally:
        for n in [n for n in sys.modules if n == "humming" or n.startswith("humming.")]:
            del sys.modules[n]
        sys.modules.update(saved)
        sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]


def test_peer_loads_from_its_folder_and_facade_stays(clean_humming):
    import humming as facade_before
    assert facade_before.BACKEND == "chord"
    site = write_package(clean_humming / "site", "peer", lazy=True)
    peer = peers.load_humming(str(site))
    assert peer.get("").BACKEND == "peer"
    assert peer.get("forward").WHO == "peer"
    assert peer.get("").__file__.startswith(str(site))
    # outside a peer call, `humming` is still our facade, the same module object
    import humming
    assert humming is facade_before and humming.BACKEND == "chord"
    import humming.forward
    assert humming.forward.WHO == "chord"
    # the site is after everything installed (fills gaps, shadows nothing)
    assert sys.path.index(str(site)) > sys.path.index(str(clean_humming / "ours"))
    # inside a call, the peer's function-level imports resolve to the peer, first with the full
    # swap and then with the hot one (calling), and the facade is back afterwards
    with peer:
        assert peer.get("forward").humming_forward() == ("peer", "peer")
    with peer.calling():
        assert peer.get("forward").humming_forward() == ("peer", "peer")
        assert sys.modules["humming"].BACKEND == "peer"
    assert sys.modules["humming"] is facade_before
    assert "humming.kernel" not in sys.modules  # the peer's lazily imported module went with it
    assert sys.modules["humming.forward"].WHO == "chord"


def test_peer_without_facade_leaves_no_humming(clean_humming, monkeypatch):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.startswith(str(clean_humming / "ours"))])
    site = write_package(clean_humming / "site", "peer")
    peer = peers.load_humming(str(site))
    assert peer.get("").BACKEND == "peer"
    assert not [n for n in sys.modules if n == "humming" or n.startswith("humming.")]


def test_missing_peer_names_the_script(clean_humming):
    with pytest.raises(peers.PeerMissing, match="scripts/peer-wheels.sh"):
        peers.load_humming(str(clean_humming / "empty"))
    import humming
    assert humming.BACKEND == "chord"


def test_facade_is_not_taken_for_the_peer(clean_humming):
    with pytest.raises(peers.PeerMissing, match="chord's humming facade"):
        peers.load_humming(str(clean_humming / "ours"))
    import humming
    assert humming.BACKEND == "chord"


def test_broken_peer_leaves_nothing_behind(clean_humming):
    site = write_package(clean_humming / "site", "peer")
    (site / "humming" / "tune.py").write_text("import not_a_module_anywhere\n")
    with pytest.raises(peers.PeerMissing, match="does not import"):
        peers.load_humming(str(site))
    import humming
    assert humming.BACKEND == "chord"
    assert not [n for n, m in sys.modules.items() if n.startswith("humming") and getattr(m, "WHO", "") == "peer"]
