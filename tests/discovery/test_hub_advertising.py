"""A running hub's advert follows its session: workers joined, state, rounds; gone at close."""

from __future__ import annotations

from computeshare_desktop.discovery import SessionBrowser
from computeshare_desktop.discovery.hub_advert import HubAdvertising, resolve_interface
from computeshare_desktop.protocol.pake import key_fingerprint
from helpers_net import RunningHub, WorkerThread, wait_for


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
