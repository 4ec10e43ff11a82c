"""Trial Landscape — the navigation (served by app.py): the pages, labelled Home, Explore, Compare, Map, …"""

from pathlib import Path

import streamlit as st

HERE = Path(__file__).parent
# (file, label): plain labels, as Streamlit's folder-based navigation showed them, apart from the first page.
PAGES = [
    ("home.py", "Home"),
    ("pages/1_Explore.py", "Explore"),
    ("pages/7_Compare.py", "Compare"),
    ("pages/2_Map.py", "Map"),
    ("pages/9_Sites.py", "Sites"),
    ("pages/8_Timeline.py", "Timeline"),
    ("pages/3_Trials.py", "Trials"),
    ("pages/4_Assistant.py", "Assistant"),
    ("pages/5_SQL.py", "SQL"),
    ("pages/6_Data.py", "Data"),
]

st.navigation([st.Page(path, title=title, default=path == "home.py")
               for path, title in PAGES if (HERE / path).exists()]).run()
