"""Questions by specialist: the report's questions for the doctor grouped by who can answer them.

Like a tumour board, each member of the care team sees only what their part of the question needs. A criterion
is routed to a role by its content (:func:`category_of`), and :data:`PERMISSIONS` — the role matrix — says which
fact kinds (profile fields and criterion categories) each role may receive. :func:`facts_for` is the only place
that builds a role's input, and each role's builder (rules in :data:`RULE_BUILDERS`, or one short model call with
that role's own prompt) receives nothing else. A reviewer pass (:func:`review`) then looks at each selected trial
as a whole and flags only conflicts, safety points, missing-critical and new-critical facts; it is silent
otherwise. Nothing here imports Streamlit.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from services.assistant import asking
from services.eligibility.match import OPEN_CRITERION_STATUSES
from services.eligibility.model import reply_text
from services.eligibility.plain import (
    _LAB_VALUE,
    _MEASURABLE,
    _ORGAN_FUNCTION,
    patient_question,
    topic_of,
)
from services.errors import AssistantUnavailable
from services.inert import one_line
from services.llm import DEFAULT_MODEL, Message, ModelClient

log = logging.getLogger(__name__)
T = TypeVar("T")

Role = Literal["specialist", "radiology", "pathology_lab", "primary_care", "trial_team"]
ROLES: tuple[Role, ...] = ("specialist", "radiology", "pathology_lab", "primary_care", "trial_team")
PROMPT_DIR = Path(__file__).parent / "prompts" / "careteam"
MAX_PER_ROLE = 6
MAX_ITEMS_PER_ROLE = 12  # criteria one role's builder (or model call) receives
MAX_FLAGS_PER_TRIAL = 6
MAX_QUESTION_CHARS = 300
MODEL_MAX_TOKENS = 700
MODEL_DEADLINE_SECONDS = 90.0
# The stand-in criterion guided mode adds when a trial's criteria text is missing.
FULL_CRITERIA = "Full eligibility criteria"

# --- the role matrix ----------------------------------------------------------------------------------------

# Profile facts by kind: fact kind -> the session profile's keys that hold it. "lab_values" and the other
# kinds with keys the intake does not ask for yet are here so that a later field is routed from day one.
PROFILE_FACTS: dict[str, tuple[str, ...]] = {
    "age_sex": ("age", "sex"),
    "diagnosis": ("diagnosis", "subtype"),
    "stage": ("stage",),
    "biomarkers": ("biomarkers",),
    "lab_values": ("labs", "lab_values"),
    "treatments": ("treatments",),
    "ecog": ("ecog", "activity_level"),
    "other_conditions": ("other_conditions",),
    "medicines": ("medicines", "medications"),
    "vitals": ("vitals", "bmi", "blood_pressure", "weight", "height"),
    "notes": ("notes",),  # free text may hold anything, lab values included: only the treating specialist
    "location": ("location", "travel_radius_miles"),
}
CATEGORIES: tuple[str, ...] = ("disease", "treatment", "activity", "biomarker", "lab", "imaging", "heart",
                               "condition", "medicine", "logistics", "reproductive")

PERMISSIONS: dict[Role, frozenset[str]] = {
    "specialist": frozenset({"age_sex", "diagnosis", "stage", "biomarkers", "lab_values", "treatments", "ecog",
                             "notes", "criteria:disease", "criteria:treatment", "criteria:activity"}),
    "radiology": frozenset({"age_sex", "diagnosis", "stage", "criteria:imaging"}),
    "pathology_lab": frozenset({"age_sex", "diagnosis", "biomarkers", "lab_values", "criteria:biomarker",
                                "criteria:lab"}),
    "primary_care": frozenset({"age_sex", "diagnosis", "other_conditions", "treatments", "medicines", "vitals",
                               "criteria:condition", "criteria:heart", "criteria:medicine"}),
    "trial_team": frozenset({"age_sex", "diagnosis", "location", "sites", "criteria:logistics",
                             "criteria:reproductive"}),
}

ROLE_TITLES: dict[Role, str] = {
    "radiology": "Radiology (your scans)",
    "pathology_lab": "Pathology and laboratory (tumour tests, biomarkers, blood tests)",
    "primary_care": "Your family doctor (other health problems and medicines)",
    "trial_team": "The trial team (visits, travel, consent, pregnancy rules)",
}

# Condition area -> the treating specialist's name (first match wins; cancer before organ names, so "lung cancer"
# goes to the oncologist and "lung disease" to the pulmonologist).
_SPECIALISTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("oncologist", re.compile(r"cancer|carcinoma|tumou?r|neoplas|lymphoma|leuka?emia|myeloma|sarcoma|melanoma|"
                              r"glioma|glioblastoma|blastoma|mesothelioma|malignan|metasta|\bNSCLC\b|\bSCLC\b", re.I)),
    ("endocrinologist", re.compile(r"diabet|thyroid|endocrin|obesity|adrenal|pituitar|cushing|insulin", re.I)),
    ("cardiologist", re.compile(r"heart|cardi|coronary|atrial|arrhythm|hypertension|angina|myocard", re.I)),
    ("pulmonologist", re.compile(r"asthma|\bCOPD\b|pulmonary|lung|emphysema|cystic fibrosis|bronch", re.I)),
    ("nephrologist", re.compile(r"kidney|renal|nephr|dialysis", re.I)),
    ("rheumatologist", re.compile(r"arthritis|lupus|rheumat|spondyl|gout|scleroderma", re.I)),
    ("neurologist", re.compile(r"alzheimer|parkinson|epilep|multiple sclerosis|stroke|migraine|dementia|neuro|ALS\b",
                               re.I)),
    ("psychiatrist", re.compile(r"depress|schizo|bipolar|anxiety|psychiat|autism|ADHD", re.I)),
    ("gastroenterologist", re.compile(r"crohn|colitis|hepatitis|liver|cirrhosis|\bIBD\b|gastro|bowel", re.I)),
    ("infectious disease specialist", re.compile(r"\bHIV\b|infection|tubercul|sepsis", re.I)),
)


def specialist_name(diagnosis: str) -> str:
    """The treating specialist for a diagnosis ("oncologist" for a cancer…; "treating specialist" otherwise)."""
    for name, pattern in _SPECIALISTS:
        if pattern.search(diagnosis or ""):
            return name
    return "treating specialist"


def role_title(role: Role, diagnosis: str) -> str:
    """The heading of a role's group in the report."""
    if role == "specialist":
        return f"Your {specialist_name(diagnosis)} (diagnosis, stage, treatments)"
    return ROLE_TITLES[role]


