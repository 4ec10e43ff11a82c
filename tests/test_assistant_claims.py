"""The checks on an answer's claims (services.assistant.claims) and on saved matches
(services.assistant.match_check): every cue row's own example, the three false claims of issue 37, true
claims left alone, and the invented criterion refused by save_matched_trials."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from services.assistant import AssistantSession
from services.assistant import claims as c
from services.assistant import match_check as mc
from services.assistant.registry import ToolContext
from services.assistant.tools import build_registry
from services.matching.context import load_rules
from tests.memory_backend import TRIALS, MemoryBackend

NCT = "NCT00000001"  # sites in Boston, MA and Santa Barbara, CA (tests.memory_backend)
FALSE_CLAIMS = f"You are eligible for {NCT}, which recruits in Houston and has a 90% response rate."
LOMPOC = {
    "diagnosis": "breast cancer",
    "age": 52,
    "sex": "female",
    "location": "Lompoc, California",
    "latitude": 34.6391,
    "longitude": -120.4579,
    "travel_radius_miles": 100,
}


def _rows(category: str) -> list[c.Term]:
    return [t for t in c.load_terms() if t.category == category]


@pytest.mark.parametrize("term", _rows("verdict"), ids=lambda t: t.cue)
def test_claims_verdict_row_reads_its_example(term: c.Term) -> None:
    assert [f"{m.polarity} {m.assertion}" for m in c.verdict_mentions(term.example)] == [term.expected]


@pytest.mark.parametrize("term", _rows("unit") + _rows("comparator"), ids=lambda t: f"{t.category}:{t.cue}")
def test_claims_number_row_reads_its_example(term: c.Term) -> None:
    assert [f"{m.value} {m.unit} {m.comparator}" for m in c.number_mentions(term.example)] == [term.expected]


@pytest.mark.parametrize(
    "term", _rows("place_prep") + _rows("not_place"), ids=lambda t: f"{t.category}:{t.cue}"
)
def test_claims_place_row_reads_its_example(term: c.Term) -> None:
    assert c.place_mentions(term.example) == ([x for x in term.expected.split("|")] if term.expected else [])


@pytest.mark.parametrize("term", _rows("result_key"), ids=lambda t: t.cue)
def test_claims_result_key_row_reads_its_example(term: c.Term) -> None:
    found = c.Evidence()
    trial = c.TrialEvidence()
    c._walk(json.loads(term.example), found, trial)
    got = {
        "percent": [str(v) for v in found.percents],
        "miles": [str(v) for v in trial.distances],
        "place": sorted(trial.cities | trial.states | trial.countries),
    }[term.value]
    assert (
        term.expected in got or c.geo.fold(term.expected) in got or c.geo.country_code(term.expected) in got
    )


@pytest.mark.parametrize("rule", load_rules(c.CONTEXT_PATH), ids=lambda r: r.literal)
def test_claims_context_row_reads_its_example(rule: Any) -> None:  # noqa: ANN401 - a ContextRule
    with open(c.CONTEXT_PATH, encoding="utf-8") as fh:
        row = next(r for r in __import__("csv").DictReader(fh) if r["literal"] == rule.literal)
    assert [m.assertion for m in c.verdict_mentions(row["example"])] == [row["expected"]]


def test_claims_contraction_reads_as_negation() -> None:
    assert [m.allowed for m in c.verdict_mentions(f"You aren't eligible for {NCT}.")] == [
        frozenset({"excluded", "not_relevant"})
    ]


def test_claims_sentence_without_you_is_no_verdict() -> None:
    assert c.verdict_mentions(f"{NCT} takes eligible adults over 18.") == []


@pytest.mark.parametrize(
    ("claimed", "comparator", "actual", "ok"),
    [
        ("1159", "exact", 1159.3, True),
        ("1160", "exact", 1159.3, False),
        ("1200", "approx", 1159.3, True),
        ("1100", "approx", 1159.3, False),
        ("45", "approx", 44.6, True),
        ("12.5", "exact", 12.46, True),
        ("50", "at_most", 44.6, True),
        ("40", "at_most", 44.6, False),
        ("1000", "at_least", 1159.3, True),
        ("90", "exact", 60.0, False),
    ],
)
def test_claims_numbers_agree_within_the_written_rounding(
    claimed: str, comparator: str, actual: float, ok: bool
) -> None:
    assert c.agrees(Decimal(claimed), comparator, actual) is ok


def _result(tool_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": json.dumps(payload)}


def looked_up_session(verdict: str | None = "uncertain") -> AssistantSession:
    """A session whose tools returned NCT00000001's sites from Lompoc and its side effects, with a saved
    check."""
    backend = MemoryBackend()
    origin = (LOMPOC["latitude"], LOMPOC["longitude"])
    sites = backend.get_trial_locations(NCT, origin)
    events = {
        "nct_id": NCT,
        "has_results": True,
        "serious": [],
        "other": [{"term": "Nausea", "subjects_affected": 120, "subjects_at_risk": 200, "percent": 60.0}],
    }
    session = AssistantSession(phase="matching", patient_profile=dict(LOMPOC))
    session.messages = [
        {"role": "user", "content": [{"type": "text", "text": "I live in Lompoc and can travel 100 miles."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "get_trial_locations", "input": {"nct_id": NCT}}
            ],
        },
        {
            "role": "user",
            "content": [
                _result("t1", {"nct_id": NCT, "total_sites": 2, "sites": sites}),
                _result("t2", events),
            ],
        },
    ]
    session.note_seen([NCT])
    if verdict:
        session.matched_trials = [{"nct_id": NCT, "verdict": verdict, "fit_score": 60, "criteria": []}]
    return session


def test_claims_flags_the_three_false_claims() -> None:
    flags = c.check_claims(FALSE_CLAIMS, looked_up_session("uncertain"))

    assert [(f.claim, f.why) for f in flags] == [
        (FALSE_CLAIMS, f"the saved check of {NCT} says “Needs more information”"),
        (
            "Houston",
            f"{NCT}: none of its sites found in this conversation is there (its nearest site is in Santa "
            "Barbara, CA, 46 miles away)",
        ),
        ("90%", "no search or lookup in this conversation gives 90%"),
    ]
    assert {f.sentence for f in flags} == {FALSE_CLAIMS}
    banner = c.warning_text(flags)
    assert banner.startswith("Not checked:") and "Houston" in banner and "90%" in banner


def test_claims_flag_a_verdict_nobody_saved() -> None:
    flags = c.check_claims(f"Good news: {NCT} is a good fit for you.", looked_up_session(None))
    assert [f.why for f in flags] == [f"no eligibility check of {NCT} was saved in this conversation"]


def test_claims_true_claims_pass() -> None:
    session = looked_up_session("uncertain")
    text = (
        f"You might be eligible for {NCT}: it has a site in Santa Barbara, California, about 46 miles from "
        "Lompoc, within your 100 miles. Nausea hit 120 people, about 60% of those treated. It also has a "
        "site in Boston, Massachusetts. The trial opened in March."
    )
    assert c.check_claims(text, session) == []


def test_claims_an_excluded_trial_called_eligible_is_flagged_and_not_eligible_is_not() -> None:
    session = looked_up_session("excluded")
    assert len(c.check_claims(f"You are eligible for {NCT}.", session)) == 1
    assert c.check_claims(f"You are not eligible for {NCT}.", session) == []


def test_claims_a_later_sentence_refers_to_the_trial_named_before() -> None:
    session = looked_up_session("uncertain")
    flags = c.check_claims(f"Let us look at {NCT}. It recruits in Houston, Texas.", session)
    assert [f.claim for f in flags] == ["Houston", "Texas"]


# --------------------------------------------------------------------------------------------- saved matches


def _info(nct_id: str) -> dict[str, Any]:
    info = MemoryBackend().get_eligibility_criteria(nct_id)
    assert info is not None
    return dict(info)


def _criterion(text: str, status: str = "met") -> dict[str, Any]:
    return {"type": "inclusion", "criterion": text, "status": status, "plain": "p"}


def test_match_check_refuses_an_invented_criterion() -> None:
    match = {"verdict": "eligible", "criteria": [_criterion("Has heart failure")], "unknowns": []}
    problem = mc.criteria_problem(match, _info(NCT))
    assert problem is not None and problem.startswith(
        "1 criterion text(s) are not lines of this trial (“Has heart failure”)"
    )


def test_match_check_accepts_own_lines_parts_and_registry_limits() -> None:
    criteria = [
        _criterion("1. Confirmed BRCA1 or BRCA2 mutation"),
        _criterion("ECOG 0-1"),
        _criterion("prior PARP inhibitor…"),
        _criterion("Ages: 18 Years to no maximum"),
        _criterion("Sex: ALL"),
        _criterion("Age 18 years or older"),
    ]
    assert mc.foreign_criteria(criteria, _info(NCT)) == []


def test_match_check_eligible_needs_every_line_met_and_nothing_unknown() -> None:
    info = _info(NCT)
    lines = [*TRIALS[0]["inclusion"], *TRIALS[0]["exclusion"]]
    every = [_criterion(t) for t in lines]
    assert mc.verdict_problem({"verdict": "eligible", "criteria": every, "unknowns": []}, info) is None
    some = {"verdict": "eligible", "criteria": every[:1], "unknowns": []}
    assert "3 of the trial's own lines were not judged" in str(mc.verdict_problem(some, info))
    open_line = {
        "verdict": "eligible",
        "criteria": [*every[:-1], _criterion(lines[-1], "needs_discussion")],
        "unknowns": [],
    }
    assert "still open" in str(mc.verdict_problem(open_line, info))
    unknown = {"verdict": "eligible", "criteria": every, "unknowns": [{"kind": "question", "text": "Ask"}]}
    assert "fit cannot be 100" in str(mc.verdict_problem(unknown, info))


def test_save_matched_trials_refuses_the_invented_criterion_as_a_tool_result() -> None:
    session = looked_up_session(None)
    ctx = ToolContext(session, MemoryBackend())
    outcome = build_registry().run(
        "save_matched_trials",
        {
            "trials": [
                {
                    "nct_id": NCT,
                    "verdict": "eligible",
                    "summary": "s",
                    "unknowns": [],
                    "criteria": [_criterion("Has heart failure")],
                }
            ]
        },
        ctx,
    )
    assert outcome.is_error and session.matched_trials == []
    assert "not lines of this trial (“Has heart failure”)" in json.loads(outcome.content)["error"]


# --------------------------------------------------------------------------------------------- fake Messages
# API


def test_claims_through_the_fake_messages_api_flag_false_claims_and_refuse_the_invented_criterion() -> None:
    from services.assistant import Orchestrator
    from services.llm import LLMClient
    from tests.fake_anthropic import FakeAnthropic

    session = AssistantSession(phase="matching", patient_profile=dict(LOMPOC))
    session.flags["intake_complete"] = session.flags["search_complete"] = True
    invented = {
        "nct_id": NCT,
        "verdict": "eligible",
        "summary": "A good fit.",
        "unknowns": [],
        "criteria": [_criterion("Has heart failure")],
    }
    with FakeAnthropic() as fake:
        fake.add_tools(
            ("get_trial_locations", {"nct_id": NCT}), ("get_eligibility_criteria", {"nct_id": NCT})
        )
        fake.add_tools(("save_matched_trials", {"trials": [invented]}))
        fake.add_text(FALSE_CLAIMS)
        llm = LLMClient(api_key="test-key", base_url=fake.base_url, max_retries=0)
        result = Orchestrator(llm, MemoryBackend()).run_turn(session, "Which trial is best for me?")
        refusal = [b for b in fake.requests[2]["messages"][-1]["content"] if b["type"] == "tool_result"]

    assert [
        (b["is_error"], "not lines of this trial (“Has heart failure”)" in b["content"]) for b in refusal
    ] == [(True, True)]
    assert session.matched_trials == []
    assert result.text == FALSE_CLAIMS and result.flagged == [FALSE_CLAIMS]
    unchecked = [w.message for w in result.warnings if w.code == "unchecked_claim"]
    assert len(unchecked) == 1
    lines = unchecked[0].splitlines()[1:]
    assert lines == [
        f"“{FALSE_CLAIMS}” — no eligibility check of {NCT} was saved in this conversation.",
        f"“Houston” — {NCT}: none of its sites found in this conversation is there (its nearest site "
        "is in Santa Barbara, CA, 46 miles away).",
        "“90%” — no search or lookup in this conversation gives 90%.",
    ]


def test_match_check_a_line_cut_mid_word_by_its_ellipsis_is_still_its_own() -> None:
    """Guided mode saves a line longer than 600 characters cut to 599 and "…", often inside a word."""
    info = _info(NCT)
    info["exclusion"] = [
        "Prior PARP inhibitor treatment, including olaparib, niraparib, rucaparib or talazoparib"
    ]
    assert (
        mc.foreign_criteria([_criterion("Prior PARP inhibitor treatment, including olaparib, nira…")], info)
        == []
    )
    assert mc.foreign_criteria(
        [_criterion("Prior PARP inhibitor treatment, including olaparib, nira")], info
    ) == ["Prior PARP inhibitor treatment, including olaparib, nira"]
