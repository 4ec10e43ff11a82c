"""Model evaluator: Claude (through services/llm.py) judges one criterion; its answer is checked strictly.

The answer must be one JSON object with exactly the keys ``label``, ``reason`` and ``sentence_ids``,
a label from :class:`~services.eligibility.labels.Label`, a short non-empty reason and only sentence
numbers that were shown to the model.  A reply that breaks any of that is sent back once with the
problem named; a second bad reply becomes "not enough information" with :data:`UNREADABLE_REASON`.

:class:`CombinedEvaluator` is the seam the rules leave open (:class:`~services.eligibility.rules.CriterionEvaluator`):
the rules decide when they can, and the model is asked only about what they leave open.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from services.eligibility.labels import Label, check_kind
from services.eligibility.parser import Criterion, CriterionKind, unescape_markdown
from services.eligibility.patient import PatientFacts
from services.eligibility.rules import (
    MAX_CRITERION_CHARS,
    CriterionEvaluator,
    Judgement,
    Patient,
    criterion_text_for,
    evaluate,
    patient_facts,
)
from services.llm import DEFAULT_MODEL, ModelClient

log = logging.getLogger(__name__)

PROMPT_PATH = Path(__file__).parent / "prompts" / "criterion.md"
UNREADABLE_REASON = "The model's answer could not be read."
ANSWER_KEYS = ("label", "reason", "sentence_ids")
MAX_REASON_CHARS = 500
DEFAULT_MAX_TOKENS = 400
# Labels the rules give when they cannot decide; only these are passed on to the model.
OPEN_LABELS = frozenset({Label.NOT_ENOUGH_INFO, Label.NEEDS_DISCUSSION})
_LABEL_VALUES = tuple(label.value for label in Label)


class MalformedAnswer(ValueError):
    """The model's reply is not the JSON object the prompt asks for; the message says what is wrong."""


def load_prompt() -> str:
    """The evaluator's system prompt, read from prompts/criterion.md."""
    return PROMPT_PATH.read_text(encoding="utf-8").strip()


# --- Building the question -------------------------------------------------------------------------

_OWN_TAGS = re.compile(r"<\s*/?\s*(criterion|patient)\b", re.I)


def _defuse(text: str) -> str:
    """Keep untrusted text from closing or opening the tags that frame it."""
    return _OWN_TAGS.sub(lambda m: m.group(0).replace("<", "‹"), text)


def _yes_no(value: bool | None) -> str:
    return "not stated" if value is None else ("yes" if value else "no")


def describe_patient(facts: PatientFacts) -> str:
    """The patient as the model sees them: structured facts, record type, and numbered statements."""
    if facts.age is None:
        age = "not stated"
    elif facts.age < 2:
        age = f"{round(facts.age * 12)} months"
    else:
        age = f"{facts.age:g} years"
    if facts.from_note:
        record = "complete clinical summary (a condition it does not mention can be taken as absent)"
    else:
        record = "profile the patient told us (only what they chose to share; silence proves nothing)"
    lines = [
        f"Age: {age}",
        f"Sex: {facts.sex or 'not stated'}",
        f"Pregnant: {_yes_no(facts.pregnant)}",
        f"ECOG performance status: {'not stated' if facts.ecog is None else facts.ecog}",
        f"Healthy volunteer: {_yes_no(facts.healthy_volunteer)}",
        f"Record type: {record}",
        "",
        "<patient>",
    ]
    if facts.sentences:
        lines += [f"{s.id}. {_defuse(s.text)}" for s in facts.sentences]
    else:
        lines.append("(no statements)")
    lines.append("</patient>")
    return "\n".join(lines)


def build_question(criterion_text: str, kind: CriterionKind, facts: PatientFacts) -> str:
    """The user message for one criterion and one patient."""
    text = re.sub(r"\s+", " ", unescape_markdown(criterion_text)).strip() or "(empty)"
    return (
        f"Kind of line: {kind}\n\n<criterion>\n{_defuse(text)}\n</criterion>\n\n"
        f"{describe_patient(facts)}\n\n"
        "Answer with the JSON object only."
    )


# --- Reading the answer ----------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.S | re.I)