# --- routing a criterion to a category ----------------------------------------------------------------------

_LIFE_EXPECTANCY = re.compile(r"\blife expectancy\b", re.I)
_PROTOCOL_REST = re.compile(r"\bother (?:inclusion|exclusion|eligibility)(?:\s*/\s*(?:inclusion|exclusion))? criteria\b",
                            re.I)
_OTHER_STUDY = re.compile(r"\b(?:another|other|any) (?:\w+ ){0,2}(?:trials?|stud(?:y|ies))\b|"
                          r"\bparticipat\w* in (?:a |an |any )?(?:\w+ ){0,2}(?:trials?|stud(?:y|ies))\b", re.I)
_BIOMARKER = re.compile(r"\b(histolog\w*|cytolog\w*|patholog\w*|biops\w*|mutations?|mutant|mutated|biomarkers?|"
                        r"wild[- ]type|rearrange\w*|fusions?|amplif\w*|overexpress\w*|genotyp\w*|genetic|"
                        r"hormone receptor|PD-?L1|HER-?2|BRCA\d?|EGFR|ALK|ROS-?1|KRAS|NRAS|BRAF|NTRK|RET|MSI-?H|dMMR|"
                        r"TMB|IHC|FISH|NGS|Gleason)\b", re.I)
_LAB = re.compile(r"\b(labs?|laborator\w*|blood tests?|blood counts?|h(?:a)?ematolog\w*|serum|plasma|urine|"
                  r"urinalysis|HbA1c|A1c|glucose|creatinine|bilirubin|ULN|upper limit of normal|e?GFR|INR|"
                  r"platelets?|neutrophils?|h(?:a)?emoglobin|transaminases?|ALT|AST|albumin|potassium|sodium|"
                  r"TSH|PSA|testosterone|lipase|amylase|troponin|cholesterol|triglycerides?)\b", re.I)
