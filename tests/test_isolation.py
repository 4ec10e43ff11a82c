"""Isolation between users of one instance: sessions only by their own token, no cross-talk under concurrency,
share links free of patient data, and a damaged stored session that harms nobody else.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from urllib.parse import parse_qs

from services.assistant.registry import ToolContext
from services.assistant.session import AssistantSession
from services.assistant.store import SessionStore, storage_key
from services.assistant.tools import build_registry
from services.assistant.view_model import filter_changes
from services.dashboard.filters import Filters
from tests.memory_backend import MemoryBackend

PROFILE = {
    "diagnosis": "non-small cell lung cancer",
    "stage": "stage IIIB",
    "subtype": "adenocarcinoma",
    "biomarkers": ["EGFR exon 19 deletion", "PD-L1 80%"],
    "treatments": ["carboplatin", "osimertinib"],
    "other_conditions": ["type 2 diabetes", "prior stroke"],
    "notes": "smoked 30 pack-years until 2019",
    "age": 63,
    "sex": "female",
    "location": "Denver, CO",
}
PRIVATE_WORDS = ["IIIB", "adenocarcinoma", "EGFR", "PD-L1", "carboplatin", "osimertinib", "diabetes", "stroke",
                 "pack-years", "smoked", "exon"]
ALLOWED_QUERY_KEYS = {"condition", "intervention", "status", "phase", "type", "funder", "sponsor", "country",
                      "state", "near", "radius", "unit", "age", "sex", "healthy", "start_from", "start_to",
                      "enroll_min", "enroll_max", "results"}


def _session_with(name: str) -> AssistantSession:
    s = AssistantSession()
    s.patient_profile = {"diagnosis": f"diagnosis of {name}", "biomarkers": [f"marker-{name}"]}
    s.messages = [{"role": "user", "content": f"I am {name}"}]
    s.report_html = f"<p>report for {name}</p>"
    return s


def _filters_from_assistant(values: dict) -> Filters:
    """The dashboard filter after the Assistant page applies the assistant's filter values (its own path)."""
    return replace(Filters(), **filter_changes(values))


def test_isolation_tokens_are_long_and_unguessable():
    ids = {AssistantSession().id for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) >= 43 for i in ids)  # 32 random bytes, URL-safe: 256 bits


def test_isolation_sessions_are_reachable_only_by_their_own_token(db):
    store = SessionStore(db)
    alice, bob = _session_with("alice"), _session_with("bob")
    store.save(alice)
    store.save(bob)
    assert store.load(alice.id).to_dict() == alice.to_dict()
    assert store.load(bob.id).to_dict() == bob.to_dict()
    # near misses of a token reach nothing: a prefix, a changed character, a case change, an empty link
    near_misses = [alice.id[:-1], alice.id[:22], alice.id[:-1] + ("A" if alice.id[-1] != "A" else "B"),
                   alice.id.swapcase(), "", "%"]
    assert [store.load(t) for t in near_misses] == [None] * len(near_misses)
    opened = [store.open(t) for t in near_misses]
    assert all(not o.resumed and o.session.id not in (alice.id, bob.id) for o in opened)
    assert all(not o.session.patient_profile and not o.session.messages for o in opened)


