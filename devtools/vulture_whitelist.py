"""Names vulture (at 60% confidence, `[tool.vulture]` in pyproject.toml) reports although they are used.

Vulture matches by name only and cannot see reads done by a framework, a protocol or a serialiser. Each line
names one such use; a name that is truly unused goes, it does not come here. Run `vulture` (CI does).
"""

from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# ---- called or read by a library, not by our code --------------------------------------------------------
_.model_config  # pydantic reads each model's class attribute of this name
_.field_title_should_be_set  # pydantic's GenerateJsonSchema hook (assistant.arguments.ToolSchema)
_._networks  # settings: a pydantic field_validator (called by pydantic on model_validate)
_._http_url  # settings: a pydantic field_validator
_.readable  # io.RawIOBase protocol (db's chunk reader, loaders.guard): io.BufferedReader calls it
_.readinto  # io.RawIOBase protocol, called by io.BufferedReader
_.EntityDeclHandler  # healthdata: expat callbacks are set as parser attributes, expat calls them
_.ExternalEntityRefHandler  # expat callback
_.StartElementHandler  # expat callback
_.EndElementHandler  # expat callback
_.__class__  # dashboard.charts: assigning it turns a figure into a SharedFigure in place
_.map_style  # dashboard.mapdeck: pydeck serialises the deck's attributes into its JSON

# ---- fields of records that leave as data (JSON for the model, the report, a CLI's output) --------------
# TypedDicts and pydantic models are read by key or by model_dump/json.dumps, never as attributes.
_.cache_creation_input_tokens  # Anthropic usage counters (llm.Usage, session.UsageCounters: summed by field)
_.search_complete  # session flags: stored and read by key (session._Flags mirrors them)
_.matching_complete  # session flag
_.selection_complete  # session flag
_.report_complete  # session flag
_.distance_miles  # tool arguments and trials.NearestSite: JSON the model reads and writes
_.conditions_matched  # assistant.arguments.Match: set by guided mode, read by the ranking from model_dump
_.abroad  # assistant.arguments.Match: as conditions_matched
_.radius_unit  # assistant.arguments.Matches: a dashboard filter the model sets, read by model_dump
_.official_title  # trials.TrialDetails (TypedDict): JSON for the model and the report template
_.start_date  # trials.TrialDetails / TrialSummary: JSON for the model
_.completion_date  # trials.TrialDetails: JSON for the model
_.primary_outcomes  # trials.TrialDetails: JSON for the model
_.primary_completion_date  # trials TypedDicts: JSON for the model
_.last_update_date  # trials TypedDicts: JSON for the model
_.not_in_this_copy  # trials TypedDicts: JSON for the model (which fields our copy lacks)
_.mesh_terms  # trials.TrialSummary: read by key by the condition check
_.site_count  # trials.TrialSummary: JSON for the model
_.has_criteria  # trials.TrialSummary: JSON for the model
_.criteria_text  # trials.TrialCriteria: JSON for the model
_.organ_system  # trials adverse-event rows: JSON for the model
_.subjects_affected  # trials adverse-event rows: JSON for the model
_.subjects_at_risk  # trials adverse-event rows: JSON for the model
_.event_type  # trials adverse-event rows: JSON for the model
_.planned_enrollment  # trials.DashboardStats: JSON for the model
_.by_phase  # trials.DashboardStats: JSON for the model
_.by_status  # trials.DashboardStats: JSON for the model
_.newest_update  # report.coverage.CopyCoverage (TypedDict): read by key
_.oldest_update  # report.coverage.CopyCoverage: read by key
_.for_patient  # report.coverage.CopyCoverage: read by key (coverage.get)
_.without_located_site  # report.coverage.CopyCoverage: read by key
_.posted_from  # dashboard.filters.Filters: read through dataclasses.fields() (URL, SQL parameters)
_.posted_to  # Filters field, as posted_from
_.updated_from  # Filters field, as posted_from
_.updated_to  # Filters field, as posted_from
_.completion_from  # Filters field, as posted_from
_.completion_to  # Filters field, as posted_from

# ---- used by devtools (outside vulture's paths) ----------------------------------------------------------
_.dashboard_cache_stats  # devtools/commands/bench_load_cmd.py reports the dashboard cache's hits
_.computations  # cache.CacheStats: read by devtools/commands/bench_load_cmd.py
_.conditions_from_note  # devtools/matching_benchmark.py
_.BENCHMARK_LABELS  # devtools/eligibility_benchmark.py
_.to_benchmark  # devtools/eligibility_benchmark.py

# ---- reached only from tests, kept on purpose ------------------------------------------------------------
_.site_key  # data.sitename: the Python statement of the SQL site rule, compared with it by a test
_.in_use  # limits.Gate: what a test reads to see every slot given back after a burst of calls

# ---- NOT false positives: reached only from tests (issue 39 item 4). Delete each line with its code. ----
# services/eligibility and services/dashboard are edited on other branches of the issue.
_.uninformative  # eligibility.scoring.Fit
_.match_record  # eligibility.match
_.combined_evaluator  # eligibility.model
_.judge_criteria  # eligibility.model
_.TOPICS  # eligibility.plain