_IMAGING = re.compile(r"\b(CT|MRI|PET|scans?|imaging|radiolog\w*|radiograph\w*|x-?rays?|ultrasound|lesions?|"
                      r"(?:brain|CNS|central nervous system|leptomeningeal|spinal) metasta\w*|leptomeningeal|"
                      r"spinal cord compression|mammogra\w*)\b", re.I)
_HEART = re.compile(r"\b(ECG|EKG|electrocardiogra\w*|echocardiogra\w*|LVEF|ejection fraction|QTc?|MUGA|"
                    r"heart failure|NYHA|myocardial|arrhythm\w*|cardiac|cardiovascular)\b", re.I)
_MEDICINE = re.compile(r"\b(anticoagula\w*|warfarin|heparin|steroids?|corticosteroid\w*|prednis\w*|"
                       r"immunosuppress\w*|CYP\w*|inducers?|herbal|supplements?|concomitant|concurrent (?:use|medication)|"
                       r"medications?|live (?:attenuated )?vaccin\w*)\b", re.I)

def category_of(text: str) -> str:
    """The kind of fact a criterion is about (one of CATEGORIES), from its wording."""
    topic = topic_of(text)
    if topic == "Pregnancy and birth control":
        return "reproductive"
    if _LIFE_EXPECTANCY.search(text):
        return "disease"
    if topic == "Taking part" or text.startswith(FULL_CRITERIA) or _PROTOCOL_REST.search(text):
        return "logistics"
    if topic == "Your daily activity":
        return "activity"
    if _MEASURABLE.search(text):  # a RECIST lesion "not previously irradiated" is still about scans
        return "imaging"
    if topic == "Treatments you have had":
        return "medicine" if _MEDICINE.search(text) else "treatment"
    if _OTHER_STUDY.search(text):
        return "logistics"
    if _BIOMARKER.search(text):
        return "biomarker"
    if _HEART.search(text):  # before labs: a QTc limit reads like a lab value but is an ECG
        return "heart"
    if _LAB.search(text) or _LAB_VALUE.search(text) or _ORGAN_FUNCTION.search(text):
        return "lab"
    if _IMAGING.search(text):
        return "imaging"
    if topic == "Your diagnosis and tumour tests":
        return "disease"
    if _MEDICINE.search(text):
        return "medicine"
    return "condition"


# --- a role's input -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CriterionItem:
    """One open criterion of one selected trial, as a role sees it (no judgement reason: it may quote the patient)."""

    id: str
    nct_id: str
    kind: str
    category: str
    criterion: str
    plain: str
    status: str


@dataclass(frozen=True)
class RoleFacts:
    """Everything one role's builder receives: permitted profile facts, its own criteria, sites if permitted."""

    role: Role
    title: str
    trials: tuple[str, ...]
    profile: Mapping[str, Any]
    items: tuple[CriterionItem, ...]
    sites: tuple[Mapping[str, Any], ...] = ()

    def as_json(self) -> str:
        """The facts as the JSON a model call sends."""
        return json.dumps({"role": self.title, "trials": list(self.trials), "patient": dict(self.profile),
                           "criteria": [asdict(i) for i in self.items],
                           **({"sites": [dict(s) for s in self.sites]} if self.sites else {})},
                          ensure_ascii=False)