def test_isolation_concurrent_users_never_see_each_other(db):
    store = SessionStore(db)
    users = [_session_with(f"user{i}") for i in range(12)]
    seen: dict[int, list[dict]] = {}
    problems: list[str] = []

    def user(i: int) -> None:
        own = users[i]
        rounds = []
        for turn in range(6):
            own.messages.append({"role": "user", "content": f"user{i} turn {turn}"})
            own.patient_profile["age"] = 20 + i
            store.save(own)
            loaded = store.load(own.id)
            if loaded is None:
                problems.append(f"user{i} lost their session")
                return
            rounds.append(loaded.to_dict())
        seen[i] = rounds

    threads = [threading.Thread(target=user, args=(i,)) for i in range(len(users))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert problems == []
    for i, rounds in seen.items():
        for r in rounds:
            text = repr(r)
            assert r["id"] == users[i].id
            assert [f"user{j}" for j in range(len(users)) if f"'I am user{j}'" in text] == [f"user{i}"]
            assert r["report_html"] == f"<p>report for user{i}</p>"
            assert r["patient_profile"]["age"] == 20 + i
        assert rounds[-1] == users[i].to_dict()


def test_isolation_share_link_carries_only_filter_fields():
    session = AssistantSession()
    registry = build_registry()
    ctx = ToolContext(session, MemoryBackend())
    saved = registry.run("save_patient_profile", PROFILE, ctx)
    shared = registry.run("emit_partial_filters", {"condition": "non-small cell lung cancer", "age": 63,
                                                   "sex": "female", "near": "Denver, CO", "radius": 150,
                                                   "radius_unit": "mi"}, ctx)
    assert (saved.is_error, shared.is_error) == (False, False)
    # what the assistant shares with the dashboard is the filter fields only …
    assert sorted(session.filters) == ["age", "condition", "near", "radius", "radius_unit", "sex"]
    f = _filters_from_assistant(session.filters)
    query = f.query_string()
    assert set(parse_qs(query)) <= ALLOWED_QUERY_KEYS
    assert parse_qs(query) == {"condition": ["non-small cell lung cancer"], "near": ["Denver, CO"],
                               "radius": ["150"], "age": ["63"], "sex": ["FEMALE"]}
    # … and nothing else of the profile reaches the link, whatever the profile holds
    assert [w for w in PRIVATE_WORDS if w.lower() in query.lower()] == []
    assert session.id not in query


def test_isolation_seeding_from_the_dashboard_and_back_keeps_the_profile_out():
    session = AssistantSession()
    session.seed_from_dashboard({"condition": "melanoma", "age": 40, "sex": "MALE", "near": "Lyon, France",
                                 "radius": 50, "radius_unit": "km", "status": ["RECRUITING"]})
    session.patient_profile.update(PROFILE)
    query = _filters_from_assistant(session.filters).query_string()
    assert set(parse_qs(query)) <= ALLOWED_QUERY_KEYS
    assert [w for w in PRIVATE_WORDS if w.lower() in query.lower()] == []


def test_isolation_corrupt_stored_session_opens_fresh_and_leaves_others_alone(db, caplog):
    store = SessionStore(db)
    damaged, healthy = _session_with("damaged"), _session_with("healthy")
    store.save(damaged)
    store.save(healthy)
    # the row's JSON is valid but no longer a session (as after a bad manual edit or a partial write)
    db.execute("UPDATE app.sessions SET data = jsonb_set(data, '{phase}', '\"teleport\"') WHERE token = :t",
               {"t": storage_key(damaged.id)})
    opened = store.open(damaged.id)
    assert (opened.resumed, opened.notice) == (False, (
        "The saved session behind that link could not be read (its stored data is damaged), "
        "so a new session was started. Other sessions are not affected."))
    assert opened.session.id != damaged.id
    assert (opened.session.messages, opened.session.patient_profile) == ([], {})
    other = store.open(healthy.id)
    assert (other.resumed, other.notice, other.session.to_dict()) == (True, None, healthy.to_dict())
    # the log names the problem but never the patient's data or the whole token
    assert "is unreadable" in caplog.text and "$.phase" in caplog.text
    assert damaged.id not in caplog.text
    assert "diagnosis of damaged" not in caplog.text
    # a fresh session saved over the damaged one's place works normally
    store.save(opened.session)
    assert store.load(opened.session.id).to_dict() == opened.session.to_dict()


def test_isolation_token_mismatch_in_stored_data_is_refused(db):
    store = SessionStore(db)
    victim, other = _session_with("victim"), _session_with("other")
    store.save(victim)
    store.save(other)
    # a row whose data claims another session's id must not hand out that session
    db.execute("UPDATE app.sessions SET data = (SELECT data FROM app.sessions WHERE token = :v) WHERE token = :o",
               {"v": storage_key(victim.id), "o": storage_key(other.id)})
    opened = store.open(other.id)
    assert (opened.resumed, opened.session.id in (victim.id, other.id)) == (False, False)
    assert opened.session.messages == []
