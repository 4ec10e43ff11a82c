"""Trial Landscape services: plain Python below the Streamlit views."""
