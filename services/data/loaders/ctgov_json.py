"""ClinicalTrials.gov API v2 study JSON → AACT ctgov rows, mapped the way AACT maps them."""

from __future__ import annotations

import gzip
import json
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

from services.data.loaders import guard, jsonstream
from services.data.loaders.common import COLUMNS, NCT_RE, Batch, calculated_values, downcase, parse_api_date
from services.errors import BadInput


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) of a plain or gzipped text file, decoding each line on its own.

    Raises BadInput naming the line for bytes that are not UTF-8 or a truncated/corrupt gzip stream.
    """
    line_no = 0
    try:
        with guard.open_file(path) as fh:  # regular files only; size and line limits (guard.py)
            for line_no, raw in enumerate(fh, start=1):
                try:  # a byte order mark (Excel's "CSV UTF-8") before the first line is not part of it
                    yield line_no, raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
                except UnicodeDecodeError as err:
                    raise BadInput(f"{path}: line {line_no}: bytes that are not UTF-8 ({err.reason} at column "
                                   f"{err.start + 1}); save the file as UTF-8 and import again.") from err
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise BadInput(f"{path}: line {line_no + 1}: the gzip stream is truncated or corrupt ({err}); "
                       f"download the file again.") from err


def _json_at(path: Path, line_no: int, text: str) -> Any:
    """The JSON value of `text`, line `line_no` of `path`; BadInput naming the line otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise BadInput(f"{path}: line {line_no}: not valid JSON ({err.msg}).") from err
    except RecursionError:  # Python's parser recurses per level; a hostile file nests 100,000 deep
        raise BadInput(f"{path}: line {line_no}: JSON nested too deeply to read.") from None


