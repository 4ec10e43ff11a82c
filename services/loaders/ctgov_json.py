"""ClinicalTrials.gov API v2 study JSON → AACT ctgov rows, mapped the way AACT maps them."""

from __future__ import annotations

import gzip
import json
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from services.errors import BadInput
from services.loaders.common import NCT_RE, Batch, calculated_values, downcase, parse_api_date


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _open_binary(path: Path) -> Any:
    raw = path.open("rb")
    head = raw.read(2)
    raw.seek(0)
    return gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) of a plain or gzipped text file, decoding each line on its own.

    Raises BadInput naming the line for bytes that are not UTF-8 or a truncated/corrupt gzip stream.
    """
    line_no = 0
    try:
        with _open_binary(path) as fh:
            for line_no, raw in enumerate(fh, start=1):
                try:
                    yield line_no, raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise BadInput(f"{path}: line {line_no}: bytes that are not UTF-8 ({err.reason} at column "
                                   f"{err.start + 1}); save the file as UTF-8 and import again.") from err
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise BadInput(f"{path}: line {line_no + 1}: the gzip stream is truncated or corrupt ({err}); "
                       f"download the file again.") from err


def read_studies(path: Path) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Yield (source name, line/position, study) from .jsonl(.gz), a .json array or a .zip of JSON files.

    Raises BadInput naming the file and line for anything unreadable.
    """
    if not path.exists():
        raise BadInput(f"{path}: no such file.")
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as zf:
                for name in sorted(n for n in zf.namelist() if n.endswith(".json")):
                    try:
                        doc = json.loads(zf.read(name).decode("utf-8"))
                    except (UnicodeDecodeError, json.JSONDecodeError) as err:
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
        if line.lstrip().startswith("["):  # one JSON array (the site's "Download → JSON")
            text = line + "".join(rest for _, rest in lines)
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as err:
                raise BadInput(f"{path}: line {line_no + err.lineno - 1}: not valid JSON ({err.msg}).") from err
            for i, study in enumerate(doc, start=1):
                yield path.name, i, study
            return
        try:
            study = json.loads(line)
        except json.JSONDecodeError as err:
            raise BadInput(f"{path}: line {line_no}: not valid JSON ({err.msg}).") from err
        yield path.name, line_no, study