def _structured(text: str) -> bool:
    """The registry's age and sex limits: the rules judge them; nothing for a doctor to answer."""
    return bool(re.match(r"(Age|Sex)\b|Any age$", text))


def open_items(selected: Sequence[Mapping[str, Any]]) -> list[CriterionItem]:
    """Every open criterion (unknown or to discuss) of the selected trials, numbered, with its category."""
    out: list[CriterionItem] = []
    for match in selected:
        for c in match.get("criteria") or []:
            text = str(c.get("criterion") or "")
            if c.get("status") not in OPEN_CRITERION_STATUSES or not text.strip() or _structured(text):
                continue
            out.append(CriterionItem(f"c{len(out) + 1}", str(match.get("nct_id") or ""), str(c.get("type") or ""),
                                     category_of(text), one_line(text, 300), one_line(c.get("plain") or text, 300),
                                     str(c["status"])))
    return out


def facts_for(role: Role, profile: Mapping[str, Any], selected: Sequence[Mapping[str, Any]],
              items: Sequence[CriterionItem] | None = None) -> RoleFacts:
    """The only input a role's builder gets: the profile and criteria its PERMISSIONS row allows, nothing else."""
    allowed = PERMISSIONS[role]
    facts = {key: profile[key] for kind, keys in PROFILE_FACTS.items() if kind in allowed
             for key in keys if profile.get(key) not in (None, "", [], {})}
    chosen = [i for i in (items if items is not None else open_items(selected))
              if f"criteria:{i.category}" in allowed]
    sites: tuple[Mapping[str, Any], ...] = ()
    if "sites" in allowed:
        sites = tuple({"nct_id": m.get("nct_id"), "nearest_site": m.get("nearest_site") or None,
                       "distance_miles": m.get("distance_miles")} for m in selected)
    return RoleFacts(role, role_title(role, str(profile.get("diagnosis") or "")),
                     tuple(str(m.get("nct_id") or "") for m in selected), facts,
                     tuple(_fair_share(chosen, MAX_ITEMS_PER_ROLE, lambda i: i.nct_id)), sites)


def _fair_share(items: Sequence[T], limit: int, trial: Callable[[T], str]) -> list[T]:
    """At most limit items, taken trial by trial in turn (so the first trial cannot crowd out the others), kept in
    their original order."""
    by_trial: dict[str, list[int]] = {}
    for n, item in enumerate(items):
        by_trial.setdefault(trial(item), []).append(n)
    kept: list[int] = []
    depth = 0
    while len(kept) < limit and any(depth < len(v) for v in by_trial.values()):
        kept += [v[depth] for v in by_trial.values() if depth < len(v)][: limit - len(kept)]
        depth += 1
    return [items[n] for n in sorted(kept)]


# --- the output ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """A question for one role, naming the trial and the criteria (short quotes) it comes from; ``about`` stands
    in for a criterion when the question is about the trial as a whole or its site."""

    nct_id: str
    criteria: tuple[str, ...]
    text: str
    about: str = ""

    def line(self) -> str:
        """The question as the report prints it: NCT id — “criterion”: question."""
        named = "; ".join(f"“{one_line(c, 130 if len(self.criteria) == 1 else 70)}”" for c in self.criteria[:2])
        if len(self.criteria) > 2:
            named += f" and {len(self.criteria) - 2} more"
        return one_line(f"{self.nct_id} — {named or self.about}: {self.text}", 2 * MAX_QUESTION_CHARS)


@dataclass(frozen=True)
class Group:
    """One role's questions, where they came from (rules or model) and a note when the model's were not used."""

    role: Role
    title: str
    questions: tuple[Question, ...]
    source: Literal["rules", "model"] = "rules"
    note: str = ""


@dataclass(frozen=True)
class Flag:
    """A reviewer's point about one selected trial."""

    nct_id: str
    kind: Literal["conflict", "safety", "missing", "new"]
    text: str


