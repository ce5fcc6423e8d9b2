"""The Streamlit app: one module a page, widgets and calls into the core, no logic of their own."""
