"""The committed codecs are what the generator makes of the committed definitions."""
from __future__ import annotations

from praha.protocol.messages.definition import load_all
from praha.protocol.messages.generate import GEN, generate


def test_committed_output_equals_a_fresh_generation() -> None:
    files = generate()
    stale = [p.name for p, text in files.items() if not p.exists() or p.read_text() != text]
    extra = [p.name for p in GEN.glob("*.py") if p not in files]
    assert not stale, f"run `make wire`: stale {stale}, not generated {extra}"
    assert not extra, f"run `make wire`: stale {stale}, not generated {extra}"


def test_every_api_has_a_request_and_a_response_class_per_version() -> None:
    from praha.protocol.messages.gen import MESSAGES
    apis = load_all()
    assert set(MESSAGES) == set(apis)
    for key, (req, resp) in MESSAGES.items():
        api = apis[key]
        assert (req.API_KEY, req.MIN_VERSION, req.MAX_VERSION) == (key, api.request.versions.lo,
                                                                   api.request.versions.hi)
        assert len(req._ENCODERS) == len(req._DECODERS) == req.MAX_VERSION - req.MIN_VERSION + 1
        assert len(resp._ENCODERS) == resp.MAX_VERSION - resp.MIN_VERSION + 1
