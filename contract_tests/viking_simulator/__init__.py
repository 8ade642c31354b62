"""An in-process fake of hosted Viking Memory, served to httpx through `httpx.MockTransport`.

It models the SERVICE, not our adapter: it filters by whatever ids a request carries (so an
adapter that sends a wrong filter leaks, and a test sees the leak), requires user_id or
assistant_id on every search, requires memory_type on event/profile search, enforces id and
session formats and the 1000-message cap, overwrites a session's events on session-id reuse,
answers with the real envelopes and error codes, checks bearer keys and verifies SignerV4
signatures (with its own, independent implementation), and can inject faults on demand.

    sim = VikingSimulator()
    sim.create_collection("acme_mem")
    sim.add_api_key("k-secret", collections={"acme_mem"})
    client = VikingMemoryClient("https://viking.test", ApiKeyAuth("k-secret"), transport=sim.transport())

Where the real service is unknown or looser the simulator is STRICTER (documented per rule):
user/assistant/group ids must match `[A-Za-z][A-Za-z0-9_]{0,127}` like session ids.
Extraction for session/add is deterministic: one `sys_event_v1` event per user message, summary
= the message. Semantic scores are cosine similarities of `HashingEmbedder` vectors, clipped to
[0, 1]. Time is a manual clock (`sim.advance(seconds)`), so search lag is tested by polling and
advancing, never by sleeping.
"""

from contract_tests.viking_simulator.simulator import Fault, StoredEvent, VikingSimulator

__all__ = ["VikingSimulator", "Fault", "StoredEvent"]
