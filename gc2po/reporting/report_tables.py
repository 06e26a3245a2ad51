"""A Markdown table file (a comparison, the mechanism table, a dose-response, the signal audit)
as a self-contained HTML page for the Snakemake report.

The report shows an HTML result in a frame and offers any other file only as a download, so
each table the workflow writes as Markdown gets an HTML copy: its heading, the table and the
notes under it, rendered from the same Markdown (pipe tables, emphasis) with a little CSS;
nothing is recomputed.
"""

from __future__ import annotations

import html

from markdown_it import MarkdownIt

STYLE = """
body { font-family: sans-serif; font-size: 14px; margin: 1em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f0f0f0; }
"""


def markdown_page(markdown: str, title: str) -> str:
    """An HTML document holding ``markdown`` rendered (CommonMark with pipe tables), titled
    ``title``; raw HTML in the Markdown is escaped, not passed through."""
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n{body}</body></html>\n"
    )
