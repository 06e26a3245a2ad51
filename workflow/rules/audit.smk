# Reward audit (testbed only): rewards against the oracle's process validity, and the
# perturbation study that picks the operator whose R_cf tracks process validity best.

AUDIT = config.get("audit") or {}
AUDIT_MODELS = AUDIT.get("models", []) if TESTBED else []  # the audit needs the testbed oracle
AUDIT_OUT = f"{OUT}/audit"
AUDIT_FIGURE = [f"{OUT}/figures/reward_audit.png"] if AUDIT_MODELS else []
# the audit over training: checkpoint-<step> of every audited run (the base model is step 0)
AUDIT_STEPS = AUDIT.get("checkpoint_steps", []) if AUDIT_MODELS else []
# every model is scored with the R_cf settings of one run (its resolved GC2POConfig: the
# perturbation, cf_state, lambdas), so the audits of base and trained models compare
AUDIT_REWARD_RUN = AUDIT.get("reward_run") or next((r for r in ("gc2po_add", "gc2po") if r in RUNS), None)
if AUDIT_MODELS and AUDIT_REWARD_RUN not in RUNS:
    raise ValueError(f"audit.reward_run: {AUDIT_REWARD_RUN!r} is not a run of this config "
                     "(the audit scores R_cf with a GC2PO run's settings)")
AUDIT_SETTINGS = (next(j for j in JOBS.values() if j.run == AUDIT_REWARD_RUN).run_config(config)
                  if AUDIT_MODELS else {})
AUDIT_CHECKPOINTS = [f"{AUDIT_OUT}/{base}/{run}/seed{AUDIT.get('seed', 0)}/step{step}/summary.json"
                     for base in BASE_MODELS for run in AUDIT_MODELS if run != "base" and run in models_of(base)
                     for step in AUDIT_STEPS]


rule audit:
    input:
        model=eval_model_input,
        data=f"{RES}/data/{AUDIT.get('split', 'test_id')}.jsonl",
    output:
        summary=f"{AUDIT_OUT}/{{base}}/{{model}}/seed{{seed}}/summary.json",
        completions=f"{AUDIT_OUT}/{{base}}/{{model}}/seed{{seed}}/completions.csv",
        study=f"{AUDIT_OUT}/{{base}}/{{model}}/seed{{seed}}/perturbation_study.csv",
    params:
        model=eval_model_path,
        audit=AUDIT,
        settings=AUDIT_SETTINGS,  # the run config whose R_cf settings score the completions
        study=lambda wc: wc.model == "base",  # the perturbation grid runs on the base model
    log:
        f"logs/{NAME}/audit/{{base}}_{{model}}_seed{{seed}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../scripts/audit.py"


rule audit_checkpoint:  # one kept checkpoint of a run, audited like a model
    input:
        model=f"{OUT}/runs/{{base}}/{{run}}/seed{{seed}}/final",  # the run (and its checkpoints) exists
        data=f"{RES}/data/{AUDIT.get('split', 'test_id')}.jsonl",
    output:
        summary=f"{AUDIT_OUT}/{{base}}/{{run}}/seed{{seed}}/step{{step}}/summary.json",
        completions=f"{AUDIT_OUT}/{{base}}/{{run}}/seed{{seed}}/step{{step}}/completions.csv",
        study=f"{AUDIT_OUT}/{{base}}/{{run}}/seed{{seed}}/step{{step}}/perturbation_study.csv",
    params:
        model=lambda wc: f"{OUT}/runs/{wc.base}/{wc.run}/seed{wc.seed}/checkpoint-{wc.step}",
        audit=AUDIT,
        settings=AUDIT_SETTINGS,
        study=False,
    wildcard_constraints:
        step=r"\d+",
    log:
        f"logs/{NAME}/audit/{{base}}_{{run}}_seed{{seed}}_step{{step}}.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../scripts/audit.py"


rule audit_figure:
    input:
        expand(f"{AUDIT_OUT}/{{base}}/{{model}}/seed{{seed}}/summary.json", base=list(BASE_MODELS), model=AUDIT_MODELS,
               seed=AUDIT.get("seed", 0)),
        AUDIT_CHECKPOINTS,
    output:
        report(f"{OUT}/figures/reward_audit.png", caption="../report/reward_audit.rst", category="5 Reward audit"),
    params:
        names=RUN_NAMES,
    log:
        f"logs/{NAME}/audit_figure.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/audit_figure.py"
