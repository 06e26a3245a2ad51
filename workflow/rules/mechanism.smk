# Mechanism measures (testbed only; gc2po.reporting.mechanism): what each model does with the cue,
# per base model and model over seeds, and the dose-response of those measures against a setting a
# sweep varies (report.dose_response; gc2po.reporting.dose_response).

# gc2po.testbed.mechanism.MEASURE_SPLITS (importing the testbed here would import torch into every
# parse; tests/workflow/test_mechanism_rules.py keeps the two equal)
MEASURE_SPLITS = ("test_id", "test_wrongbet")
MECHANISM_SPLITS = [split for split in MEASURE_SPLITS if split in BENCHMARKS] if TESTBED else []
# table -> the splits it reads, greedy evaluations or not
MECHANISM_TABLES = {"mechanism": (MECHANISM_SPLITS, False)} if MECHANISM_SPLITS else {}
if GREEDY and set(MECHANISM_SPLITS) & set(GREEDY_BENCHMARKS):
    MECHANISM_TABLES["mechanism_greedy"] = ([s for s in MECHANISM_SPLITS if s in GREEDY_BENCHMARKS],
                                            True)

DOSE_RESPONSE = {}  # output name -> {method, key, markers}
for _i, _spec in enumerate(config["report"].get("dose_response") or []):
    _where = f"report.dose_response[{_i}]"
    if not MECHANISM_SPLITS:
        raise ValueError(f"{_where}: needs mode testbed with test_id or test_wrongbet evaluated "
                         "(the mechanism measures)")
    if not any(r.method == _spec["method"] and _spec["key"] in r.trainer for r in RUNS.values()):
        raise ValueError(f"{_where}: no run of {_spec['method']!r} sets {_spec['key']!r}; sweep it "
                         f"(sweeps.{_spec['key']}, sweep_methods) or name a run that does")
    DOSE_RESPONSE[f"dose_response_{_spec['method']}_{_spec['key']}"] = _spec

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
                   category="4 Ablations", labels={"figure": "{dose}"}),
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
