# Mechanism measures (testbed only; gc2po.reporting.mechanism): what each model does with the cue,
# per base model and model over seeds, and the dose-response of those measures against a setting a
# sweep varies (report.dose_response; gc2po.reporting.dose_response).

MEASURE_SPLITS = CHECKED["measure_splits"]  # gc2po.testbed.mechanism's, memoised by the check
MECHANISM_SPLITS = testbed_plan.mechanism_splits(config, MEASURE_SPLITS)
MECHANISM_TABLES = testbed_plan.mechanism_tables(config, MEASURE_SPLITS)  # table -> (splits, greedy)
DOSE_RESPONSE = testbed_plan.dose_responses(config, RUNS, MEASURE_SPLITS)  # name -> {method, key, markers}
MECHANISM_OUTPUTS = ([table_file(OUT, table, ext) for table in MECHANISM_TABLES for ext in ("md", "csv")]
                     + [path for name in DOSE_RESPONSE
                        for path in (table_file(OUT, name, "md"), table_file(OUT, name, "csv"),
                                     figure_file(OUT, name))])
# what the scripts need of a run: its method and own settings (a sweep's value)
RUN_SETTINGS = {label: {"method": run.method, "trainer": run.trainer} for label, run in RUNS.items()}


rule mechanism:
    input:
        samples=lambda wc: eval_files(MODELS, MECHANISM_TABLES[wc.mechanism][0],
                                      greedy=MECHANISM_TABLES[wc.mechanism][1]),
        data=lambda wc: expand(f"{RES}/data/{{split}}.jsonl", split=MECHANISM_TABLES[wc.mechanism][0]),
    output:
        md=table_file(OUT, "{mechanism}", "md"),
        csv=table_file(OUT, "{mechanism}", "csv"),
    params:
        splits=lambda wc: MECHANISM_TABLES[wc.mechanism][0],
        names=RUN_NAMES,
        title=lambda wc: "What each model does with the cue" + (
            ", greedy decoding" if MECHANISM_TABLES[wc.mechanism][1] else ""),
    wildcard_constraints:
        mechanism="|".join(MECHANISM_TABLES) or "no_mechanism",
    log:
        f"logs/{NAME}/tables/{{mechanism}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    script:
        "../scripts/mechanism.py"


rule dose_response:
    input:
        samples=lambda wc: eval_files(
            ["base"] + [label for label, run in RUNS.items()
                        if run.method == DOSE_RESPONSE[wc.dose]["method"]
                        and DOSE_RESPONSE[wc.dose]["key"] in run.trainer],
            MECHANISM_SPLITS),
        data=expand(f"{RES}/data/{{split}}.jsonl", split=MECHANISM_SPLITS),
    output:
        md=table_file(OUT, "{dose}", "md"),
        csv=table_file(OUT, "{dose}", "csv"),
        png=report(figure_file(OUT, "{dose}"), caption="../report/dose_response.rst",
                   category="4 Mechanism", subcategory="Dose response",
                   labels={"figure": "{dose}"}),
    params:
        spec=lambda wc: DOSE_RESPONSE[wc.dose],
        splits=MECHANISM_SPLITS,
        runs=RUN_SETTINGS,
        names=RUN_NAMES,
    wildcard_constraints:
        dose="|".join(DOSE_RESPONSE) or "no_dose_response",
    log:
        f"logs/{NAME}/tables/{{dose}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    script:
        "../scripts/dose_response.py"


rule candidates:  # a family's runs against the pre-registered candidate rule (report.families[].candidates)
    input:
        family=lambda wc: table_file(OUT, CANDIDATES[wc.candidates], "csv"),
        mechanism=table_file(OUT, "mechanism", "csv"),
    output:
        md=table_file(OUT, "{candidates}", "md"),
        csv=table_file(OUT, "{candidates}", "csv"),
    params:
        spec=lambda wc: FAMILIES[CANDIDATES[wc.candidates]],
        names=RUN_NAMES,
    wildcard_constraints:
        candidates="|".join(CANDIDATES) or "no_candidates",
    log:
        f"logs/{NAME}/tables/{{candidates}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/candidates.py"