FLAG_LABELS = {"conflict": "Conflict", "safety": "Safety point", "missing": "Still unknown, and it decides",
               "new": "Not covered by the criteria"}


@dataclass(frozen=True)
class CareTeam:
    """The specialist-grouped questions and the reviewer's flags for one report."""

    groups: tuple[Group, ...]
    flags: tuple[Flag, ...] = field(default_factory=tuple)

    def as_report(self) -> dict[str, Any]:
        """The plain dict the report request carries (groups in order; flags by trial)."""
        by_trial: dict[str, list[dict[str, str]]] = {}
        for f in self.flags:
            by_trial.setdefault(f.nct_id, []).append({"kind": f.kind, "label": FLAG_LABELS[f.kind], "text": f.text})
        return {"groups": [{"role": g.role, "title": g.title, "source": g.source, "note": g.note,
                            "questions": [q.line() for q in g.questions]} for g in self.groups if g.questions],
                "review": by_trial}


# --- rule builders, one per role ----------------------------------------------------------------------------

Builder = Callable[[RoleFacts], list[Question]]


def _question_for(item: CriterionItem, profile: Mapping[str, Any]) -> Question | None:
    """The line's question worded from data (services.assistant.asking), for the facts this role may see; a
    line the shared patient question sets aside (consent, age or sex limits) gets none."""
    if patient_question(item.criterion, "exclusion" if item.kind == "exclusion" else "inclusion") is None:
        return None
    asked = asking.question(item.category, item.kind, item.criterion, profile)
    return Question(item.nct_id, (item.plain,), asked) if asked else None




def _from_items(facts: RoleFacts, first: Callable[[CriterionItem], str | None] | None = None,
                fallback: Callable[[CriterionItem], str | None] | None = None) -> list[Question]:
    """The rules' question for each of the role's criteria: the role's own wording (``first``) where it has one,
    else the shared patient question, else the role's ``fallback`` wording."""
    out: list[Question] = []
    for item in facts.items:
        own = first(item) if first is not None else None
        question = Question(item.nct_id, (item.plain,), own) if own else _question_for(item, facts.profile)
        if question is None and fallback is not None and (text := fallback(item)):
            question = Question(item.nct_id, (item.plain,), text)
        if question is not None:
            out.append(question)
    return _dedupe(out)


def _dedupe(questions: Sequence[Question]) -> list[Question]:
    """One question per trial and wording, naming every criterion it covers; at most MAX_PER_ROLE, trials in turn."""
    seen: dict[tuple[str, str], list[Question]] = {}
    for q in questions:
        seen.setdefault((q.nct_id, q.text), []).append(q)
    merged = [Question(qs[0].nct_id, tuple(dict.fromkeys(c for q in qs for c in q.criteria)), qs[0].text)
              for qs in seen.values()]
    return _fair_share(merged, MAX_PER_ROLE, lambda q: q.nct_id)


def rules_specialist(facts: RoleFacts) -> list[Question]:
    """Disease, stage, treatment and activity questions; last, whether each trial is a reasonable option at all."""
    had = asking.slots("", facts.profile)["my_treatments"]
    so_far = f"what I have had so far ({had})" if had else "my treatment so far"
    return _from_items(facts)[: MAX_PER_ROLE - 1] + [
        Question(t, (), f"Given {so_far}, would joining {t} be a reasonable option for me?",
                 "the trial as a whole") for t in facts.trials]


def rules_pathology_lab(facts: RoleFacts) -> list[Question]:
    """Questions about tumour tests, biomarkers and blood-test limits."""
    return _from_items(facts)


def _whole_list(item: CriterionItem) -> str | None:
    if item.criterion.startswith(FULL_CRITERIA) or _PROTOCOL_REST.search(item.criterion):
        return "What are this trial's full eligibility criteria, and could you go through them with me?"
    return None


