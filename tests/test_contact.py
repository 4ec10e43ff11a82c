"""Contacting a trial's team (services/contact.py): whom to write to, the draft, and the registry's contacts."""

from __future__ import annotations

import pandas as pd

from services import contact
from services.dashboard import search
from services.trials import details_of

PROFILE = {"age": 62, "sex": "MALE", "diagnosis": "non-small cell lung cancer", "stage": "stage IV",
           "location": "Boston, MA", "latitude": 42.36, "longitude": -71.06}
CENTRAL = {"kind": "central", "role": "primary", "name": "Ann Lee, RN", "email": "trials@example.org", "phone": "555"}
BACKUP = {"kind": "central", "role": "backup", "name": "Bo Chan", "email": "bo@example.org"}
SITE = {"kind": "site", "role": "primary", "name": "Cy Diaz", "phone": "617", "facility": "Dana-Farber Cancer Institute"}


def test_contact_prefers_the_central_contact_then_the_nearest_site_then_clinicaltrials_gov():
    got = contact.choose_contact("NCT01234567", [CENTRAL, BACKUP, SITE], "Dana-Farber Cancer Institute")
    assert (got.who, got.ways) == ("Ann Lee, RN (the trial's central contact)", ("e-mail: trials@example.org",
                                                                                  "phone: 555"))
    no_ways = dict(CENTRAL, email=None, phone=None)
    got = contact.choose_contact("NCT01234567", [no_ways, SITE], "dana-farber cancer institute ")
    assert (got.who, got.ways, got.source) == ("Cy Diaz at Dana-Farber Cancer Institute", ("phone: 617",),
                                               "the contact of the site nearest to you in the registry")
    got = contact.choose_contact("NCT01234567", [SITE], "Another Hospital")  # a contact at a farther site is not used
    assert got.who == "the study team" and got.ways == (
        "the contacts on the trial's ClinicalTrials.gov page: https://clinicaltrials.gov/study/NCT01234567",)


def test_contact_draft_is_plain_short_and_says_only_what_is_known():
    who = contact.choose_contact("NCT01234567", [CENTRAL], None)
    questions = ["Is brain imaging needed first?", "", "Are earlier immunotherapies allowed?", "Q3?", "Q4?", "Q5?"]
    text = contact.draft_message(PROFILE, {"nct_id": "NCT01234567", "title": "A [study](http://x) of *drug*",
                                           "site_where": "Dana-Farber Cancer Institute, Boston, MA"}, who, questions)
    assert text.startswith("Dear Ann Lee, RN,\n\nI am a 62-year-old man with non-small cell lung cancer (stage IV), "
                           "living near Boston, MA. I found your trial NCT01234567, “A [study](http://x) of *drug*”")
    assert text.count("\n- ") == contact.MAX_QUESTIONS and "Q5?" not in text
    assert "site nearest to me (Dana-Farber Cancer Institute, Boston, MA)" in text
    assert text.endswith("[your name and how to reach you]")
    bare = contact.draft_message({}, {"nct_id": "NCT01234567"}, contact.choose_contact("NCT01234567", [], None))
    assert bare.startswith("Dear study team,\n\nI am writing about myself. I found your trial NCT01234567, "
                           "“NCT01234567”")
    assert "From the published criteria" not in bare and "Which site could I join" in bare
    huge = contact.draft_message(PROFILE, {"nct_id": "NCT01234567", "title": "x" * 5000}, who)
    assert len(huge) == contact.MAX_CHARS


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"


def test_contact_draft_drops_bidirectional_controls() -> None:
    # "\u202e" would show the rest of its line reversed in the patient's mail client ("evil" reads as "live").
    profile = dict(PROFILE, diagnosis=f"lung{BIDI} cancer\u202e", location="Boston\u2066, MA\u2069")
    named = dict(CENTRAL, name="Ann\u202e Lee")
    draft = contact.draft_message(profile, {"nct_id": "NCT01234567", "title": f"A{BIDI} study",
                                            "site_where": "Dana\u202e-Farber"},
                                  contact.choose_contact("NCT01234567", [named], None), [f"Is{BIDI} it ok?"])
    assert not set(draft) & set(BIDI)
    assert "Dear Ann Lee," in draft and "with lung cancer" in draft and "“A study”" in draft and "- Is it ok?" in draft


def test_contact_the_registrys_contacts_reach_the_trial_record(db):
    """The shipped sample has no contacts; a database that has them (full AACT) gives them to the report."""
    nct = db.fetch_value("SELECT nct_id FROM ctgov.facilities WHERE name IS NOT NULL ORDER BY nct_id LIMIT 1")
    facility = db.fetch_rows("SELECT id, name FROM ctgov.facilities WHERE nct_id = :n AND name IS NOT NULL "
                             "ORDER BY id LIMIT 1", {"n": nct})[0]
    assert search.trial_detail(nct, db=db).contacts.empty  # the sample's contacts were removed
    assert "contacts" not in details_of(search.trial_detail(nct, db=db))
    try:
        db.execute("INSERT INTO ctgov.central_contacts (nct_id, contact_type, name, email) "
                   "VALUES (:n, 'backup', 'B', 'b@example.org'), (:n, 'primary', 'A', 'a@example.org')", {"n": nct})
        db.execute("INSERT INTO ctgov.facility_contacts (nct_id, facility_id, contact_type, name, phone) "
                   "VALUES (:n, :f, 'primary', 'S', '1')", {"n": nct, "f": facility["id"]})
        details = details_of(search.trial_detail(nct, db=db))
        assert [(c["kind"], c["name"]) for c in details["contacts"]] == [("central", "A"), ("central", "B"),
                                                                         ("site", "S")]
        assert details["contacts"][2]["facility"] == facility["name"]
        assert contact.choose_contact(nct, details["contacts"], None).who == "A (the trial's central contact)"
        rows = pd.DataFrame(details["contacts"])
        assert set(rows["kind"]) == {"central", "site"}
    finally:
        db.execute("DELETE FROM ctgov.central_contacts WHERE nct_id = :n", {"n": nct})
        db.execute("DELETE FROM ctgov.facility_contacts WHERE nct_id = :n", {"n": nct})


def test_contact_draft_greets_a_named_contact_by_name_and_an_unnamed_one_as_the_study_team():
    """The greeting is the contact's name or 'study team', never the description of who they are."""
    site_unnamed = dict(SITE, name=None)
    central_unnamed = dict(CENTRAL, name="")
    cases = [([SITE], "Dear Cy Diaz,"), ([site_unnamed], "Dear study team,"), ([central_unnamed], "Dear study team,"),
             ([CENTRAL], "Dear Ann Lee, RN,"), ([], "Dear study team,")]
    for contacts, greeting in cases:
        who = contact.choose_contact("NCT01234567", contacts, "Dana-Farber Cancer Institute")
        assert contact.draft_message(PROFILE, {"nct_id": "NCT01234567"}, who).split("\n")[0] == greeting, contacts
