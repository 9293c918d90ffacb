"""A running hub's advert follows its session: workers joined, state, rounds; gone at close."""

from __future__ import annotations

from computeshare_desktop.discovery import SessionBrowser
from computeshare_desktop.discovery.advert import to_txt
from computeshare_desktop.discovery.hub_advert import HubAdvertising, resolve_interface
from computeshare_desktop.protocol.pake import key_fingerprint
from helpers.net import RunningHub, WorkerThread, wait_for


def test_advert_tracks_the_session_and_is_withdrawn(tmp_path):
    hub = RunningHub(tmp_path, workers=2, rounds=400, batch_size=8, eval_every=0)
    advertising = HubAdvertising(hub.session, hub_key=hub.identity.public, port=hub.port,
                                 name="tracked", interfaces=["127.0.0.1"])
    browser = SessionBrowser(interfaces=["127.0.0.1"]).start()
    workers = []

    def mine():
        return [s.advert for s in browser.sessions()
                if s.advert.session_id == hub.session.session_id]

    try:
        assert advertising.start()
        first = wait_for(mine, 15, "the advert")[0]
        assert (first.joined, first.expected, first.state) == (0, 2, "waiting")
        assert first.key_fingerprint == key_fingerprint(hub.identity.public)
        assert (first.port, first.pair_port, first.rounds) == (hub.port, hub.ports.pairing, 400)
        workers = [WorkerThread(hub.port, f"w{i}") for i in range(2)]
        busy = wait_for(lambda: [a for a in mine() if a.joined == 2 and a.round > 0], 30,
                        "joined 2/2 and rounds passing")[0]
        assert busy.state == "training" and busy.full and not busy.accepting
        for w in workers:
            w.join(120)
        wait_for(lambda: [a for a in mine() if a.state == "done"], 15, "state done")
        advertising.close()
        wait_for(lambda: not mine(), 10, "the advert withdrawn")
    finally:
        advertising.close()
        browser.close()
        for w in workers:
            w.close()
        hub.close()


def test_resolve_interface_accepts_names_and_addresses():
    assert resolve_interface("127.0.0.1") == "127.0.0.1"
    assert resolve_interface("lo") == "127.0.0.1"


class _Endpoint:
    """The one thing HubAdvertising asks of a session before it starts: its status."""

    def __init__(self, model):
        from computeshare_desktop.hub import HubConfig
        from computeshare_desktop.hub.endpoint import SessionStatus
        self._status = SessionStatus("ab" * 8, HubConfig(model=model, workers=2), "waiting", 0, 0)

    def status(self):
        return self._status


def test_the_advert_names_the_model_file_not_the_folders_above_it():
    for spec, shown in (("/home/ann/projects/secret/net.py:Net", "net.py:Net"),
                        ("C:\\Users\\ann\\net.py:Net", "net.py:Net"),
                        ("/home/ann/vit.pt2", "vit.pt2"), ("simplenet", "simplenet")):
        advertising = HubAdvertising(_Endpoint(spec), hub_key="k" * 40, port=7000,
                                     name="n", interfaces=["127.0.0.1"])
        assert advertising.advert.model == shown
        assert not any(b"ann" in value for value in to_txt(advertising.advert).values())