def reply_text(message: Mapping[str, Any]) -> str:
    """The text blocks of a Messages API reply dict, joined."""
    parts = [b.get("text", "") for b in message.get("content") or [] if isinstance(b, Mapping) and b.get("type") == "text"]
    return "".join(str(p) for p in parts)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    repeated = sorted(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
    if repeated:
        raise MalformedAnswer(f"the key(s) {', '.join(repeated)} appear more than once")
    return dict(pairs)


def parse_answer(text: str, allowed_ids: Iterable[int]) -> tuple[Label, str, tuple[int, ...]]:
    """Label, reason and sentence ids from a reply; raises MalformedAnswer naming the first problem.

    A single code fence around the object is tolerated; anything else around it is not.
    """
    body = text.strip()
    fenced = _FENCE.fullmatch(body)
    if fenced:
        body = fenced.group(1)
    if not body:
        raise MalformedAnswer("the answer is empty")
    try:
        data = json.loads(body, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise MalformedAnswer(f"it is not a single valid JSON object ({exc.msg} at position {exc.pos})") from None
    if not isinstance(data, dict):
        raise MalformedAnswer(f"it is a JSON {type(data).__name__}, not an object")
    missing = [k for k in ANSWER_KEYS if k not in data]
    extra = sorted(k for k in data if k not in ANSWER_KEYS)
    problems = [f"{what} key(s) {', '.join(keys)}" for what, keys in (("missing", missing), ("unexpected", extra)) if keys]
    if problems:
        raise MalformedAnswer("; ".join(problems))
    label = data["label"]
    if not isinstance(label, str) or label not in _LABEL_VALUES:
        raise MalformedAnswer(f"label {json.dumps(label)[:60]} is not one of {', '.join(_LABEL_VALUES)}")
    reason = data["reason"]
    if not isinstance(reason, str) or not reason.strip():
        raise MalformedAnswer("reason must be a non-empty string")
    if len(reason.strip()) > MAX_REASON_CHARS:
        raise MalformedAnswer(f"reason is {len(reason.strip())} characters; at most {MAX_REASON_CHARS} are allowed")
    ids = data["sentence_ids"]
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise MalformedAnswer("sentence_ids must be a list of whole numbers")
    unknown = sorted(set(ids) - set(allowed_ids))
    if unknown:
        raise MalformedAnswer(f"sentence_ids {unknown} are not numbers of the patient statements")
    return Label(label), re.sub(r"\s+", " ", reason).strip(), tuple(sorted(set(ids)))


# --- The evaluators --------------------------------------------------------------------------------


class ModelEvaluator:
    """Judge one criterion with the model; malformed answers are retried once, then marked unknown."""

    def __init__(
        self,
        client: ModelClient,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        prompt: str | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.prompt = prompt if prompt is not None else load_prompt()

    def _ask(self, messages: list[dict[str, Any]]) -> str:
        system = [{"type": "text", "text": self.prompt, "cache_control": {"type": "ephemeral"}}]
        reply = self.client.create(model=self.model, max_tokens=self.max_tokens, system=system, messages=messages)
        return reply_text(reply)

    def __call__(self, criterion_text: str, kind: CriterionKind, patient: Patient) -> Judgement:
        """The model's judgement of one criterion (AssistantUnavailable from the API is not caught)."""
        check_kind(kind)
        facts = patient_facts(patient)
        allowed = [s.id for s in facts.sentences]
        messages: list[dict[str, Any]] = [{"role": "user", "content": build_question(criterion_text, kind, facts)}]
        for attempt in (1, 2):
            text = self._ask(messages)
            try:
                label, reason, ids = parse_answer(text, allowed)
            except MalformedAnswer as problem:
                # Not the problem itself: it can quote the answer, and the answer can quote the patient.
                log.warning("unreadable model answer (attempt %d)", attempt)
                messages = messages[:1] + [
                    {"role": "assistant", "content": text.strip() or "(no text)"},
                    {
                        "role": "user",
                        "content": f"That answer could not be used: {problem}. Reply again with only the JSON "
                        'object {"label": ..., "reason": ..., "sentence_ids": [...]}, where label is one of '
                        f"{', '.join(_LABEL_VALUES)}.",
                    },
                ]
                continue
            return Judgement(label, reason, facts.evidence(ids), source="model")
        return Judgement(Label.NOT_ENOUGH_INFO, UNREADABLE_REASON, (), source="model")


class CombinedEvaluator:
    """Rules first; when they leave a criterion open and a model evaluator is given, the model decides."""

    def __init__(self, model: CriterionEvaluator | None = None) -> None:
        self.model = model

    def __call__(self, criterion_text: str, kind: CriterionKind, patient: Patient) -> Judgement:
        """The rules' judgement when it is decisive, else the model's (the rules' again if the model's is unreadable)."""
        facts = patient_facts(patient)
        ruled = evaluate(criterion_text, kind, facts)
        if self.model is None or ruled.label not in OPEN_LABELS or len(criterion_text) > MAX_CRITERION_CHARS:
            return ruled  # decided, or a line too long to read (nor to send)
        judged = self.model(criterion_text, kind, facts)
        if judged.label == Label.NOT_ENOUGH_INFO and judged.reason == UNREADABLE_REASON:
            # The rules' own "not enough information" says what is missing; keep that for the patient.
            return ruled
        return judged


def combined_evaluator(client: ModelClient | None = None, **model_options: Any) -> CombinedEvaluator:
    """Rules only without a client; rules then the model (ModelEvaluator(client, **model_options)) with one."""
    return CombinedEvaluator(ModelEvaluator(client, **model_options) if client is not None else None)


def judge_criteria(
    criteria: Iterable[Criterion],
    patient: Patient,
    evaluator: CriterionEvaluator | None = None,
    *,
    max_workers: int = 4,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[tuple[Criterion, Judgement]]:
    """Judge every criterion (rules only by default) with up to max_workers at once; results keep input order.

    on_progress(done, total) is called after each criterion, from the calling thread.
    """
    items = list(criteria)
    facts = patient_facts(patient)
    judge: CriterionEvaluator = evaluator if evaluator is not None else evaluate
    results: list[Judgement | None] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        futures = {
            pool.submit(judge, criterion_text_for(c), c.kind, facts): i for i, c in enumerate(items)
        }
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                results[futures[future]] = future.result()
                if on_progress is not None:
                    on_progress(done, len(items))
        except BaseException:
            # One failure (the model service down) ends the run; do not start the calls still queued.
            for future in futures:
                future.cancel()
            raise
    return [(c, j) for c, j in zip(items, results, strict=True) if j is not None]
