"""The "check the status on ClinicalTrials.gov now" button and its answer (Streamlit glue for services.live).

Shown on the trial page and on the assistant's cards. The look-up runs only when the visitor presses the button and
sends only the NCT number. Its answer stays for this visitor's session; a successful answer takes the place of our
own "status may be out of date" mark, since it says what the status is today.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from services import inert, live

_ANSWERS = "live_answers"  # session state: NCT id → (kind, sentence); kind is changed, same or failed
_SHOW = {"changed": (st.warning, "🔔"), "same": (st.success, "✅"), "failed": (st.info, "📡")}


def _ask(nct_id: str, our_status: str | None, our_updated: Any) -> None:
    answers = st.session_state.setdefault(_ANSWERS, {})
    try:
        result = live.live_status(nct_id)
    except live.LiveUnavailable as err:
        answers[nct_id] = ("failed", f"{err} {err.hint}")
        return
    differs, text = live.compare_with_copy(result, our_status, our_updated)
    answers[nct_id] = ("changed" if differs else "same", text)


def live_status_box(nct_id: str, our_status: str | None, our_updated: Any, *, stale_note: str | None,
                    key: str) -> None:
    """Our stale-status mark (if any) or the live answer that replaces it, then the button that asks."""
    answer = st.session_state.get(_ANSWERS, {}).get(nct_id) if live.live_enabled() else None
    if stale_note and (answer is None or answer[0] == "failed"):
        st.warning(stale_note, icon="⏳")  # our own sentence
    if answer is not None:
        show, icon = _SHOW[answer[0]]
        show(inert.md(answer[1]), icon=icon)  # it quotes the registry's words: shown literally
    if live.live_enabled():
        st.button("Check again on ClinicalTrials.gov" if answer else "Check the status on ClinicalTrials.gov now",
                  key=key, on_click=_ask, args=(nct_id, our_status, our_updated),
                  help="Asks ClinicalTrials.gov for this trial's current status. Only the NCT number is sent.")
