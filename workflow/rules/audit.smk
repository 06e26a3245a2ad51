# Reward audit (testbed only): rewards against the oracle's process validity, and the
# perturbation study that picks the operator whose R_cf tracks process validity best.

AUDIT = config.get("audit") or {}
AUDIT_MODELS = AUDIT.get("models", []) if TESTBED else []  # the audit needs the testbed oracle
AUDIT_OUT = f"{OUT}/audit"
AUDIT_FIGURE = [f"{OUT}/figures/reward_audit.png"] if AUDIT_MODELS else []


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
        trainer=config["train"]["trainer"],  # the audit scores R_cf with the training perturbation
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


rule audit_figure:
    input:
        expand(f"{AUDIT_OUT}/{{base}}/{{model}}/seed{{seed}}/summary.json", base=list(BASE_MODELS), model=AUDIT_MODELS,
               seed=AUDIT.get("seed", 0)),
    output:
        report(f"{OUT}/figures/reward_audit.png", caption="../report/reward_audit.rst", category="5 Reward audit"),
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
