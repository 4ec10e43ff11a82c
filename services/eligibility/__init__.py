"""Eligibility engine: parse criteria, judge them against a patient, score the fit, benchmark it."""
