# Mechanism measures (testbed only; gc2po.reporting.mechanism): what each model does with the cue,
# per base model and model over seeds, and the dose-response of those measures against a setting a
# sweep varies (report.dose_response; gc2po.reporting.dose_response).

MEASURE_SPLITS = CHECKED["measure_splits"]  # gc2po.testbed.mechanism's, memoised by the check
MECHANISM_SPLITS = testbed_plan.mechanism_splits(config, MEASURE_SPLITS)
MECHANISM_TABLES = testbed_plan.mechanism_tables(config, MEASURE_SPLITS)  # table -> (splits, greedy)
DOSE_RESPONSE = testbed_plan.dose_responses(config, RUNS, MEASURE_SPLITS)  # name -> {method, key, markers}
# report.decomposition: wrong bet split into cue avoidance and accuracy, against one reference run
DECOMPOSITION_REFERENCE = testbed_plan.decomposition(config, RUNS)
DECOMPOSITION_OUTPUTS = ([table_file(OUT, "decomposition", ext) for ext in ("md", "csv")]
                         if DECOMPOSITION_REFERENCE else [])
MECHANISM_OUTPUTS = DECOMPOSITION_OUTPUTS + ([table_file(OUT, table, ext) for table in MECHANISM_TABLES for ext in ("md", "csv")]
                     + [path for name in DOSE_RESPONSE
                        for path in (table_file(OUT, name, "md"), table_file(OUT, name, "csv"),
                                     figure_file(OUT, name))])
# copy share against wrong-bet pass@1 per model, for each mechanism table that holds both
MECHANISM_FIGURES = testbed_plan.mechanism_figures(MECHANISM_TABLES)
MECHANISM_OUTPUTS += [figure_file(OUT, table) for table in MECHANISM_FIGURES]
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


rule mechanism_figure:  # drawn from the table, so it shows the table's numbers
    input:
        csv=table_file(OUT, "{figure}", "csv"),
    output:
        png=report(figure_file(OUT, "{figure}"), caption="../report/mechanism_figure.rst",
                   category="4 Mechanism", subcategory="Figures", labels={"figure": "{figure}"}),
    params:
        names=RUN_NAMES,
        greedy=lambda wc: MECHANISM_TABLES[wc.figure][1],
    wildcard_constraints:
        figure="|".join(MECHANISM_FIGURES) or "no_mechanism_figure",
    log:
        f"logs/{NAME}/figures/{{figure}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/mechanism_figure.py"


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


rule decomposition:  # report.decomposition (gc2po.reporting.decomposition)
    input:
        samples=lambda wc: eval_files([label for label in MODELS if label != "base"],
                                      [testbed_plan.DECOMPOSITION_SPLIT]),
        data=f"{RES}/data/{testbed_plan.DECOMPOSITION_SPLIT}.jsonl",
    output:
        md=table_file(OUT, "decomposition", "md"),
        csv=table_file(OUT, "decomposition", "csv"),
    params:
        reference=DECOMPOSITION_REFERENCE,
        benchmark=testbed_plan.DECOMPOSITION_SPLIT,
        names=RUN_NAMES,
    log:
        f"logs/{NAME}/tables/decomposition.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    script:
        "../scripts/decomposition.py"
