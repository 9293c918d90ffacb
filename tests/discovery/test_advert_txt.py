"""The TXT record of a session advert: round trip, size bounds, and every malformed case."""

from __future__ import annotations

import dataclasses

import pytest
from mdns_helpers import make_advert

from computeshare_desktop.discovery import (AdvertError, SessionAdvert, from_txt,
                                            instance_label, key_fingerprint, new_session_id,
                                            to_txt)
from computeshare_desktop.discovery.advert import MAX_TXT_BYTES, txt_size
from computeshare_desktop.errors import ComputeShareError
from computeshare_desktop.protocol import PROTOCOL_VERSION, SessionState

KEYS = {b"v", b"p", b"id", b"n", b"h", b"m", b"d", b"w", b"s", b"fp", b"pub", b"pair", b"r"}


def good_txt(**changes: bytes | None) -> dict[bytes, bytes | None]:
    txt: dict[bytes, bytes | None] = dict(to_txt(make_advert(session_id="3fa2c1d0e9b7")))
    for key, value in changes.items():
        txt[key.encode()] = value
    return txt


def test_round_trip_keeps_every_field() -> None:
    advert = make_advert(protocol=PROTOCOL_VERSION, key_fingerprint=key_fingerprint(b"pk"))
    txt = to_txt(advert)
    assert set(txt) == KEYS
    assert from_txt(txt, port=advert.port) == advert
    assert txt[b"w"] == b"1/2" and txt[b"s"] == b"waiting" and txt[b"v"] == b"1"


def test_enum_state_is_written_as_its_value() -> None:
    advert = make_advert(state=SessionState.TRAINING)
    assert to_txt(advert)[b"s"] == b"training"
    assert from_txt(to_txt(advert), port=5555).state == "training"


def test_realistic_record_is_small_and_the_worst_case_fits() -> None:
    assert txt_size(to_txt(make_advert())) < 200
    huge = make_advert(session_id="f" * 32, name="é" * 100, host="h" * 300, model="m" * 99,
                       dataset="d" * 99, joined=999_999, expected=999_999, protocol=999_999)
    txt = to_txt(huge)
    assert txt_size(txt) <= MAX_TXT_BYTES and all(len(v) < 255 for v in txt.values())


def test_long_names_are_cut_at_a_character_boundary() -> None:
    advert = make_advert(name="Zoë’s 🖥️ desktop — " + "ü" * 40)
    name = from_txt(to_txt(advert), port=5555).name
    assert len(name.encode()) <= 63 and advert.name.startswith(name)


def test_control_and_bidi_characters_are_stripped_when_building() -> None:
    advert = make_advert(name="evil\x1b[31m\u202ename\n")
    assert from_txt(to_txt(advert), port=5555).name == "evil[31mname"


def test_properties() -> None:
    assert make_advert(joined=2, expected=2).full
    assert not make_advert(joined=1, expected=2).full
    assert make_advert(state="done").done and not make_advert(state="done").accepting
    assert make_advert().accepting


def test_no_secrets_in_the_record() -> None:
    assert set(to_txt(make_advert())) == KEYS  # no pin, salt or key: only the fingerprint
    assert len(key_fingerprint("a public key")) == 16


def test_instance_label_fits_one_dns_label_and_is_unique_per_session() -> None:
    long = make_advert(name="Ωmega." * 30)
    label = instance_label(long)
    assert len(label.encode()) <= 63 and "." not in label
    assert label.endswith(f"({long.session_id})")
    twin = dataclasses.replace(long, session_id=new_session_id())
    assert instance_label(twin) != label


@pytest.mark.parametrize("field, value", [
    ("session_id", "XYZ"), ("session_id", "a" * 33), ("state", "paused"), ("joined", -1),
    ("expected", 0), ("pub_port", 70000), ("port", 0), ("key_fingerprint", "abc"),
    ("name", "\x00\x01"), ("protocol", -2),
])
def test_to_txt_refuses_what_from_txt_would_refuse(field: str, value: object) -> None:
    with pytest.raises(ValueError):
        to_txt(dataclasses.replace(make_advert(), **{field: value}))  # type: ignore[arg-type]


@pytest.mark.parametrize("changes", [
    {"v": None}, {"v": b"x"}, {"v": b"0"}, {"v": b""}, {"id": None}, {"id": b"ABC"},
    {"id": b""}, {"id": b"a" * 33}, {"n": None}, {"n": b""}, {"n": b"   "}, {"n": b"x" * 64},
    {"n": b"\xff\xfe"}, {"n": b"bad\x1bname"}, {"n": "a\u202eb".encode()}, {"h": None},
    {"m": b"m" * 41}, {"d": b"\xc3"}, {"w": b"1"}, {"w": b"-1/2"}, {"w": b"1/0"},
    {"w": b"1/2/3"}, {"w": b" 1/2"}, {"w": b"1234567/2"}, {"w": "١/٢".encode()},
    {"s": b"paused"}, {"s": b"\xff"}, {"s": None}, {"p": b"+1"}, {"p": b"1_0"},
    {"p": b"1.0"}, {"fp": b"0123"}, {"fp": b"0123456789ABCDEF"}, {"pub": b"0"},
    {"pub": b"65536"}, {"pair": b""}, {"pair": None}, {"junk": b"x" * 300},
], ids=repr)
def test_malformed_records_raise_advert_error(changes: dict[str, bytes | None]) -> None:
    with pytest.raises(AdvertError):
        from_txt(good_txt(**changes), port=5555)


@pytest.mark.parametrize("port", [0, -1, 65536, None, "5555", 5555.0, True])
def test_bad_service_port_raises_advert_error(port: object) -> None:
    with pytest.raises(AdvertError):
        from_txt(good_txt(), port=port)  # type: ignore[arg-type]


def test_shape_errors() -> None:
    shapes: list[object] = [None, [], {"v": "1"}, {b"v": 1},
                            {i.to_bytes(1, "big"): b"" for i in range(40)}]
    for txt in shapes:
        with pytest.raises(AdvertError):
            from_txt(txt, port=5555)  # type: ignore[arg-type]
    too_big = {**good_txt(), **{f"x{i}".encode(): b"y" * 50 for i in range(8)}}
    with pytest.raises(AdvertError, match="bytes"):
        from_txt(too_big, port=5555)


def test_future_major_version_says_to_update() -> None:
    with pytest.raises(AdvertError, match="newer than this ComputeShare.*update ComputeShare"):
        from_txt(good_txt(v=b"2"), port=5555)


def test_minor_versions_and_unknown_keys_are_accepted() -> None:
    advert = from_txt(good_txt(v=b"1.7", future=b"value", flag=None), port=5555)
    assert isinstance(advert, SessionAdvert) and advert.session_id == "3fa2c1d0e9b7"


def test_advert_error_is_a_computeshare_error() -> None:
    assert issubclass(AdvertError, ComputeShareError)


def test_progress_round_trips_and_is_optional() -> None:
    advert = make_advert(round=42, rounds=600)
    txt = to_txt(advert)
    assert txt[b"r"] == b"42/600" and from_txt(txt, port=advert.port) == advert
    older = {k: v for k, v in txt.items() if k != b"r"}  # a hub from before the field
    assert from_txt(older, port=advert.port).round == 0
    for bad in (b"601/600", b"x/600", b"1/", b"-1/5"):
        with pytest.raises(AdvertError, match="'r'"):
            from_txt({**txt, b"r": bad}, port=advert.port)
