"""The report's HTML copy of a Markdown table (gc2po.reporting.report_tables)."""

from __future__ import annotations

from gc2po.reporting.report_tables import markdown_page


def test_a_markdown_table_becomes_an_html_table_with_its_heading_and_notes():
    markdown = (
        "# GC2PO (paper) vs GRPO\n\n| benchmark | a - b |\n|---|---:|\n| test_id | +1.5 |\n\n"
        "Holm over *5* splits.\n"
    )
    page = markdown_page(markdown, "gc2po_vs_grpo")
    assert page.startswith("<!DOCTYPE html>") and "<title>gc2po_vs_grpo</title>" in page
    assert "<h1>GC2PO (paper) vs GRPO</h1>" in page
    assert "<th>benchmark</th>" in page and '<td style="text-align:right">+1.5</td>' in page
    assert "<p>Holm over <em>5</em> splits.</p>" in page


def test_raw_html_in_a_cell_is_escaped():
    page = markdown_page("| a |\n|---|\n| <script>x</script> |\n", "t")
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
