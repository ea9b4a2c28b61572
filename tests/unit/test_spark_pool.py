"""The Spark source's per-process pool of clients (`praha.spark.pool`): pure logic."""
from __future__ import annotations

import pytest

from praha.spark.pool import Pool


class Client:
    made = 0

    def __init__(self) -> None:
        Client.made += 1
        self.n = Client.made
        self.closed = False

    def close(self) -> None:
        self.closed = True


def pool(idle_seconds: float = 60.0) -> Pool[Client]:
    return Pool(Client.close, idle_seconds)


def test_a_client_given_back_cleanly_is_lent_to_the_next_borrower_of_its_key():
    p = pool()
    with p.borrow("a", Client) as first:
        pass
    with p.borrow("a", Client) as second:
        assert second is first
    with p.borrow("b", Client) as other:
        assert other is not first
    assert (p.made, p.reused) == (2, 1)
    assert not first.closed


def test_a_client_that_saw_an_error_is_closed_and_never_lent_again():
    p = pool()
    with pytest.raises(ConnectionError), p.borrow("a", Client) as failed:
        raise ConnectionError("broker gone")
    assert failed.closed
    with p.borrow("a", Client) as fresh:
        assert fresh is not failed
    assert p.discarded == 1


def test_two_borrowers_at_once_get_two_clients():
    p = pool()
    with p.borrow("a", Client) as one, p.borrow("a", Client) as two:
        assert one is not two
    with p.borrow("a", Client) as again:
        assert again in (one, two)


def test_a_generator_stopped_early_gives_its_client_back():
    p = pool()
    lent = []

    def read():
        with p.borrow("a", Client) as c:
            lent.append(c)
            yield 1
            yield 2

    g = read()
    next(g)
    g.close()  # GeneratorExit at a yield: between two requests, the client is sound
    with p.borrow("a", Client) as again:
        assert again is lent[0]
    assert not lent[0].closed


def test_an_idle_client_past_its_time_is_closed_instead_of_lent():
    p = pool(idle_seconds=-1.0)  # every idle client is past its time
    with p.borrow("a", Client) as old:
        pass
    with p.borrow("a", Client) as new:
        assert new is not old
    assert old.closed


def test_close_all_closes_every_idle_client():
    p = pool()
    with p.borrow("a", Client) as a, p.borrow("b", Client) as b:
        pass
    p.close_all()
    assert a.closed
    assert b.closed
