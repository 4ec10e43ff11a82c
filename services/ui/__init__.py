"""Streamlit-aware glue between the pages and the plain services (the only services that import Streamlit)."""
