"""The h11 invariant for adverts: any TXT record parses or raises AdvertError, nothing else.

A browser feeds ``from_txt`` whatever any machine on the LAN multicasts, so these tests catch
nothing but AdvertError.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mdns_helpers import make_advert

from computeshare_desktop.discovery import AdvertError, SessionAdvert, from_txt, to_txt

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VALID = to_txt(make_advert())
KEYS = st.sampled_from(sorted(VALID)) | st.binary(max_size=12)
VALUES = (st.none() | st.binary(max_size=80) | st.sampled_from(list(VALID.values()))
          | st.text(max_size=30).map(str.encode)
          | st.sampled_from([b"-1", b"0", b"1/0", b"99999999", b"2", b"1.0", b"\xff" * 3]))
PORTS = st.integers(min_value=-(2**40), max_value=2**40) | st.none() | st.text(max_size=3)


def parses_or_refuses(txt: object, port: object) -> SessionAdvert | None:
    """Run from_txt under the invariant; return the advert or None when refused."""
    try:
        advert = from_txt(txt, port=port)  # type: ignore[arg-type]
    except AdvertError:
        return None
    assert type(advert) is SessionAdvert
    assert from_txt(to_txt(advert), port=advert.port) == advert
    return advert


@FUZZ
@given(st.dictionaries(KEYS, VALUES, max_size=16), PORTS)
def test_arbitrary_records(txt: dict[bytes, bytes | None], port: object) -> None:
    parses_or_refuses(txt, port)


@FUZZ
@given(st.dictionaries(st.sampled_from(sorted(VALID)), VALUES, max_size=6),
       st.sets(st.sampled_from(sorted(VALID)), max_size=3))
def test_mutated_valid_records(changes: dict[bytes, bytes | None], dropped: set[bytes]) -> None:
    txt = {k: v for k, v in {**VALID, **changes}.items() if k not in dropped}
    parses_or_refuses(txt, 5555)


@FUZZ
@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.binary()),
                 st.dictionaries(st.text(max_size=3) | st.integers(), st.integers() | st.text())))
def test_values_of_the_wrong_type(txt: object) -> None:
    parses_or_refuses(txt, 5555)
