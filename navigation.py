"""Trial Landscape — the navigation (served by app.py): the pages of services/ui/pages.py, in its order."""

import streamlit as st

from services.ui import pages

st.navigation([pages.st_page(page.title) for page in pages.PAGES]).run()