def json_objects(path: Path, lines: Iterable[tuple[int, str]], expected: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank JSON line; BadInput names the line and what was `expected`."""
    for line_no, line in lines:
        if not line.strip():
            continue
        row = _json_at(path, line_no, line)
        if not isinstance(row, dict):
            raise BadInput(f"{path}: line {line_no}: expected {expected}.")
        yield line_no, row


def read_studies(path: Path) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Yield (source name, line/position, study) from .jsonl(.gz), a .json array or a .zip of JSON files.

    Raises BadInput naming the file and line for anything unreadable.
    """
    if path.suffix == ".zip":
        budget = guard.Budget()
        try:
            with guard.open_zip(path) as zf:
                for name in sorted(n for n in zf.namelist() if n.endswith(".json")):
                    try:
                        doc = json.loads(guard.read_member(zf, name, f"{path}:{name}", budget).decode("utf-8"))
                    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
                        raise BadInput(f"{path}:{name}: not valid UTF-8 JSON ({err}).") from err
                    for i, study in enumerate(doc if isinstance(doc, list) else [doc], start=1):
                        yield f"{path.name}:{name}", i, study
        except zipfile.BadZipFile as err:
            raise BadInput(f"{path}: not a readable zip file ({err}).") from err
        return
    lines = iter_lines(path)
    for line_no, line in lines:
        if not line.strip():
            continue
        if line.lstrip().startswith("["):  # one JSON array (the site's "Download → JSON"), read item by item
            for i, study in enumerate(jsonstream.array_items(path, lines, line, line_no), start=1):
                yield path.name, i, study
            return
        yield path.name, line_no, _json_at(path, line_no, line)


def _list(value: Any) -> list[Any]:
    """A JSON array as a list ([] for absent); a single object counts as a one-element list, as in AACT."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in _list(value) if isinstance(v, dict)]


def _float(value: Any) -> float | None:
    """AACT's `float` converter: Float(str) or nil."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _date_first_of_month(value: Any) -> date | None:
    """AACT's date_first_of_month: YYYY-MM → the 1st (YYYY → Dec 31, full dates as they are)."""
    if not isinstance(value, str):
        return None
    parts = value.strip().split("-")
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        try:
            return date(int(parts[0]), int(parts[1]), 1)
        except ValueError:
            return None
    return parse_api_date(value)


def _yes_no(value: Any) -> bool | None:
    """AACT's Eligibility.get_boolean: y/yes/true/t → true, n/no/false/f → false, booleans as they are."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return {"y": True, "yes": True, "true": True, "t": True,
                "n": False, "no": False, "false": False, "f": False}.get(value.lower())
    return None


def _includes(values: Any, item: str) -> bool | None:
    """Ruby's `val&.include?(item)`: NULL when the list is absent."""
    return None if values is None else item in _list(values)


def _flatten(items: list[dict[str, Any]], path: list[str]) -> list[tuple[dict[str, Any], ...]]:
    """AACT's Worker#flatten: walk nested arrays, yielding (leaf, parent, grandparent, …) for each leaf.

    Items without the child array (or with an empty one) yield nothing. When the first class of a measure has no
    `categories`, AACT adds one empty category holding one empty measurement to every class lacking them.
    """
    out: list[tuple[dict[str, Any], ...]] = []

    def walk(nodes: list[dict[str, Any]], rest: list[str], parents: tuple[dict[str, Any], ...]) -> None:
        if not rest:
            out.extend((node, *parents) for node in nodes)
            return
        key = rest[0]
        if rest == ["categories", "measurements"] and nodes and "categories" not in nodes[0]:
            nodes = [n if "categories" in n else {**n, "categories": [{"measurements": [{}]}]} for n in nodes]
        for node in nodes:
            children = _dicts(node.get(key))
            if children:
                walk(children, rest[1:], (node, *parents))

    walk(items, path, ())
    return out


def study_to_rows(study: dict[str, Any], batch: Batch, ids: dict[str, Iterator[int]]) -> str:
    """Append one v2 study's rows to the batch the way AACT's mapping (app/models/*.rb) does; return its NCT id.

    `ids` supplies local row ids for the tables other rows reference (common.ID_TABLES); the importer swaps
    them for sequence ids. Raises ValueError for a study that is not a v2 study object and coerce.FieldError for
    a value that does not fit its column.
    """
    ps = study.get("protocolSection")
    if not isinstance(ps, dict):
        raise ValueError("no protocolSection (is this an API v2 study object?)")
    nct = _get(ps, "identificationModule", "nctId")
    if not isinstance(nct, str) or not NCT_RE.match(nct):
        raise ValueError(f"missing or malformed nctId ({nct!r})")
    _map_study(study, nct, batch, ids)
    batch.nct_ids.append(nct)
    return nct


def _map_study(study: dict[str, Any], nct: str, batch: Batch, ids: dict[str, Iterator[int]]) -> None:
    ps: dict[str, Any] = study["protocolSection"]
    ident = ps.get("identificationModule") or {}
    status = ps.get("statusModule") or {}
    design = ps.get("designModule") or {}
    results = study.get("resultsSection") or {}
    derived = study.get("derivedSection") or {}
    ipd = ps.get("ipdSharingStatementModule") or {}
    oversight = ps.get("oversightModule") or {}
    arms = ps.get("armsInterventionsModule") or {}
    contacts = ps.get("contactsLocationsModule") or {}
    refs = ps.get("referencesModule") or {}

    def dstruct(name: str) -> tuple[Any, Any]:
        s = status.get(name) or {}
        return s.get("date"), s.get("type")

    start_s, start_t = dstruct("startDateStruct")
    pc_s, pc_t = dstruct("primaryCompletionDateStruct")
    comp_s, comp_t = dstruct("completionDateStruct")
    first_post_s, first_post_t = dstruct("studyFirstPostDateStruct")
    res_post_s, res_post_t = dstruct("resultsFirstPostDateStruct")
    disp_post_s, disp_post_t = dstruct("dispFirstPostDateStruct")
    last_post_s, last_post_t = dstruct("lastUpdatePostDateStruct")
    phases = design.get("phases")
    study_type = design.get("studyType")
    arm_groups = arms.get("armGroups")
    interventional = isinstance(study_type, str) and "interventional" in study_type.lower()
    n_arms = len(arm_groups) if isinstance(arm_groups, list) else None
    exp_info = status.get("expandedAccessInfo") or {}
    exp_types = design.get("expandedAccessTypes") or {}
    bio = design.get("bioSpec") or {}
    baseline = results.get("baselineCharacteristicsModule") or {}

    batch.add("studies", {
        "nct_id": nct,
        "study_first_submitted_date": parse_api_date(status.get("studyFirstSubmitDate")),
        "study_first_submitted_qc_date": parse_api_date(status.get("studyFirstSubmitQcDate")),
        "study_first_posted_date": parse_api_date(first_post_s), "study_first_posted_date_type": first_post_t,
        "results_first_submitted_date": parse_api_date(status.get("resultsFirstSubmitDate")),
        "results_first_submitted_qc_date": parse_api_date(status.get("resultsFirstSubmitQcDate")),
        "results_first_posted_date": parse_api_date(res_post_s), "results_first_posted_date_type": res_post_t,
        "disposition_first_submitted_date": parse_api_date(status.get("dispFirstSubmitDate")),
        "disposition_first_submitted_qc_date": parse_api_date(status.get("dispFirstSubmitQcDate")),
        "disposition_first_posted_date": parse_api_date(disp_post_s),
        "disposition_first_posted_date_type": disp_post_t,
        "last_update_submitted_date": parse_api_date(status.get("lastUpdateSubmitDate")),
        # AACT fills the QC date from lastUpdateSubmitDate too (study.rb).
        "last_update_submitted_qc_date": parse_api_date(status.get("lastUpdateSubmitDate")),
        "last_update_posted_date": parse_api_date(last_post_s), "last_update_posted_date_type": last_post_t,
        "start_month_year": start_s, "start_date_type": start_t, "start_date": parse_api_date(start_s),
        "verification_month_year": status.get("statusVerifiedDate"),
        "verification_date": parse_api_date(status.get("statusVerifiedDate")),
        "completion_month_year": comp_s, "completion_date_type": comp_t, "completion_date": parse_api_date(comp_s),
        "primary_completion_month_year": pc_s, "primary_completion_date_type": pc_t,
        "primary_completion_date": parse_api_date(pc_s),
        "baseline_population": baseline.get("populationDescription"),
        "brief_title": ident.get("briefTitle"),
        "official_title": ident.get("officialTitle"),
        "acronym": ident.get("acronym"),
        "overall_status": status.get("overallStatus"),
        "last_known_status": status.get("lastKnownStatus"),
        "why_stopped": status.get("whyStopped"),
        "delayed_posting": status.get("delayedPosting"),
        "phase": "/".join(str(p) for p in _list(phases)) if phases is not None else None,
        "enrollment": _get(design, "enrollmentInfo", "count"),
        "enrollment_type": _get(design, "enrollmentInfo", "type"),
        "source": _get(ident, "organization", "fullName"),
        "source_class": _get(ident, "organization", "class"),
        "limitations_and_caveats": _get(results, "moreInfoModule", "limitationsAndCaveats", "description"),
        "number_of_arms": n_arms if interventional else None,
        "number_of_groups": None if interventional else n_arms,
        "target_duration": design.get("targetDuration"),
        "study_type": study_type,
        "patient_registry": design.get("patientRegistry"),
        "has_expanded_access": exp_info.get("hasExpandedAccess"),
        "expanded_access_nctid": exp_info.get("nctId"),
        "expanded_access_status_for_nctid": exp_info.get("statusForNctId"),
        "expanded_access_type_individual": exp_types.get("individual"),
        "expanded_access_type_intermediate": exp_types.get("intermediate"),
        "expanded_access_type_treatment": exp_types.get("treatment"),
        "has_dmc": oversight.get("oversightHasDmc"),
        "is_fda_regulated_drug": oversight.get("isFdaRegulatedDrug"),
        "is_fda_regulated_device": oversight.get("isFdaRegulatedDevice"),
        "is_unapproved_device": oversight.get("isUnapprovedDevice"),
        "is_ppsd": oversight.get("isPpsd"),
        "is_us_export": oversight.get("isUsExport"),
        "fdaaa801_violation": oversight.get("fdaaa801Violation"),
        "biospec_retention": bio.get("retention"),
        "biospec_description": bio.get("description"),
        "plan_to_share_ipd": ipd.get("ipdSharing"),
        "plan_to_share_ipd_description": ipd.get("description"),
        "ipd_time_frame": ipd.get("timeFrame"),
        "ipd_access_criteria": ipd.get("accessCriteria"),
        "ipd_url": ipd.get("url"),
        "baseline_type_units_analyzed": baseline.get("typeUnitsAnalyzed"),
    })

    cond_mod = ps.get("conditionsModule") or {}
    for table in ("conditions", "keywords"):  # the module's lists are named like the tables
        for name in _list(cond_mod.get(table)):
            batch.add(table, {"nct_id": nct, "name": name, "downcase_name": downcase(name)})
    for table, module in (("browse_conditions", "conditionBrowseModule"),
                          ("browse_interventions", "interventionBrowseModule")):
        mod = derived.get(module) or {}
        for key, mesh_type in (("meshes", "mesh-list"), ("ancestors", "mesh-ancestor")):
            for mesh in _dicts(mod.get(key)):
                term = mesh.get("term")
                batch.add(table, {"nct_id": nct, "mesh_term": term, "downcase_mesh_term": downcase(term),
                                  "mesh_type": mesh_type})

    _map_arms(nct, arms, batch, ids)
    _map_design_and_eligibility(nct, ps, batch)
    countries = _map_locations(nct, contacts, derived, batch, ids)

    spons = ps.get("sponsorCollaboratorsModule") or {}
    lead = spons.get("leadSponsor")
    leads = [("lead", lead)] if isinstance(lead, dict) else []
    for role, sponsor in leads + [("collaborator", c) for c in _dicts(spons.get("collaborators"))]:
        batch.add("sponsors", {"nct_id": nct, "agency_class": sponsor.get("class"),
                               "lead_or_collaborator": role, "name": sponsor.get("name")})
    party = spons.get("responsibleParty")
    if isinstance(party, dict):
        batch.add("responsible_parties", {
            "nct_id": nct, "responsible_party_type": party.get("type"), "name": party.get("investigatorFullName"),
            "title": party.get("investigatorTitle"), "affiliation": party.get("investigatorAffiliation"),
            "old_name_title": party.get("oldNameTitle"), "organization": party.get("oldOrganization")})

    desc = ps.get("descriptionModule")
    if isinstance(desc, dict):  # AACT writes both rows whenever the module is there, text or not
        batch.add("brief_summaries", {"nct_id": nct, "description": desc.get("briefSummary")})
        batch.add("detailed_descriptions", {"nct_id": nct, "description": desc.get("detailedDescription")})

    outcomes_mod = ps.get("outcomesModule") or {}
    counts = []
    for key, otype in (("primaryOutcomes", "primary"), ("secondaryOutcomes", "secondary"),
                       ("otherOutcomes", "other")):
        items = _dicts(outcomes_mod.get(key))
        counts.append(len(items))
        for o in items:
            batch.add("design_outcomes", {"nct_id": nct, "outcome_type": otype, "measure": o.get("measure"),
                                          "time_frame": o.get("timeFrame"), "description": o.get("description")})

    for alias in _list(ident.get("nctIdAliases")):
        batch.add("id_information", {"nct_id": nct, "id_source": "nct_alias", "id_value": alias})
    org = ident.get("orgStudyIdInfo")
    org_ids = [("org_study_id", org)] if isinstance(org, dict) else []
    for id_source, info in org_ids + [("secondary_id", sec) for sec in _dicts(ident.get("secondaryIdInfos"))]:
        batch.add("id_information", {"nct_id": nct, "id_source": id_source, "id_value": info.get("id"),
                                     "id_type": info.get("type"), "id_type_description": info.get("domain"),
                                     "id_link": info.get("link")})

    for name in _list(ipd.get("infoTypes")):
        batch.add("ipd_information_types", {"nct_id": nct, "name": name})
    for doc in _dicts(refs.get("availIpds")):
        batch.add("documents", {"nct_id": nct, "document_id": doc.get("id"), "document_type": doc.get("type"),
                                "url": doc.get("url"), "comment": doc.get("comment")})
    for link in _dicts(refs.get("seeAlsoLinks")):
        batch.add("links", {"nct_id": nct, "url": link.get("url"), "description": link.get("label")})
    for ref in _dicts(refs.get("references")):
        rid = next(ids["study_references"])
        batch.add("study_references", {"id": rid, "nct_id": nct, "pmid": ref.get("pmid"),
                                       "reference_type": ref.get("type"), "citation": ref.get("citation")})
        for retraction in _dicts(ref.get("retractions")):
            batch.add("retractions", {"nct_id": nct, "reference_id": rid, "pmid": retraction.get("pmid"),
                                      "source": retraction.get("source")})
    for event in _dicts(_get(study, "annotationSection", "annotationModule", "unpostedAnnotation",
                             "unpostedEvents")):
        batch.add("pending_results", {"nct_id": nct, "event": event.get("type"),
                                      "event_date_description": event.get("date"),
                                      "event_date": parse_api_date(event.get("date"))})
    for doc in _dicts(_get(study, "documentSection", "largeDocumentModule", "largeDocs")):
        filename = doc.get("filename")
        batch.add("provided_documents", {
            "nct_id": nct, "document_type": doc.get("label"), "has_protocol": doc.get("hasProtocol"),
            "has_icf": doc.get("hasIcf"), "has_sap": doc.get("hasSap"), "document_date": parse_api_date(doc.get("date")),
            "url": f"https://ClinicalTrials.gov/ProvidedDocs/{nct[-2:]}/{nct}/{filename}"})

    outcome_rows, sae, nsae = _map_results(nct, results, batch, ids)

    elig = ps.get("eligibilityModule")
    elig = elig if isinstance(elig, dict) else {}
    batch.add("calculated_values", calculated_values(
        nct, facilities_countries=countries, sae_subjects=sae, nsae_subjects=nsae,
        first_submitted=parse_api_date(status.get("studyFirstSubmitDate")), start=parse_api_date(start_s),
        start_type=start_t, primary_completion=parse_api_date(pc_s), primary_completion_type=pc_t,
        results_submitted=parse_api_date(status.get("resultsFirstSubmitDate")),
        were_results_reported=outcome_rows > 0,
        minimum_age=elig.get("minimumAge"),
        maximum_age=elig.get("maximumAge"),
        outcome_counts=(counts[0], counts[1], counts[2]),
    ))


def _map_arms(nct: str, arms: dict[str, Any], batch: Batch, ids: dict[str, Iterator[int]]) -> None:
    """design_groups, interventions, their other names and links (AACT links by intervention.armGroupLabels)."""
    group_ids: dict[Any, int] = {}
    for arm in _dicts(arms.get("armGroups")):
        gid = next(ids["design_groups"])
        group_ids.setdefault(arm.get("label"), gid)
        batch.add("design_groups", {"id": gid, "nct_id": nct, "group_type": arm.get("type"),
                                    "title": arm.get("label"), "description": arm.get("description")})
    for iv in _dicts(arms.get("interventions")):
        iid = next(ids["interventions"])
        batch.add("interventions", {"id": iid, "nct_id": nct, "intervention_type": iv.get("type"),
                                    "name": iv.get("name"), "description": iv.get("description")})
        for other in _list(iv.get("otherNames")):
            batch.add("intervention_other_names", {"nct_id": nct, "intervention_id": iid, "name": other})
        # A label without a matching arm still gets its row (design_group_id NULL), as in AACT.
        for label in _list(iv.get("armGroupLabels")):
            batch.add("design_group_interventions", {"nct_id": nct, "design_group_id": group_ids.get(label),
                                                     "intervention_id": iid})


def _map_design_and_eligibility(nct: str, ps: dict[str, Any], batch: Batch) -> None:
    info = _get(ps, "designModule", "designInfo")
    if isinstance(info, dict):
        masking: dict[str, Any] = info["maskingInfo"] if isinstance(info.get("maskingInfo"), dict) else {}
        who = masking.get("whoMasked")
        batch.add("designs", {
            "nct_id": nct, "allocation": info.get("allocation"), "observational_model": info.get("observationalModel"),
            "intervention_model": info.get("interventionModel"),
            "intervention_model_description": info.get("interventionModelDescription"),
            "primary_purpose": info.get("primaryPurpose"), "time_perspective": info.get("timePerspective"),
            "masking": masking.get("masking"), "masking_description": masking.get("maskingDescription"),
            "subject_masked": _includes(who, "PARTICIPANT"), "caregiver_masked": _includes(who, "CARE_PROVIDER"),
            "investigator_masked": _includes(who, "INVESTIGATOR"),
            "outcomes_assessor_masked": _includes(who, "OUTCOMES_ASSESSOR"),
        })
    elig = ps.get("eligibilityModule")
    if isinstance(elig, dict):  # no module, no row (AACT)
        std_ages = elig.get("stdAges")
        batch.add("eligibilities", {
            "nct_id": nct, "sampling_method": elig.get("samplingMethod"), "population": elig.get("studyPopulation"),
            "maximum_age": elig.get("maximumAge"), "minimum_age": elig.get("minimumAge"), "gender": elig.get("sex"),
            "gender_based": _yes_no(elig.get("genderBased")), "gender_description": elig.get("genderDescription"),
            "healthy_volunteers": elig.get("healthyVolunteers"), "criteria": elig.get("eligibilityCriteria"),
            "adult": _includes(std_ages, "ADULT"), "child": _includes(std_ages, "CHILD"),
            "older_adult": _includes(std_ages, "OLDER_ADULT"),
        })


def _map_locations(nct: str, contacts: dict[str, Any], derived: dict[str, Any], batch: Batch,
                   ids: dict[str, Iterator[int]]) -> list[str]:
    """facilities with their contacts and investigators, central contacts, officials, countries."""
    for index, contact in enumerate(_dicts(contacts.get("centralContacts"))):
        batch.add("central_contacts", {
            "nct_id": nct, "contact_type": "primary" if index == 0 else "backup", "name": contact.get("name"),
            "phone": contact.get("phone"), "email": contact.get("email"), "phone_extension": contact.get("phoneExt"),
            "role": contact.get("role")})
    for official in _dicts(contacts.get("overallOfficials")):
        batch.add("overall_officials", {"nct_id": nct, "name": official.get("name"),
                                        "affiliation": official.get("affiliation"), "role": official.get("role")})
    countries: list[str] = []
    country_rows: dict[tuple[Any, bool], None] = {}  # AACT: unique rows, in order of appearance
    for loc in _dicts(contacts.get("locations")):
        fid = next(ids["facilities"])
        geo: dict[str, Any] = loc["geoPoint"] if isinstance(loc.get("geoPoint"), dict) else {}
        country = loc.get("country")
        countries.append(country if isinstance(country, str) else "")
        batch.add("facilities", {
            "id": fid, "nct_id": nct, "status": loc.get("status"), "name": loc.get("facility"),
            "city": loc.get("city"), "state": loc.get("state"), "zip": loc.get("zip"), "country": country,
            "latitude": geo.get("lat"), "longitude": geo.get("lon")})
        people = _dicts(loc.get("contacts"))
        investigators = [p for p in people if _INVESTIGATOR_RE.search(str(p.get("role") or ""))]
        others = [p for p in people if not _INVESTIGATOR_RE.search(str(p.get("role") or ""))]
        for person in investigators:
            batch.add("facility_investigators", {"nct_id": nct, "facility_id": fid, "role": person.get("role"),
                                                 "name": person.get("name")})
        for index, person in enumerate(others):
            batch.add("facility_contacts", {
                "nct_id": nct, "facility_id": fid, "contact_type": "primary" if index == 0 else "backup",
                "name": person.get("name"), "email": person.get("email"), "phone": person.get("phone"),
                "phone_extension": person.get("phoneExt")})
        if country is not None:
            country_rows.setdefault((country, False))
    for country in _list(_get(derived, "miscInfoModule", "removedCountries")):
        country_rows.setdefault((country, True))
    for name, removed in country_rows:
        batch.add("countries", {"nct_id": nct, "name": name, "removed": removed})
    return countries


_INVESTIGATOR_RE = re.compile(r"investigator|study.chair", re.IGNORECASE)


def _map_results(nct: str, results: dict[str, Any], batch: Batch,
                 ids: dict[str, Iterator[int]]) -> tuple[int, int | None, int | None]:
    """Every results table; returns (outcome rows, serious and other subjects affected — NULL without events)."""
    group_ids: dict[tuple[Any, str], int] = {}  # (ctgov code, result type) → local result_groups id

    def add_groups(groups: Any, result_type: str) -> None:
        seen: set[tuple[Any, Any, Any]] = set()
        for g in _dicts(groups):
            key = (g.get("id"), g.get("title"), g.get("description"))
            if key in seen:  # AACT's `unique: true`
                continue
            seen.add(key)
            rid = next(ids["result_groups"])
            group_ids.setdefault((g.get("id"), result_type), rid)
            batch.add("result_groups", {"id": rid, "nct_id": nct, "ctgov_group_code": g.get("id"),
                                        "result_type": result_type, "title": g.get("title"),
                                        "description": g.get("description")})

    baseline = results.get("baselineCharacteristicsModule") or {}
    flow = results.get("participantFlowModule")
    ae = results.get("adverseEventsModule") or {}
    add_groups(baseline.get("groups"), "Baseline")
    flow = flow if isinstance(flow, dict) else None
    add_groups(flow.get("groups") if flow is not None else None, "Participant Flow")

    outcome_rows = _map_outcomes(nct, results, batch, ids)
    add_groups(ae.get("eventGroups"), "Reported Event")

    if flow is not None:
        batch.add("participant_flows", {"nct_id": nct, "recruitment_details": flow.get("recruitmentDetails"),
                                        "pre_assignment_details": flow.get("preAssignmentDetails"),
                                        "units_analyzed": flow.get("typeUnitsAnalyzed")})
        periods = _dicts(flow.get("periods"))
        for ach, milestone, period in _flatten(periods, ["milestones", "achievements"]):
            batch.add("milestones", {
                "nct_id": nct, "result_group_id": group_ids.get((ach.get("groupId"), "Participant Flow")),
                "ctgov_group_code": ach.get("groupId"), "title": milestone.get("type"), "period": period.get("title"),
                "description": ach.get("description"), "count": ach.get("numSubjects"),
                "milestone_description": milestone.get("comment"), "count_units": ach.get("numUnits")})
        for reason, drop, period in _flatten(periods, ["dropWithdraws", "reasons"]):
            batch.add("drop_withdrawals", {
                "nct_id": nct, "result_group_id": group_ids.get((reason.get("groupId"), "Participant Flow")),
                "ctgov_group_code": reason.get("groupId"), "period": period.get("title"), "reason": drop.get("type"),
                "count": reason.get("numSubjects"), "drop_withdraw_comment": drop.get("comment"),
                "reason_comment": reason.get("comment"), "count_units": reason.get("numUnits")})

    if baseline:
        _map_baseline(nct, baseline, batch, group_ids)

    subjects: dict[str, int | None] = {"serious": None, "other": None}
    if ae:
        for key, etype in (("seriousEvents", "serious"), ("otherEvents", "other")):
            for stat, event in _flatten(_dicts(ae.get(key)), ["stats"]):
                affected = stat.get("numAffected")
                row = {
                    "nct_id": nct, "result_group_id": group_ids.get((stat.get("groupId"), "Reported Event")),
                    "event_type": etype, "time_frame": ae.get("timeFrame"),
                    "frequency_threshold": ae.get("frequencyThreshold"), "description": ae.get("description"),
                    "adverse_event_term": event.get("term"), "organ_system": event.get("organSystem"),
                    "vocab": event.get("sourceVocabulary"), "assessment": event.get("assessmentType"),
                    "ctgov_group_code": stat.get("groupId"), "event_count": stat.get("numEvents"),
                    "subjects_affected": affected, "subjects_at_risk": stat.get("numAtRisk")}
                batch.add("reported_events", row)
                stored = batch.rows["reported_events"][-1][COLUMNS["reported_events"].index("subjects_affected")]
                if stored is not None:  # SQL sum(): NULL unless some row has a number
                    subjects[etype] = (subjects[etype] or 0) + stored
        for g in _dicts(ae.get("eventGroups")):
            # The group's fields are named after the event type: seriousNumAffected, deathsNumAtRisk, …
            for etype, label in (("serious", "Total, serious adverse events"),
                                 ("other", "Total, other adverse events"),
                                 ("deaths", "Total, all-cause mortality")):
                batch.add("reported_event_totals", {
                    "nct_id": nct, "ctgov_group_code": g.get("id"), "event_type": etype, "classification": label,
                    "subjects_affected": g.get(f"{etype}NumAffected"),
                    "subjects_at_risk": g.get(f"{etype}NumAtRisk")})

    more = results.get("moreInfoModule") or {}
    agreement = more.get("certainAgreement")
    if isinstance(agreement, dict):
        batch.add("result_agreements", {
            "nct_id": nct, "pi_employee": agreement.get("piSponsorEmployee"),
            "restriction_type": agreement.get("restrictionType"),
            "restrictive_agreement": agreement.get("restrictiveAgreement"),
            "other_details": agreement.get("otherDetails")})
    poc = more.get("pointOfContact")
    if isinstance(poc, dict):
        batch.add("result_contacts", {"nct_id": nct, "extension": poc.get("phoneExt"), "phone": poc.get("phone"),
                                      "name": poc.get("title"), "organization": poc.get("organization"),
                                      "email": poc.get("email")})
    return outcome_rows, subjects["serious"], subjects["other"]


def _map_outcomes(nct: str, results: dict[str, Any], batch: Batch, ids: dict[str, Iterator[int]]) -> int:
    """outcomes and, per outcome, its result groups, measurements, counts, analyses and their groups."""
    measures = _dicts(_get(results, "outcomeMeasuresModule", "outcomeMeasures"))
    for m in measures:
        oid = next(ids["outcomes"])
        batch.add("outcomes", {
            "id": oid, "nct_id": nct, "outcome_type": m.get("type"), "title": m.get("title"),
            "description": m.get("description"), "time_frame": m.get("timeFrame"),
            "population": m.get("populationDescription"),
            "anticipated_posting_date": _date_first_of_month(m.get("anticipatedPostingDate")),
            "anticipated_posting_month_year": m.get("anticipatedPostingDate"), "units": m.get("unitOfMeasure"),
            "units_analyzed": m.get("typeUnitsAnalyzed"), "dispersion_type": m.get("dispersionType"),
            "param_type": m.get("paramType")})
        groups: dict[Any, int] = {}
        for g in _dicts(m.get("groups")):
            rid = next(ids["result_groups"])
            groups.setdefault(g.get("id"), rid)
            batch.add("result_groups", {"id": rid, "nct_id": nct, "outcome_id": oid, "ctgov_group_code": g.get("id"),
                                        "result_type": "Outcome", "title": g.get("title"),
                                        "description": g.get("description")})
        for meas, category, klass in _flatten(_dicts(m.get("classes")), ["categories", "measurements"]):
            code = meas.get("groupId")
            batch.add("outcome_measurements", {
                "nct_id": nct, "outcome_id": oid, "result_group_id": groups.get(code), "ctgov_group_code": code,
                "classification": klass.get("title"), "category": category.get("title"), "title": m.get("title"),
                "description": m.get("description"), "units": m.get("unitOfMeasure"), "param_type": m.get("paramType"),
                "dispersion_type": m.get("dispersionType"), "param_value": meas.get("value"),
                "param_value_num": _float(meas.get("value")), "dispersion_value": meas.get("spread"),
                "dispersion_value_num": _float(meas.get("spread")),
                "dispersion_lower_limit_raw": meas.get("lowerLimit"),
                "dispersion_lower_limit": _float(meas.get("lowerLimit")),
                "dispersion_upper_limit_raw": meas.get("upperLimit"),
                "dispersion_upper_limit": _float(meas.get("upperLimit")), "explanation_of_na": meas.get("comment")})
        for count, denom in _flatten(_dicts(m.get("denoms")), ["counts"]):
            code = count.get("groupId")
            batch.add("outcome_counts", {"nct_id": nct, "outcome_id": oid, "result_group_id": groups.get(code),
                                         "ctgov_group_code": code, "scope": "Measure", "units": denom.get("units"),
                                         "count": count.get("value")})
        for a in _dicts(m.get("analyses")):
            aid = next(ids["outcome_analyses"])
            p_raw = a.get("pValue")
            p_text = p_raw if isinstance(p_raw, str) else None
            batch.add("outcome_analyses", {
                "id": aid, "nct_id": nct, "outcome_id": oid, "non_inferiority_type": a.get("nonInferiorityType"),
                "non_inferiority_description": a.get("nonInferiorityComment"), "param_type": a.get("paramType"),
                "param_value": _float(a.get("paramValue")), "dispersion_type": a.get("dispersionType"),
                "dispersion_value": _float(a.get("dispersionValue")),
                "p_value_modifier": re.sub(r"[\d.-]", "", p_text).strip() if p_text is not None else None,
                "p_value": _float(re.sub(r"[<> =]", "", p_text).strip()) if p_text is not None else _float(p_raw),
                "p_value_raw": p_raw, "p_value_description": a.get("pValueComment"),
                "ci_n_sides": a.get("ciNumSides"), "ci_percent": _float(a.get("ciPctValue")),
                "ci_lower_limit": _float(a.get("ciLowerLimit")), "ci_upper_limit": _float(a.get("ciUpperLimit")),
                "ci_lower_limit_raw": a.get("ciLowerLimit"), "ci_upper_limit_raw": a.get("ciUpperLimit"),
                "ci_upper_limit_na_comment": a.get("ciUpperLimitComment"), "method": a.get("statisticalMethod"),
                "method_description": a.get("statisticalComment"), "estimate_description": a.get("estimateComment"),
                "groups_description": a.get("groupDescription"),
                "other_analysis_description": a.get("otherAnalysisDescription")})
            for code in _list(a.get("groupIds")):
                batch.add("outcome_analysis_groups", {"nct_id": nct, "outcome_analysis_id": aid,
                                                      "result_group_id": groups.get(code), "ctgov_group_code": code})
    return len(measures)


def _map_baseline(nct: str, baseline: dict[str, Any], batch: Batch, group_ids: dict[tuple[Any, str], int]) -> None:
    """baseline_counts (the module's denominators) and baseline_measurements."""
    overall: dict[tuple[Any, Any], Any] = {}
    for count, denom in _flatten(_dicts(baseline.get("denoms")), ["counts"]):
        code = count.get("groupId")
        overall.setdefault((code, denom.get("units")), count.get("value"))
        batch.add("baseline_counts", {"nct_id": nct, "result_group_id": group_ids.get((code, "Baseline")),
                                      "ctgov_group_code": code, "units": denom.get("units"), "scope": "overall",
                                      "count": count.get("value")})
    for meas, category, klass, measure in _flatten(_dicts(baseline.get("measures")),
                                                   ["classes", "categories", "measurements"]):
        code = meas.get("groupId")
        units = measure.get("denomUnitsSelected") or "Participants"
        denoms = klass.get("denoms") or measure.get("denoms")
        if denoms is None:
            analyzed = overall.get((code, units))
        else:
            analyzed = next((c.get("value") for d in _dicts(denoms) if d.get("units") == units
                             for c in _dicts(d.get("counts")) if c.get("groupId") == code), None)
        pct = measure.get("calculatePct")
        batch.add("baseline_measurements", {
            "nct_id": nct, "result_group_id": group_ids.get((code, "Baseline")), "ctgov_group_code": code,
            "classification": klass.get("title"), "category": category.get("title"), "title": measure.get("title"),
            "description": measure.get("description"), "units": measure.get("unitOfMeasure"),
            "population_description": measure.get("populationDescription"),
            "calculate_percentage": None if pct is None else ("No" if pct is False else "Yes"),
            "param_type": measure.get("paramType"), "param_value": meas.get("value"),
            "param_value_num": _float(meas.get("value")), "dispersion_type": measure.get("dispersionType"),
            "dispersion_value": meas.get("spread"), "dispersion_value_num": _float(meas.get("spread")),
            "dispersion_lower_limit": _float(meas.get("lowerLimit")),
            "dispersion_upper_limit": _float(meas.get("upperLimit")), "explanation_of_na": meas.get("comment"),
            "number_analyzed": analyzed, "number_analyzed_units": units})