def _team_question(item: CriterionItem) -> str:
    if item.category == "logistics":
        return "What does this ask of me in practice: visits, tests, time and travel?"
    return "What do the trial's pregnancy and birth-control rules mean for me?"


def rules_trial_team(facts: RoleFacts) -> list[Question]:
    """Questions about consent, visits, pregnancy rules, and for each trial its nearest site and costs."""
    out = _from_items(facts, _whole_list, _team_question)[: MAX_PER_ROLE - 1]
    for site in facts.sites:
        where = one_line(site.get("nearest_site") or "", 160)
        asked = (f"How often would I need to come to {where}, and is help with travel or costs available?" if where
                 else "Which site would I go to, how often, and is help with travel or costs available?")
        out.append(Question(str(site.get("nct_id")), (), asked, "nearest site"))
    return out


# Radiology (scans, measurable disease, brain or spinal spread) and primary care (other health problems, heart
# tests, medicines) have no wording of their own: each of their criteria gets the shared patient question.
RULE_BUILDERS: dict[Role, Builder] = {
    "specialist": rules_specialist, "radiology": _from_items, "pathology_lab": rules_pathology_lab,
    "primary_care": _from_items, "trial_team": rules_trial_team,
}


# --- model builders: one short call per role, with only that role's facts ------------------------------------


class UnusableAnswer(ValueError):
    """The model's reply is not the JSON the role prompt asks for."""


def load_role_prompt(role: Role) -> str:
    """A role's system prompt: its own short brief, then the shared answer format."""
    return "\n\n".join((PROMPT_DIR / f"{name}.md").read_text(encoding="utf-8").strip() for name in (role, "format"))


_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.S | re.I)


def parse_questions(text: str, facts: RoleFacts) -> tuple[list[Question], int]:
    """Valid questions from a model reply, and how many entries were dropped: each must name a criterion id that
    was in this role's input (the trial comes from it), be one plain question of at most 300 characters."""
    body = text.strip()
    fenced = _FENCE.fullmatch(body)
    body = fenced.group(1) if fenced else body
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise UnusableAnswer(f"not JSON ({exc.msg})") from None
    entries = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise UnusableAnswer("no list under \"questions\"")
    by_id = {i.id: i for i in facts.items}
    out: list[Question] = []
    dropped = 0
    for entry in entries[:50]:
        if not isinstance(entry, dict) or set(entry) != {"criterion_id", "question"}:
            dropped += 1
            continue
        item = by_id.get(str(entry["criterion_id"]))
        asked = " ".join(str(entry["question"] or "").split())
        if item is None or not 8 <= len(asked) <= MAX_QUESTION_CHARS or not asked.endswith("?"):
            dropped += 1
            continue
        out.append(Question(item.nct_id, (item.plain,), asked))
    kept = _dedupe(out)
    return kept, dropped + len(out) - len(kept)


def model_questions(client: ModelClient, facts: RoleFacts, *, model: str = DEFAULT_MODEL,
                    on_reply: Callable[[Message], None] | None = None) -> tuple[list[Question], int]:
    """One call with the role's own prompt and only its facts; the validated questions and the dropped count."""
    reply = client.create(model=model, max_tokens=MODEL_MAX_TOKENS, system=load_role_prompt(facts.role),
                          messages=[{"role": "user", "content": f"<facts>\n{facts.as_json()}\n</facts>\n\n"
                                                                 "Answer with the JSON object only."}])
    if on_reply is not None:
        on_reply(reply)
    return parse_questions(reply_text(reply), facts)


# --- the reviewer ------------------------------------------------------------------------------------------

_STOP = frozenset({"disease", "diseases", "disorder", "history", "chronic", "acute", "type", "with", "from", "other",
                   "severe", "mild", "controlled", "uncontrolled", "condition", "conditions", "stage", "cancer",
                   "positive", "negative", "mutation", "therapy", "treatment", "level", "high", "blood", "syndrome"})


