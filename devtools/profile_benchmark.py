"""Profile-mode benchmark: guided mode's rules on hand-judged criterion lines of the adjudicated patient
forms.

Each file of tests/fixtures/profile_judgements/ names a guided form (tests/fixtures/guided_forms/) and holds
three trials with their criteria text and every line judged by hand (see that folder's README). The forms are
read as the guided page reads them (services.commands.match_cmd.intake_form → PatientProfile.from_answers:
silence is unknown) and every trial is judged by guided mode's own code
(services.assistant.guided.GuidedAssistant.judge), so this measures what a patient is shown.

A line's outcome is what it does to the patient: "for" (an inclusion met, an exclusion not met, or a line that
does not apply), "against" (an inclusion not met, an exclusion met) or "open" (not enough information, needs
discussion). Accuracy compares outcomes; a *wrong confident verdict against the patient* is a line the rules
held against the patient that the judge did not."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict, deque
from pathlib import Path
from typing import Any

from devtools.eligibility_benchmark import wilson_interval
from services.errors import BadInput

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
DEFAULT_DIR = FIXTURES / "profile_judgements"
OUTCOMES: tuple[str, ...] = ("for", "against", "open")
_EXPECTED = ("met", "not met", "not enough information", "not applicable")


def outcome(kind: str, status: str) -> str:
    """A line's effect on the patient from its kind and status (gold spelling or a Label value)."""
    status = status.replace("_", " ")
    if status in ("not enough information", "not enough info", "needs discussion"):
        return "open"
    if status == "not applicable":
        return "for"
    if status not in ("met", "not met"):
        raise ValueError(f"unknown status {status!r}")
    return "against" if (kind == "inclusion") == (status == "not met") else "for"


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def load_cases(directory: str | Path = DEFAULT_DIR) -> list[dict[str, Any]]:
    """The judged files, each with its form read; BadInput for a file that lacks a field or has a bad label.
    """
    folder = Path(directory)
    files = sorted(folder.glob("*.json"))
    if not files:
        raise BadInput(f"no judged forms in {folder}")
    cases = []
    for file in files:
        doc = json.loads(file.read_text(encoding="utf-8"))
        form = json.loads((FIXTURES / doc["form"]).read_text(encoding="utf-8"))["form"]
        for trial in doc["trials"]:
            for line in trial["lines"]:
                if line.get("expected") not in _EXPECTED or line.get("kind") not in (
                    "inclusion",
                    "exclusion",
                ):
                    raise BadInput(f"{file.name} {trial['nct_id']}: bad line {line.get('text', '')[:60]!r}")
                if not str(line.get("reason") or "").strip():
                    raise BadInput(f"{file.name} {trial['nct_id']}: a line without a reason")
        cases.append({"name": file.stem, "form": form, "trials": doc["trials"]})
    return cases


def judge_trial(form: dict[str, Any], trial: dict[str, Any]) -> list[dict[str, Any]]:
    """Guided mode's judgement of each parsed criterion line of one trial: kind, text, label, reason."""
    from services.assistant.guided import GuidedAssistant
    from services.commands.match_cmd import intake_form
    from services.eligibility.parser import parse_criteria
    from services.eligibility.patient import PatientProfile
    from services.eligibility.rules import criterion_text_for

    patient = PatientProfile.from_answers(intake_form(form).profile_fields())
    parsed = parse_criteria(trial["criteria"])
    criteria = [*parsed.inclusion, *parsed.exclusion]
    info = {
        "inclusion": [criterion_text_for(c) for c in parsed.inclusion],
        "exclusion": [criterion_text_for(c) for c in parsed.exclusion],
    }
    results, _ = GuidedAssistant.judge(info, patient)
    listed = results[len(results) - len(criteria) :] if criteria else []
    return [
        {"kind": c.kind, "text": c.full_text, "label": r.label.value, "reason": r.reason}
        for c, r in zip(criteria, listed, strict=True)
    ]


