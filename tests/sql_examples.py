"""Legitimate analytical queries over AACT's ctgov schema, shared by the guard and database tests.

Each entry is (id, sql, params): `params` holds a value for every `:name` in the query, in the
order the names first appear, so a database test can bind and run the query as written.
"""

from __future__ import annotations

from typing import Any

EXAMPLES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "trials_per_phase",
        """
        SELECT coalesce(phase, 'NONE') AS phase, count(*) AS trials
        FROM ctgov.studies
        GROUP BY 1
        ORDER BY trials DESC, phase
        """,
        {},
    ),
    (
        "recruiting_in_phase",
        """
        -- recruiting trials of one phase, newest first
        SELECT nct_id, brief_title, start_date
        FROM ctgov.studies
        WHERE overall_status = 'RECRUITING' AND phase = :phase
        ORDER BY start_date DESC NULLS LAST, nct_id
        LIMIT 50;
        """,
        {"phase": "PHASE3"},
    ),
    (
        "median_enrollment_by_phase",
        """
        SELECT phase,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY enrollment) AS median_enrollment,
               percentile_disc(0.9) WITHIN GROUP (ORDER BY enrollment) AS p90_enrollment,
               count(*) FILTER (WHERE enrollment_type = 'ACTUAL') AS with_actual_enrollment
        FROM ctgov.studies
        WHERE phase IS NOT NULL AND enrollment IS NOT NULL
        GROUP BY phase
        ORDER BY phase
        """,
        {},
    ),
    (
        "lead_sponsor_rank",
        """
        SELECT sp.name AS lead_sponsor,
               count(*) AS trials,
               rank() OVER (ORDER BY count(*) DESC) AS sponsor_rank,
               round(100.0 * count(*) / sum(count(*)) OVER (), 2) AS share_pct
        FROM ctgov.sponsors AS sp
        WHERE sp.lead_or_collaborator = 'lead'
        GROUP BY sp.name
        ORDER BY trials DESC, lead_sponsor
        LIMIT 25
        """,
        {},
    ),
    (
        "registrations_running_total",
        """
        WITH yearly AS (
            SELECT extract(year FROM study_first_submitted_date)::int AS year, count(*) AS registered
            FROM ctgov.studies
            WHERE study_first_submitted_date IS NOT NULL
            GROUP BY 1
        )
        SELECT year, registered,
               sum(registered) OVER (ORDER BY year ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_total,
               registered - lag(registered) OVER (ORDER BY year) AS change_from_previous_year
        FROM yearly
        ORDER BY year
        """,
        {},
    ),
    (
        "largest_trials_per_country_lateral",
        """
        SELECT c.name AS country, top.nct_id, top.enrollment
        FROM (SELECT DISTINCT name FROM ctgov.countries WHERE NOT removed) AS c
        CROSS JOIN LATERAL (
            SELECT s.nct_id, s.enrollment
            FROM ctgov.studies AS s
            JOIN ctgov.countries AS sc ON sc.nct_id = s.nct_id AND NOT sc.removed
            WHERE sc.name = c.name AND s.enrollment IS NOT NULL
            ORDER BY s.enrollment DESC, s.nct_id
            LIMIT 3
        ) AS top
        ORDER BY country, top.enrollment DESC, top.nct_id
        """,
        {},
    ),
    (
        "monthly_starts_with_gaps",
        """
        WITH months AS (
            SELECT generate_series(date '2020-01-01', date '2020-12-01', interval '1 month')::date AS month
        )
        SELECT m.month, count(s.nct_id) AS trials_started
        FROM months AS m
        LEFT JOIN ctgov.studies AS s ON date_trunc('month', s.start_date) = m.month
        GROUP BY m.month
        ORDER BY m.month
        """,
        {},
    ),
    (
        "latest_trial_per_lead_sponsor",
        """
        SELECT DISTINCT ON (sp.name) sp.name AS lead_sponsor, s.nct_id, s.start_date, s.brief_title
        FROM ctgov.sponsors AS sp
        JOIN ctgov.studies AS s USING (nct_id)
        WHERE sp.lead_or_collaborator = 'lead' AND s.start_date IS NOT NULL
        ORDER BY sp.name, s.start_date DESC, s.nct_id
        """,
        {},
    ),
    (
        "results_rate_by_completion_year",
        """
        SELECT extract(year FROM s.completion_date)::int AS completion_year,
               count(*) AS completed,
               count(*) FILTER (WHERE cv.were_results_reported) AS with_results,
               round(100.0 * count(*) FILTER (WHERE cv.were_results_reported) / count(*), 1) AS pct_reported
        FROM ctgov.studies AS s
        JOIN ctgov.calculated_values AS cv ON cv.nct_id = s.nct_id
        WHERE s.overall_status = 'COMPLETED' AND s.completion_date IS NOT NULL
        GROUP BY 1
        ORDER BY 1
        """,
        {},
    ),
    (
        "sites_per_country",
        """
        SELECT f.country, count(*) AS sites, count(DISTINCT f.nct_id) AS trials
        FROM ctgov.facilities AS f
        WHERE f.country IS NOT NULL
        GROUP BY f.country
        HAVING count(*) >= 1
        ORDER BY sites DESC, f.country
        """,
        {},
    ),
    (
        "enrollment_histogram",
        """
        SELECT width_bucket(enrollment, 0, 1000, 10) AS bucket,
               min(enrollment) AS smallest, max(enrollment) AS largest, count(*) AS trials
        FROM ctgov.studies
        WHERE enrollment IS NOT NULL AND study_type = :study_type
        GROUP BY bucket
        ORDER BY bucket
        """,
        {"study_type": "INTERVENTIONAL"},
    ),
    (
        "condition_search",
        """
        SELECT c.name AS condition, count(DISTINCT c.nct_id) AS trials
        FROM ctgov.conditions AS c
        WHERE c.downcase_name LIKE '%' || lower(:term) || '%'
        GROUP BY c.name
        ORDER BY trials DESC, condition
        LIMIT 20
        """,
        {"term": "Cancer"},
    ),
    (
        "intervention_types_by_phase",
        """
        SELECT s.phase,
               count(*) FILTER (WHERE i.intervention_type = 'DRUG') AS drug,
               count(*) FILTER (WHERE i.intervention_type = 'DEVICE') AS device,
               count(*) FILTER (WHERE i.intervention_type = 'BIOLOGICAL') AS biological,
               count(*) FILTER (WHERE i.intervention_type NOT IN ('DRUG', 'DEVICE', 'BIOLOGICAL')) AS other
        FROM ctgov.interventions AS i
        JOIN ctgov.studies AS s ON s.nct_id = i.nct_id
        WHERE s.phase IS NOT NULL
        GROUP BY s.phase
        ORDER BY s.phase
        """,
        {},
    ),
    (
        "sponsor_roles_union",
        """
        SELECT 'lead' AS role, agency_class, count(*) AS sponsorships
        FROM ctgov.sponsors WHERE lead_or_collaborator = 'lead' GROUP BY agency_class
        UNION ALL
        SELECT 'collaborator', agency_class, count(*)
        FROM ctgov.sponsors WHERE lead_or_collaborator = 'collaborator' GROUP BY agency_class
        ORDER BY role, sponsorships DESC, agency_class
        """,
        {},
    ),
    (
        "us_sites_without_results_except",
        """
        SELECT nct_id FROM ctgov.calculated_values WHERE has_us_facility
        EXCEPT
        SELECT nct_id FROM ctgov.calculated_values WHERE were_results_reported
        ORDER BY nct_id
        """,
        {},
    ),
    (
        "recruiting_in_country_exists",
        """
        SELECT s.nct_id, s.brief_title, s.phase
        FROM ctgov.studies AS s
        WHERE s.overall_status = 'RECRUITING'
          AND EXISTS (
              SELECT 1 FROM ctgov.facilities AS f
              WHERE f.nct_id = s.nct_id AND f.country = :country
          )
          AND (CAST(:phase AS text) IS NULL OR s.phase = :phase)
        ORDER BY s.nct_id
        """,
        {"country": "United States", "phase": None},
    ),
    (
        "months_to_report_by_agency_class",
        """
        SELECT sp.agency_class,
               count(cv.months_to_report_results) AS reported,
               round(avg(cv.months_to_report_results), 1) AS mean_months,
               round(stddev_samp(cv.months_to_report_results), 1) AS sd_months,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY cv.months_to_report_results) AS median_months
        FROM ctgov.calculated_values AS cv
        JOIN ctgov.sponsors AS sp ON sp.nct_id = cv.nct_id AND sp.lead_or_collaborator = 'lead'
        WHERE cv.months_to_report_results IS NOT NULL
        GROUP BY sp.agency_class
        ORDER BY sp.agency_class
        """,
        {},
    ),
    (
        "status_counts_as_json",
        """
        SELECT phase, jsonb_object_agg(overall_status, trials ORDER BY overall_status) AS trials_by_status
        FROM (
            SELECT coalesce(phase, 'NONE') AS phase, overall_status, count(*) AS trials
            FROM ctgov.studies
            GROUP BY 1, 2
        ) AS counts
        GROUP BY phase
        ORDER BY phase
        """,
        {},
    ),
    (
        "countries_per_trial",
        """
        SELECT s.nct_id,
               string_agg(DISTINCT c.name, ', ' ORDER BY c.name) AS countries,
               count(DISTINCT c.name) AS country_count
        FROM ctgov.studies AS s
        JOIN ctgov.countries AS c ON c.nct_id = s.nct_id AND NOT c.removed
        GROUP BY s.nct_id
        HAVING count(DISTINCT c.name) > 1
        ORDER BY country_count DESC, s.nct_id
        LIMIT 20
        """,
        {},
    ),
    (
        "enrollment_quartiles_ntile",
        """
        SELECT phase, quartile, min(enrollment) AS from_enrollment, max(enrollment) AS to_enrollment, count(*) AS trials
        FROM (
            SELECT phase, enrollment, ntile(4) OVER (PARTITION BY phase ORDER BY enrollment) AS quartile
            FROM ctgov.studies
            WHERE phase IS NOT NULL AND enrollment IS NOT NULL
        ) AS ranked
        GROUP BY phase, quartile
        ORDER BY phase, quartile
        """,
        {},
    ),
    (
        "minimum_age_bands",
        """
        SELECT CASE
                   WHEN cv.minimum_age_num < 18 THEN 'under 18'
                   WHEN cv.minimum_age_num < 65 THEN '18 to 64'
                   ELSE '65 and over'
               END AS minimum_age_band,
               count(*) AS trials
        FROM ctgov.calculated_values AS cv
        JOIN ctgov.eligibilities AS e ON e.nct_id = cv.nct_id
        WHERE cv.minimum_age_unit = 'year' AND cv.minimum_age_num >= CAST(:min_age AS integer)
          AND e.gender = :gender
        GROUP BY 1
        ORDER BY 1
        """,
        {"min_age": 0, "gender": "ALL"},
    ),
    (
        "design_masking_by_allocation",
        """
        SELECT coalesce(d.allocation, 'NOT GIVEN') AS allocation,
               coalesce(d.masking, 'NOT GIVEN') AS masking,
               count(*) AS trials
        FROM ctgov.designs AS d
        GROUP BY ROLLUP (1, 2)
        ORDER BY 1 NULLS LAST, 2 NULLS LAST
        """,
        {},
    ),
    (
        "started_between_years",
        """
        SELECT s.overall_status, count(*) AS trials
        FROM ctgov.studies AS s
        WHERE s.start_date >= make_date(CAST(:from_year AS integer), 1, 1)
          AND s.start_date < make_date(CAST(:to_year AS integer) + 1, 1, 1)
          AND s.phase = :phase
        GROUP BY s.overall_status
        ORDER BY trials DESC, s.overall_status
        """,
        {"from_year": 2015, "to_year": 2024, "phase": "PHASE2"},
    ),
    (
        "phase_order_from_values",
        """
        SELECT o.phase, o.position, count(s.nct_id) AS trials
        FROM (VALUES ('EARLY_PHASE1', 1), ('PHASE1', 2), ('PHASE1/PHASE2', 3), ('PHASE2', 4),
                     ('PHASE2/PHASE3', 5), ('PHASE3', 6), ('PHASE4', 7), ('NA', 8)) AS o(phase, position)
        LEFT JOIN ctgov.studies AS s ON s.phase = o.phase
        GROUP BY o.phase, o.position
        ORDER BY o.position
        """,
        {},
    ),
    (
        "median_duration_months",
        """
        SELECT s.phase,
               percentile_cont(0.5) WITHIN GROUP (
                   ORDER BY (s.primary_completion_date - s.start_date) / 30.0
               ) AS median_months
        FROM ctgov.studies AS s
        WHERE s.start_date IS NOT NULL AND s.primary_completion_date >= s.start_date
          AND s.phase IS NOT NULL
        GROUP BY s.phase
        ORDER BY s.phase
        """,
        {},
    ),
    (
        "serious_adverse_event_terms",
        """
        SELECT re.adverse_event_term, re.organ_system,
               sum(re.subjects_affected) AS subjects_affected,
               count(DISTINCT re.nct_id) AS trials
        FROM ctgov.reported_events AS re
        WHERE re.event_type = 'serious' AND re.subjects_affected > 0
        GROUP BY re.adverse_event_term, re.organ_system
        ORDER BY subjects_affected DESC, re.adverse_event_term, re.organ_system
        LIMIT 20
        """,
        {},
    ),
    (
        "mesh_terms_recursive_levels",
        """
        WITH RECURSIVE levels(n) AS (
            SELECT 1
            UNION ALL
            SELECT n + 1 FROM levels WHERE n < 5
        ),
        per_trial AS (
            SELECT bc.nct_id, count(*) AS mesh_terms
            FROM ctgov.browse_conditions AS bc
            WHERE bc.mesh_type = 'mesh-list'
            GROUP BY bc.nct_id
        )
        SELECT l.n AS at_least_terms, count(p.nct_id) AS trials
        FROM levels AS l
        LEFT JOIN per_trial AS p ON p.mesh_terms >= l.n
        GROUP BY l.n
        ORDER BY l.n
        """,
        {},
    ),
    (
        "schema_columns",
        """
        SELECT table_name, column_name, data_type
        FROM information_schema.columns
        WHERE table_schema = 'ctgov' AND table_name = :table_name
        ORDER BY ordinal_position
        """,
        {"table_name": "studies"},
    ),
    (
        "unqualified_tables_with_keyword_names",
        """
        SELECT s.nct_id, k.name AS keyword, initcap(k.downcase_name) AS tidy
        FROM studies AS s
        JOIN keywords AS k ON k.nct_id = s.nct_id
        WHERE k.downcase_name = any(string_to_array(lower(:words), ','))
        ORDER BY s.nct_id, keyword
        """,
        {"words": "asthma,copd"},
    ),
]