# Conditions that commonly decide whether a treatment is safe: a patient's fact of this kind that a trial's criteria
# never mention is worth a question. Other facts stay silent (the reviewer is conservative).
_SERIOUS = re.compile(r"hepatitis|\bHIV\b|heart failure|cardiomyopath|heart attack|myocardial|stroke|kidney|renal|"
                      r"dialysis|liver|cirrhosis|autoimmun|lupus|crohn|colitis|rheumatoid|interstitial lung|"
                      r"pneumonitis|pulmonary fibrosis|transplant|epilep|seizure|tubercul|pregnan|immunodeficien|"
                      r"cancer|carcinoma|lymphoma|leuka?emia|melanoma", re.I)
_GENE = re.compile(r"\b(EGFR|ALK|ROS-?1|KRAS|NRAS|BRAF|MET|RET|NTRK\d?|HER-?2|ERBB2|BRCA\d?|PIK3CA|IDH\d|FGFR\d?|"
                   r"PD-?L1|MSI-?H|dMMR|ESR1|AR-V7)\b", re.I)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9-]{2,}", text.lower()) if w not in _STOP and not w.isdigit()}


def _mentions(criterion: str, fact: str) -> str | None:
    """A distinctive word of a patient fact that a criterion also uses (None when none)."""
    shared = sorted(_words(fact) & _words(criterion), key=len, reverse=True)
    return shared[0] if shared else None


def _listed(profile: Mapping[str, Any], *keys: str) -> list[str]:
    out: list[str] = []
    for key in keys:
        value = profile.get(key)
        out += [str(v) for v in value] if isinstance(value, list | tuple) else ([str(value)] if value else [])
    return [v for v in out if v.strip()]


def _can_be_pregnant(profile: Mapping[str, Any]) -> bool:
    age = profile.get("age")
    return profile.get("sex") == "female" and (not isinstance(age, int | float) or 12 <= age <= 55)


def review(profile: Mapping[str, Any], selected: Sequence[Mapping[str, Any]]) -> list[Flag]:
    """Per selected trial: conflicts, safety points, missing-critical and new-critical facts; nothing when none apply."""
    flags: list[Flag] = []
    conditions = _listed(profile, "other_conditions")
    taken = _listed(profile, "treatments", "medicines", "medications")
    markers = _listed(profile, "biomarkers")
    for match in selected:
        nct = str(match.get("nct_id") or "")
        criteria = [c for c in match.get("criteria") or [] if str(c.get("criterion") or "").strip()]
        mine: list[Flag] = []
        if match.get("verdict") == "not_relevant":
            mine.append(Flag(nct, "conflict", "This trial seems to be about another condition than yours."))
        for c in criteria:
            text, status = str(c["criterion"]), c.get("status")
            quote = f"“{one_line(c.get('plain') or text, 110)}”"
            category = category_of(text)
            if status == "not_met":
                why = one_line(c.get("reason") or "", 200)
                mine.append(Flag(nct, "conflict", f"{quote}: your answers suggest you do not pass this line."
                                                  f"{' ' + why if why else ''}"))
                continue
            if status not in OPEN_CRITERION_STATUSES:
                continue
            if text.startswith(FULL_CRITERIA):
                mine.append(Flag(nct, "missing", "Our copy has none of this trial's criteria text; read them on "
                                                 "ClinicalTrials.gov before going further."))
                continue
            if c.get("type") == "exclusion":
                hit = next(((f, w) for f in conditions + taken if (w := _mentions(text, f))), None)
                if hit:
                    mine.append(Flag(nct, "safety", f"{quote}: it names “{hit[1]}”, and you told us about "
                                                    f"“{one_line(hit[0], 60)}”. Ask whether it rules you out or needs care."))
                    continue
            if category == "reproductive" and (_can_be_pregnant(profile) or (
                    profile.get("sex") == "male" and re.search(r"\b(men|male|partners?|sperm)\b", text, re.I))):
                mine.append(Flag(nct, "safety", f"{quote}: the pregnancy and birth-control rules apply to you; ask "
                                                "the trial team what they require."))
                continue
            if status == "not_enough_information" and c.get("type") == "inclusion" and (category == "biomarker" or (
                    category == "disease" and re.search(r"\bstag(e|ing)\b", text, re.I) and not profile.get("stage"))):
                mine.append(Flag(nct, "missing", f"{quote}: this decides whether you can join, and we do not know it "
                                                 "yet. Ask for the report that shows it."))
        if criteria and not any(c.get("criterion") == FULL_CRITERIA for c in criteria):
            every = " ".join(str(c["criterion"]) for c in criteria)
            names_markers = any(category_of(str(c["criterion"])) == "biomarker" and _GENE.search(str(c["criterion"]))
                                for c in criteria)
            new = [f for f in conditions if _SERIOUS.search(f)] + (
                [m for m in markers if _GENE.search(m)] if names_markers else [])
            mine += [Flag(nct, "new", f"You told us about “{one_line(fact, 60)}”; none of this trial's criteria we "
                                      "checked mention it. Ask whether it matters for this trial.")
                     for fact in new if not _mentions(every, fact)]
        kinds = {"conflict": 0, "safety": 1, "missing": 2, "new": 3}
        mine.sort(key=lambda f: kinds[f.kind])
        flags += list(dict.fromkeys(mine))[:MAX_FLAGS_PER_TRIAL]
    return flags


