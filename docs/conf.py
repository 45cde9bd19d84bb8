"""Sphinx configuration of the docs site: MyST Markdown, the Furo theme, autodoc.

Build it with ``python scripts/build_docs.py html`` (or ``sphinx-build -W --keep-going -b html
docs docs/_build/html``). The extension ``_ext/env_pages.py`` generates ``environments/``
from the cards at every build and refreshes ``previews/``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path

with contextlib.suppress(ImportError):  # Furo's pygments styles: importing them calls
    import a11y_pygments  # noqa: F401  logging.basicConfig(level=INFO), and every library's
logging.getLogger().setLevel(logging.WARNING)  # INFO lines (alembic's 7) reached the build

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

from api_pages import AUTODOC_EXCLUDED  # noqa: E402

import rlbench_suite  # noqa: E402

project = "rlbench-suite"
author = "the rlbench-suite authors"
copyright = "the rlbench-suite authors"
release = version = rlbench_suite.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",  # Google-style "Args:" sections of docstrings
    "env_pages",
    "api_pages",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "previews", "Thumbs.db", ".DS_Store"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    "ignore-module-all": True,  # api_pages documents re-exports under their public paths
    "exclude-members": AUTODOC_EXCLUDED,
}
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False  # not the third-party bases' (Ray's, SB3's) docstrings
autodoc_typehints = "description"

html_theme = "furo"
html_title = f"rlbench-suite {release}"
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["tables.css"]  # long inline code in tables wraps: the tables fit at 1280 px

# The environment pages: make missing or stale previews during the build.
rlbench_render_previews = True