def score_trial(trial: dict[str, Any], judged: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Each gold line paired with the rules' line of the same text (in order), or the line it was merged into
    as a sub-item; a line the parser no longer gives at all (a heading) counts as "for". Also how many parsed
    lines had no gold line of their own."""
    by_text: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
    for j in judged:
        by_text[_key(j["text"])].append(j)
    rows = []
    for gold in trial["lines"]:
        queue = by_text.get(_key(gold["text"]))
        rule = queue.popleft() if queue else None
        if rule is None:  # merged into a parsed line as its sub-item: that line's judgement covers it
            rule = next((j for j in judged if _key(gold["text"]) in _key(j["text"])), None)
        got = outcome(rule["kind"], rule["label"]) if rule else "for"
        rows.append(
            {
                "nct_id": trial["nct_id"],
                "text": gold["text"],
                "gold": outcome(gold["kind"], gold["expected"]),
                "got": got,
                "gold_reason": gold["reason"],
                "label": rule["label"] if rule else "dropped",
                "rule_reason": rule["reason"] if rule else "",
                "kind": rule["kind"] if rule else gold["kind"],
            }
        )
    return rows, sum(len(q) for q in by_text.values())


def run_profile_benchmark(directory: str | Path = DEFAULT_DIR) -> dict[str, Any]:
    """Outcome accuracy (with its Wilson interval), the confusion table, and every wrong verdict against a
    patient."""
    rows: list[dict[str, Any]] = []
    unjudged = 0
    per_form: dict[str, dict[str, int]] = {}
    for case in load_cases(directory):
        form_rows: list[dict[str, Any]] = []
        for trial in case["trials"]:
            scored, extra = score_trial(trial, judge_trial(case["form"], trial))
            form_rows += scored
            unjudged += extra
        per_form[case["name"]] = {
            "lines": len(form_rows),
            "correct": sum(r["gold"] == r["got"] for r in form_rows),
        }
        rows += [{**r, "form": case["name"]} for r in form_rows]
    correct = sum(r["gold"] == r["got"] for r in rows)
    low, high = wilson_interval(correct, len(rows))
    position = {o: i for i, o in enumerate(OUTCOMES)}
    matrix = [[0] * len(OUTCOMES) for _ in OUTCOMES]
    for r in rows:
        matrix[position[r["gold"]]][position[r["got"]]] += 1
    wrong_against = [r for r in rows if r["got"] == "against" and r["gold"] != "against"]
    return {
        "mode": "profile",
        "directory": str(directory),
        "lines": len(rows),
        "correct": correct,
        "accuracy": round(correct / len(rows), 4) if rows else 0.0,
        "accuracy_ci95": [round(low, 4), round(high, 4)],
        "gold_counts": dict(Counter(r["gold"] for r in rows)),
        "confusion": {"labels": list(OUTCOMES), "rows_are": "judged by hand", "matrix": matrix},
        "wrong_against": wrong_against,
        "unjudged_lines": unjudged,
        "per_form": per_form,
    }


def format_profile_report(result: dict[str, Any]) -> str:
    """The profile benchmark as a short table for a terminal."""
    low, high = result["accuracy_ci95"]
    lines = [
        f"Profile-mode benchmark: {result['lines']} hand-judged lines of {len(result['per_form'])} forms "
        f"({result['directory']})",
        "",
        f"accuracy {result['accuracy']:.3f}  (95% CI {low:.3f}-{high:.3f}; {result['correct']} correct)",
        f"wrong confident verdicts against the patient: {len(result['wrong_against'])}",
        f"parsed lines without a judgement: {result['unjudged_lines']}",
        "",
        "Confusion (rows: judged by hand, columns: rules):",
        " " * 9 + "".join(f"{o:>9}" for o in OUTCOMES),
    ]
    for label, row in zip(OUTCOMES, result["confusion"]["matrix"], strict=True):
        lines.append(f"{label:>9}" + "".join(f"{n:>9}" for n in row))
    for r in result["wrong_against"]:
        lines += [
            "",
            f"AGAINST {r['form']} {r['nct_id']} ({r['kind']}): {r['text'][:150]}",
            f"  rules: {r['rule_reason'][:200]}",
            f"  judged: {r['gold']} - {r['gold_reason']}",
        ]
    return "\n".join(lines)
