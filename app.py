"""Streamlit entry of Stepscope: ``streamlit run app.py`` (or ``stepscope app``).

The navigation lives in ``debugger/ui/entry.py`` so that an installed package carries it too.
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).parent / "debugger" / "ui" / "entry.py"), run_name="__main__")
