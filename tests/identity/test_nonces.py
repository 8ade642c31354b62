"""Gateway replay caches: O(1) amortised, bounded, fail closed when full,
and shareable between processes (SQLite) behind the `NonceCache` protocol."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from identity.errors import IdentityProviderUnavailable, InvalidInput, NonceCacheFull, Unavailable
from identity.state.nonces import InMemoryNonceCache, SqliteNonceCache
from identity.providers import GatewayProvider, GatewayRequest, sign_gateway_headers
from identity.state.protocols import NonceCache

SECRET = b"s" * 32
T0 = 1_700_000_000.0
WINDOW = 331.0  # the gateway's default max_age + max_future_skew + 1


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _make(kind: str, tmp_path: Path, clock: Clock, **kwargs) -> NonceCache:
    if kind == "memory":
        return InMemoryNonceCache(clock, **kwargs)
    return SqliteNonceCache(tmp_path / "nonces.sqlite3", clock, **kwargs)


KINDS = ["memory", "sqlite"]


@pytest.mark.parametrize("kind", KINDS)
def test_implementations_satisfy_the_protocol(kind: str, tmp_path: Path) -> None:
    assert isinstance(_make(kind, tmp_path, Clock()), NonceCache)


@pytest.mark.parametrize("kind", KINDS)
def test_live_nonce_cannot_be_replayed(kind: str, tmp_path: Path) -> None:
    clock = Clock()
    cache = _make(kind, tmp_path, clock)
    assert cache.check_and_remember("nonce-0001", T0 + 10) is True
    assert cache.check_and_remember("nonce-0001", T0 + 10) is False
    clock.now += 9.5
    assert cache.check_and_remember("nonce-0001", T0 + 50) is False
    clock.now = T0 + 10.5  # expired: may be forgotten and used again
    assert cache.check_and_remember("nonce-0001", clock.now + 10) is True
    assert cache.check_and_remember("nonce-0001", clock.now + 10) is False


@pytest.mark.parametrize("kind", KINDS)
def test_full_cache_fails_closed_without_evicting_live_nonces(kind: str, tmp_path: Path) -> None:
    clock = Clock()
    cache = _make(kind, tmp_path, clock, max_entries=100)
    for i in range(100):
        assert cache.check_and_remember(f"live-{i:04d}", T0 + 60)
    with pytest.raises(NonceCacheFull) as err:
        cache.check_and_remember("one-too-many", T0 + 60)
    assert isinstance(err.value, Unavailable) and isinstance(err.value, IdentityProviderUnavailable)
    assert err.value.retryable and err.value.retry_after is not None and err.value.retry_after > 0
    for i in range(100):  # every live nonce is still remembered: no replay became possible
        assert cache.check_and_remember(f"live-{i:04d}", T0 + 60) is False
    clock.now = T0 + 61
    assert cache.check_and_remember("one-too-many", clock.now + 60) is True


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", [None, "", 12345, b"bytes-nonce", "x" * 1000, "\ud800abc"])
def test_malformed_nonce_is_invalid_input(kind: str, tmp_path: Path, bad: object) -> None:
    cache = _make(kind, tmp_path, Clock())
    with pytest.raises(InvalidInput):
        cache.check_and_remember(bad, T0 + 10)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", [None, "soon", float("nan"), float("inf"), True])
def test_malformed_expiry_is_invalid_input(kind: str, tmp_path: Path, bad: object) -> None:
    with pytest.raises(InvalidInput):
        _make(kind, tmp_path, Clock()).check_and_remember("nonce-0001", bad)  # type: ignore[arg-type]


# -- O(1) amortised: count the work, not the time -----------------------------------------

def _steady_state_work_per_call(live: int, calls: int) -> tuple[float, int]:
    """Keep `live` nonces alive (each lives WINDOW seconds, one arrives per WINDOW/live
    seconds, so about one expires per call) and return the work per call and the peak size."""
    clock = Clock()
    cache = InMemoryNonceCache(clock, max_entries=2 * live)
    step = WINDOW / live
    for i in range(live):  # warm up to the steady population
        cache.check_and_remember(f"warm-{i}", clock.now + WINDOW)
        clock.now += step
    before, peak = cache.work, 0
    for i in range(calls):
        assert cache.check_and_remember(f"n-{i}", clock.now + WINDOW)
        clock.now += step
        peak = max(peak, len(cache))
    return (cache.work - before) / calls, peak


def test_nonce_check_cost_does_not_grow_with_live_nonces() -> None:
    small, small_peak = _steady_state_work_per_call(1_000, 5_000)
    large, large_peak = _steady_state_work_per_call(150_000, 5_000)
    # One lookup + about one expired entry + a share of the per-second buckets; the same at 150x
    # the population. (The old cache copied all live entries on every call above 1,024: ~150,000.)
    assert small <= 4 and large <= 4, (small, large)
    assert large <= small * 1.5 + 0.5, (small, large)
    # memory stays at the live population plus about one second of arrivals (bucket granularity)
    assert small_peak <= 1_000 + 2 * 1_000 / WINDOW and large_peak <= 150_000 + 2 * 150_000 / WINDOW


def test_idle_period_costs_the_buckets_not_the_seconds() -> None:
    clock = Clock()
    cache = InMemoryNonceCache(clock)
    for i in range(100):
        cache.check_and_remember(f"n-{i}", clock.now + 5)
    clock.now += 10 * 365 * 86400  # ten years idle
    before = cache.work
    assert cache.check_and_remember("after-idle", clock.now + 5)
    assert cache.work - before <= 100 + 10 and len(cache) == 1


# -- SQLite: shared between processes -------------------------------------------------------

def _race(path: str, nonces: list[str], barrier, results) -> None:
    try:
        cache = SqliteNonceCache(path, lambda: T0)
        barrier.wait(timeout=30)
        accepted = [n for n in nonces if cache.check_and_remember(n, T0 + 60)]
        cache.close()
        results.put(("ok", accepted))
    except BaseException as exc:
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def test_processes_sharing_a_sqlite_cache_refuse_each_others_replays(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    path = str(tmp_path / "shared-nonces.sqlite3")
    SqliteNonceCache(path).close()  # create + migrate once; the race is about nonces
    nonces = [f"shared-{i:05d}" for i in range(300)]
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(path, nonces, barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [kind for kind, _ in outcomes] == ["ok", "ok"], outcomes
    first, second = (set(accepted) for _, accepted in outcomes)
    assert not first & second  # no nonce was accepted by both processes
    assert first | second == set(nonces)


def test_two_gateway_replicas_sharing_a_cache_refuse_a_replay_across_replicas(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "replicas.sqlite3"
    replicas = [
        GatewayProvider(SECRET, nonce_cache=SqliteNonceCache(path, lambda: T0), clock=lambda: T0) for _ in range(2)
    ]
    headers = sign_gateway_headers(
        SECRET, method="GET", path="/v1/recall", tenant_id="acme", user_id="u1", agent_id="a",
        timestamp=int(T0), nonce="replica-nonce-1",
    )
    request = GatewayRequest(method="GET", path="/v1/recall", headers=headers)
    assert asyncio.run(replicas[0].authenticate(request)).user_id == "u1"
    from identity.errors import InvalidCredential

    with pytest.raises(InvalidCredential, match="replayed"):
        asyncio.run(replicas[1].authenticate(request))


def test_sqlite_cache_purges_expired_rows_in_batches(tmp_path: Path) -> None:
    clock = Clock()
    cache = SqliteNonceCache(tmp_path / "n.sqlite3", clock, purge_batch=64)
    for i in range(500):
        cache.check_and_remember(f"old-{i}", T0 + 5)
    assert len(cache) == 500
    clock.now = T0 + 10
    for i in range(4):
        cache.check_and_remember(f"new-{i}", clock.now + 5)
    assert len(cache) == 500 - 4 * 64 + 4
    for i in range(4, 20):
        cache.check_and_remember(f"new-{i}", clock.now + 5)
    assert len(cache) == 20  # the table holds the live nonces once the backlog is gone


def test_gateway_with_a_full_cache_refuses_new_requests_as_retryable(tmp_path: Path) -> None:
    import asyncio

    provider = GatewayProvider(
        SECRET, nonce_cache=InMemoryNonceCache(lambda: T0, max_entries=1), clock=lambda: T0
    )

    def request(nonce: str) -> GatewayRequest:
        headers = sign_gateway_headers(
            SECRET, method="GET", path="/", tenant_id="acme", user_id="u1", agent_id="a",
            timestamp=int(T0), nonce=nonce,
        )
        return GatewayRequest(method="GET", path="/", headers=headers)

    asyncio.run(provider.authenticate(request("first-nonce")))
    with pytest.raises(NonceCacheFull):
        asyncio.run(provider.authenticate(request("second-nonce")))



def test_settings_can_share_the_replay_cache_between_processes(tmp_path: Path) -> None:
    from identity.settings import build_provider, load_settings

    path = tmp_path / "gw-nonces.sqlite3"
    settings = load_settings(
        provider="gateway",
        gateway={"secret": "k" * 32, "nonce_db_path": str(path), "max_live_nonces": 5},
    )
    provider = build_provider(settings)
    assert isinstance(provider._nonces, SqliteNonceCache) and provider._nonces.path == path
    assert isinstance(build_provider(load_settings(provider="gateway", gateway={"secret": "k" * 32}))._nonces, InMemoryNonceCache)


def test_a_nonce_check_waiting_on_another_process_lock_leaves_the_event_loop_serving(tmp_path: Path) -> None:
    """The gateway provider checks nonces on the service's event loop. On SQLite the check is a
    write transaction that syncs to disk and, while another process holds the file's write lock,
    waits up to the busy timeout: done inline, it would stall every request of the worker. The
    loop must keep turning while the check waits, and the check must still be exact afterwards."""
    path = tmp_path / "nonces.sqlite3"
    cache = SqliteNonceCache(path, Clock())
    other = sqlite3.connect(path, isolation_level=None)  # another process's connection, holding the write lock

    async def scenario() -> list[int]:
        other.execute("BEGIN IMMEDIATE")
        check = asyncio.ensure_future(cache.check_and_remember_async("nonce-0001", T0 + 10))
        turns = []
        for i in range(10):  # the loop serves other work while the check waits for the lock
            await asyncio.sleep(0.01)
            turns.append(i)
        assert not check.done()
        other.execute("COMMIT")
        assert await check is True
        assert await cache.check_and_remember_async("nonce-0001", T0 + 10) is False
        return turns

    try:
        assert asyncio.run(scenario()) == list(range(10))
    finally:
        other.close()
        cache.close()


@pytest.mark.parametrize("kind", KINDS)
def test_the_async_check_is_the_same_atomic_step(kind: str, tmp_path: Path) -> None:
    cache = _make(kind, tmp_path, Clock())

    async def many() -> list[bool]:
        return list(await asyncio.gather(*(cache.check_and_remember_async("nonce-0002", T0 + 10) for _ in range(8))))

    assert sorted(asyncio.run(many())) == [False] * 7 + [True]
    assert cache.check_and_remember("nonce-0002", T0 + 10) is False
