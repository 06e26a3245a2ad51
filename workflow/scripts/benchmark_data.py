"""Load one dataset (Hub id or local mirror) and write normalised JSONL + manifest. A training set
with ``decontaminate: true`` drops the questions that overlap an evaluation set of the config
before its seeded subset is drawn; the manifest lists them."""

from gc2po.data import load_benchmark, write_normalised
from gc2po.data.decontamination import overlap_excluder, read_question_records
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
spec = sm.params.spec
with logged(sm) as log:
    skipped, excluded, dropped = [], [], []
    exclude = None
    if spec.get("decontaminate"):
        evaluation = {
            name: read_question_records(path)
            for name, path in zip(sm.params.evaluation, sm.input.evaluation)
        }
        exclude = overlap_excluder(evaluation, dropped)
    years = tuple(spec["years"]) if spec.get("years") else None
    records = load_benchmark(
        spec["benchmark"],
        spec.get("path"),
        limit=spec.get("limit"),
        seed=spec.get("seed", 0),
        years=years,
        skipped=skipped,
        exclude=exclude,
        excluded=excluded,
    )
    extra = (
        {"dropped_overlapping": [{"row": row, **match} for row, match in zip(excluded, dropped)]}
        if exclude
        else {}
    )
    manifest = write_normalised(
        records,
        sm.output.data,
        source=spec.get("path") or f"hub:{spec['benchmark']}",
        seed=spec.get("seed", 0),
        extra=extra,
    )
    if skipped:
        log(f"skipped {len(skipped)} rows without an extractable answer: {skipped}")
    if excluded:
        log(
            f"dropped {len(excluded)} rows that overlap an evaluation set (listed in the "
            f"manifest): {excluded}"
        )
    log(f"wrote {manifest['count']} records (sha256 {manifest['sha256']})")