# --- the whole care team --------------------------------------------------------------------------------------


def build(profile: Mapping[str, Any], selected: Sequence[Mapping[str, Any]], *, client: ModelClient | None = None,
          model: str = DEFAULT_MODEL, on_reply: Callable[[Message], None] | None = None) -> CareTeam:
    """Questions grouped by role (rules, or one model call per role when a client is given) and the reviewer's
    flags. A role whose model answer fails, is late or has no usable question gets the rules' questions, and says so."""
    items = open_items(selected)
    inputs = {role: facts_for(role, profile, selected, items) for role in ROLES}
    answers: dict[Role, tuple[list[Question], int] | str] = {}
    asked = [r for r in ROLES if inputs[r].items] if client is not None else []
    if asked and client is not None:
        pool = ThreadPoolExecutor(max_workers=len(asked), thread_name_prefix="careteam")
        futures = {pool.submit(model_questions, client, inputs[r], model=model, on_reply=on_reply): r for r in asked}
        done, _ = wait(futures, timeout=MODEL_DEADLINE_SECONDS)
        pool.shutdown(wait=False, cancel_futures=True)
        for future, role in futures.items():
            if future not in done:
                answers[role] = "the model did not answer in time"
                continue
            try:
                answers[role] = future.result()
            except (AssistantUnavailable, UnusableAnswer) as exc:
                log.warning("care-team model answer for %s not used: %s", role, exc)
                answers[role] = ("the model could not be reached" if isinstance(exc, AssistantUnavailable)
                                 else "the model's answer could not be read")
    groups: list[Group] = []
    for role in ROLES:
        facts = inputs[role]
        rules = RULE_BUILDERS[role](facts)
        answer = answers.get(role)
        if isinstance(answer, tuple) and answer[0]:
            kept, dropped = answer
            extra = [q for q in rules if q.about]
            note = f"{dropped} of the model's questions could not be used and were left out." if dropped else ""
            groups.append(Group(role, facts.title, tuple(kept + extra), "model", note))
        elif answer is not None:
            why = answer if isinstance(answer, str) else "none of the model's questions could be used"
            groups.append(Group(role, facts.title, tuple(rules), "rules", f"Written by fixed rules: {why}."))
        else:
            groups.append(Group(role, facts.title, tuple(rules)))
    return CareTeam(tuple(g for g in groups if g.questions), tuple(review(profile, selected)))