def study_to_rows(study: dict[str, Any], batch: Batch, ids: dict[str, Iterator[int]]) -> str:
    """Append one v2 study's rows to the batch; return its NCT id.

    `ids` supplies row ids for "interventions" and "design_groups" (arms reference interventions).
    """
    ps = study.get("protocolSection")
    if not isinstance(ps, dict):
        raise ValueError("no protocolSection (is this an API v2 study object?)")
    nct = _get(ps, "identificationModule", "nctId")
    if not isinstance(nct, str) or not NCT_RE.match(nct):
        raise ValueError(f"missing or malformed nctId ({nct!r})")
    ident = ps.get("identificationModule") or {}
    status = ps.get("statusModule") or {}
    design = ps.get("designModule") or {}
    desc = ps.get("descriptionModule") or {}
    spons = ps.get("sponsorCollaboratorsModule") or {}
    oversight = ps.get("oversightModule") or {}
    elig = ps.get("eligibilityModule") or {}
    arms = ps.get("armsInterventionsModule") or {}
    outcomes_mod = ps.get("outcomesModule") or {}
    locs = _get(ps, "contactsLocationsModule", "locations") or []
    derived = study.get("derivedSection") or {}
    results = study.get("resultsSection") or {}
    ipd = ps.get("ipdSharingStatementModule") or {}

    def dstruct(name: str) -> tuple[str | None, str | None]:
        s = status.get(name) or {}
        return s.get("date"), s.get("type")

    start_s, start_t = dstruct("startDateStruct")
    pc_s, pc_t = dstruct("primaryCompletionDateStruct")
    comp_s, comp_t = dstruct("completionDateStruct")
    first_post_s, first_post_t = dstruct("studyFirstPostDateStruct")
    res_post_s, res_post_t = dstruct("resultsFirstPostDateStruct")
    last_post_s, last_post_t = dstruct("lastUpdatePostDateStruct")
    enroll = design.get("enrollmentInfo") or {}
    phases = design.get("phases") or []
    lead = spons.get("leadSponsor") or {}
    exp = status.get("expandedAccessInfo") or {}
    design_info = design.get("designInfo") or {}
    masking = design_info.get("maskingInfo") or {}
    who_masked = set(masking.get("whoMasked") or [])
    bio = design.get("bioSpec") or {}

    batch.add("studies", {
        "nct_id": nct,
        "study_first_submitted_date": parse_api_date(status.get("studyFirstSubmitDate")),
        "results_first_submitted_date": parse_api_date(status.get("resultsFirstSubmitDate")),
        "last_update_submitted_date": parse_api_date(status.get("lastUpdateSubmitDate")),
        "study_first_submitted_qc_date": parse_api_date(status.get("studyFirstSubmitQcDate")),
        "study_first_posted_date": parse_api_date(first_post_s), "study_first_posted_date_type": first_post_t,
        "results_first_submitted_qc_date": parse_api_date(status.get("resultsFirstSubmitQcDate")),
        "results_first_posted_date": parse_api_date(res_post_s), "results_first_posted_date_type": res_post_t,
        "last_update_submitted_qc_date": parse_api_date(status.get("lastUpdateSubmitDate")),
        "last_update_posted_date": parse_api_date(last_post_s), "last_update_posted_date_type": last_post_t,
        "start_month_year": start_s, "start_date_type": start_t, "start_date": parse_api_date(start_s),
        "verification_month_year": status.get("statusVerifiedDate"),
        "verification_date": parse_api_date(status.get("statusVerifiedDate")),
        "completion_month_year": comp_s, "completion_date_type": comp_t, "completion_date": parse_api_date(comp_s),
        "primary_completion_month_year": pc_s, "primary_completion_date_type": pc_t,
        "primary_completion_date": parse_api_date(pc_s),
        "target_duration": design.get("targetDuration"),
        "study_type": design.get("studyType"),
        "acronym": ident.get("acronym"),
        "baseline_population": _get(results, "baselineCharacteristicsModule", "populationDescription"),
        "brief_title": ident.get("briefTitle"),
        "official_title": ident.get("officialTitle"),
        "overall_status": status.get("overallStatus"),
        "last_known_status": status.get("lastKnownStatus"),
        "phase": "/".join(phases) if phases else None,
        "enrollment": enroll.get("count"),
        "enrollment_type": enroll.get("type"),
        "source": _get(ident, "organization", "fullName"),
        "limitations_and_caveats": _get(results, "moreInfoModule", "limitationsAndCaveats", "description"),
        "number_of_arms": len(arms.get("armGroups") or []) or None if design.get("studyType") == "INTERVENTIONAL" else None,
        "number_of_groups": len(arms.get("armGroups") or []) or None if design.get("studyType") != "INTERVENTIONAL" else None,
        "why_stopped": status.get("whyStopped"),
        "has_expanded_access": exp.get("hasExpandedAccess"),
        "has_dmc": oversight.get("oversightHasDmc"),
        "is_fda_regulated_drug": oversight.get("isFdaRegulatedDrug"),
        "is_fda_regulated_device": oversight.get("isFdaRegulatedDevice"),
        "is_unapproved_device": oversight.get("isUnapprovedDevice"),
        "is_ppsd": oversight.get("isPpsd"),
        "is_us_export": oversight.get("isUsExport"),
        "biospec_retention": bio.get("retention"),
        "biospec_description": bio.get("description"),
        "ipd_time_frame": ipd.get("timeFrame"),
        "ipd_access_criteria": ipd.get("accessCriteria"),
        "ipd_url": ipd.get("url"),
        "plan_to_share_ipd": ipd.get("ipdSharing"),
        "plan_to_share_ipd_description": ipd.get("description"),
        "source_class": _get(ident, "organization", "class"),
        "delayed_posting": status.get("delayedPosting"),
        "fdaaa801_violation": oversight.get("fdaaa801Violation"),
        "patient_registry": design.get("patientRegistry"),
    })

    cond_mod = ps.get("conditionsModule") or {}
    for name in cond_mod.get("conditions") or []:
        batch.add("conditions", {"nct_id": nct, "name": name, "downcase_name": downcase(name)})
    for name in cond_mod.get("keywords") or []:
        batch.add("keywords", {"nct_id": nct, "name": name, "downcase_name": downcase(name)})
    for table, module in (("browse_conditions", "conditionBrowseModule"),
                          ("browse_interventions", "interventionBrowseModule")):
        mod = derived.get(module) or {}
        for key, mesh_type in (("meshes", "mesh-list"), ("ancestors", "mesh-ancestor")):
            for mesh in mod.get(key) or []:
                term = mesh.get("term")
                if term:
                    batch.add(table, {"nct_id": nct, "mesh_term": term, "downcase_mesh_term": term.lower(),
                                      "mesh_type": mesh_type})

    # Interventions and arms reference each other through ids.
    interventions = arms.get("interventions") or []
    intervention_ids: dict[str, int] = {}
    for iv in interventions:
        iid = next(ids["interventions"])
        intervention_ids.setdefault(str(iv.get("name") or "").strip().lower(), iid)
        batch.add("interventions", {"id": iid, "nct_id": nct, "intervention_type": iv.get("type"),
                                    "name": iv.get("name"), "description": iv.get("description")})
        for other in iv.get("otherNames") or []:
            batch.add("intervention_other_names", {"nct_id": nct, "intervention_id": iid, "name": other})
    for arm in arms.get("armGroups") or []:
        gid = next(ids["design_groups"])
        batch.add("design_groups", {"id": gid, "nct_id": nct, "group_type": arm.get("type"),
                                    "title": arm.get("label"), "description": arm.get("description")})
        # Arms name their interventions as "Type: name" with a human type label.
        for iname in arm.get("interventionNames") or []:
            iid_for_arm = intervention_ids.get(iname.split(":", 1)[-1].strip().lower())
            if iid_for_arm is not None:
                batch.add("design_group_interventions", {"nct_id": nct, "design_group_id": gid,
                                                         "intervention_id": iid_for_arm})

    if design_info or design.get("studyType"):
        batch.add("designs", {
            "nct_id": nct, "allocation": design_info.get("allocation"),
            "intervention_model": design_info.get("interventionModel"),
            "observational_model": design_info.get("observationalModel"),
            "primary_purpose": design_info.get("primaryPurpose"),
            "time_perspective": design_info.get("timePerspective"),
            "masking": masking.get("masking"), "masking_description": masking.get("maskingDescription"),
            "intervention_model_description": design_info.get("interventionModelDescription"),
            "subject_masked": "PARTICIPANT" in who_masked if masking else None,
            "caregiver_masked": "CARE_PROVIDER" in who_masked if masking else None,
            "investigator_masked": "INVESTIGATOR" in who_masked if masking else None,
            "outcomes_assessor_masked": "OUTCOMES_ASSESSOR" in who_masked if masking else None,
        })

    std_ages = set(elig.get("stdAges") or [])
    minimum_age = elig.get("minimumAge") or "N/A"
    maximum_age = elig.get("maximumAge") or "N/A"
    batch.add("eligibilities", {
        "nct_id": nct, "sampling_method": elig.get("samplingMethod"), "gender": elig.get("sex"),
        "minimum_age": minimum_age, "maximum_age": maximum_age,
        "healthy_volunteers": elig.get("healthyVolunteers"), "population": elig.get("studyPopulation"),
        "criteria": elig.get("eligibilityCriteria"), "gender_description": elig.get("genderDescription"),
        "gender_based": elig.get("genderBased"),
        "adult": "ADULT" in std_ages, "child": "CHILD" in std_ages, "older_adult": "OLDER_ADULT" in std_ages,
    })

    countries: list[str] = []
    for loc in locs:
        geo = loc.get("geoPoint") or {}
        country = loc.get("country")
        countries.append(country or "")
        batch.add("facilities", {
            "nct_id": nct, "status": loc.get("status"), "name": loc.get("facility"), "city": loc.get("city"),
            "state": loc.get("state"), "zip": loc.get("zip"), "country": country,
            "latitude": geo.get("lat"), "longitude": geo.get("lon"),
        })
    for country in sorted({c for c in countries if c}):
        batch.add("countries", {"nct_id": nct, "name": country, "removed": False})
    for country in _get(derived, "miscInfoModule", "removedCountries") or []:
        batch.add("countries", {"nct_id": nct, "name": country, "removed": True})

    if lead.get("name"):
        batch.add("sponsors", {"nct_id": nct, "agency_class": lead.get("class"), "lead_or_collaborator": "lead",
                               "name": lead.get("name")})
    for collab in spons.get("collaborators") or []:
        batch.add("sponsors", {"nct_id": nct, "agency_class": collab.get("class"),
                               "lead_or_collaborator": "collaborator", "name": collab.get("name")})

    if desc.get("briefSummary"):
        batch.add("brief_summaries", {"nct_id": nct, "description": desc["briefSummary"]})
    if desc.get("detailedDescription"):
        batch.add("detailed_descriptions", {"nct_id": nct, "description": desc["detailedDescription"]})

    outcome_counts = []
    for key, otype in (("primaryOutcomes", "primary"), ("secondaryOutcomes", "secondary"), ("otherOutcomes", "other")):
        items = outcomes_mod.get(key) or []
        outcome_counts.append(len(items))
        for o in items:
            batch.add("design_outcomes", {"nct_id": nct, "outcome_type": otype, "measure": o.get("measure"),
                                          "time_frame": o.get("timeFrame"), "population": None,
                                          "description": o.get("description")})

    measures = _get(results, "outcomeMeasuresModule", "outcomeMeasures") or []
    for m in measures:
        batch.add("outcomes", {"nct_id": nct, "outcome_type": m.get("type"), "title": m.get("title"),
                               "description": m.get("description"), "time_frame": m.get("timeFrame"),
                               "population": m.get("populationDescription"), "units": m.get("unitOfMeasure"),
                               "dispersion_type": m.get("dispersionType"), "param_type": m.get("paramType")})

    ae = results.get("adverseEventsModule") or {}
    sae_total = nsae_total = None
    if ae:
        threshold = ae.get("frequencyThreshold")
        for group in ae.get("eventGroups") or []:
            batch.add("result_groups", {"nct_id": nct, "ctgov_group_code": group.get("id"),
                                        "result_type": "Reported Event", "title": group.get("title"),
                                        "description": group.get("description")})
        for key, etype in (("seriousEvents", "serious"), ("otherEvents", "other")):
            for ev in ae.get(key) or []:
                for stat in ev.get("stats") or []:
                    affected = stat.get("numAffected")
                    if etype == "serious":
                        sae_total = (sae_total or 0) + (affected or 0)
                    else:
                        nsae_total = (nsae_total or 0) + (affected or 0)
                    batch.add("reported_events", {
                        "nct_id": nct, "ctgov_group_code": stat.get("groupId"), "time_frame": ae.get("timeFrame"),
                        "event_type": etype, "default_vocab": ev.get("sourceVocabulary"),
                        "default_assessment": ev.get("assessmentType"), "subjects_affected": affected,
                        "subjects_at_risk": stat.get("numAtRisk"), "description": ae.get("description"),
                        "event_count": stat.get("numEvents"), "organ_system": ev.get("organSystem"),
                        "adverse_event_term": ev.get("term"),
                        "frequency_threshold": int(float(threshold)) if _is_number(threshold) else None,
                        "vocab": ev.get("sourceVocabulary"), "assessment": ev.get("assessmentType"),
                    })

    org_id = _get(ident, "orgStudyIdInfo", "id")
    if org_id:
        batch.add("id_information", {"nct_id": nct, "id_source": "org_study_id", "id_value": org_id})
    for sec in ident.get("secondaryIdInfos") or []:
        batch.add("id_information", {"nct_id": nct, "id_source": "secondary_id", "id_value": sec.get("id"),
                                     "id_type": sec.get("type"), "id_type_description": sec.get("domain"),
                                     "id_link": sec.get("link")})
    for alias in ident.get("nctIdAliases") or []:
        batch.add("id_information", {"nct_id": nct, "id_source": "nct_alias", "id_value": alias})

    batch.add("calculated_values", calculated_values(
        nct, facilities_countries=countries, sae_subjects=sae_total, nsae_subjects=nsae_total,
        first_submitted=parse_api_date(status.get("studyFirstSubmitDate")), start=parse_api_date(start_s),
        start_type=start_t, primary_completion=parse_api_date(pc_s), primary_completion_type=pc_t,
        results_submitted=parse_api_date(status.get("resultsFirstSubmitDate")),
        were_results_reported=bool(measures), minimum_age=minimum_age, maximum_age=maximum_age,
        outcome_counts=(outcome_counts[0], outcome_counts[1], outcome_counts[2]),
    ))
    batch.nct_ids.append(nct)
    return nct


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
