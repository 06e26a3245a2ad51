# Reward audit (testbed only): rewards against the oracle's process validity, and the
# perturbation study that picks the operator whose R_cf tracks process validity best.

AUDIT = config.get("audit") or {}
AUDIT_MODELS = AUDIT.get("models", []) if TESTBED else []  # the audit needs the testbed oracle
AUDIT_FIGURE = [figure_file(OUT, "reward_audit")] if AUDIT_MODELS else []
# the within-problem audit of the per-episode signals (R_cf per cf_state, answer dependence, the
# noisy oracle as a check), every audited model and checkpoint: tables/signal_audit.{md,csv}
# and each audited run's own signal over its training: tables/signal_audit_trained.{md,csv}
AUDIT_TABLES = ([table_file(OUT, name, ext) for name in ("signal_audit", "signal_audit_trained")
                 for ext in ("md", "csv")] if AUDIT_MODELS else [])
# the audit over training: checkpoint-<step> of every audited run (the base model is step 0)
AUDIT_STEPS = AUDIT.get("checkpoint_steps", []) if AUDIT_MODELS else []
# every model is scored with the R_cf settings of one run (its resolved GC2POConfig: the
# perturbation, cf_state, lambdas), so the audits of base and trained models compare
# (audit.reward_run; default: the corrected method's run, else the paper's)
AUDIT_REWARD_RUN = testbed_plan.audit_reward_run(config, RUNS, METHOD_FACTS)

# the run.yaml whose R_cf settings score an audit on a base model: the reward run's first seed's
# (every seed has the same settings)
AUDIT_SETTINGS = (RunDir("{base}", AUDIT_REWARD_RUN, RUNS[AUDIT_REWARD_RUN].seeds[0]).run_config(OUT)
                  if AUDIT_MODELS else [])
AUDIT_SEED = AUDIT.get("seed", 0)
AUDIT_CHECKPOINTS = [CheckpointAuditDir(base, run, AUDIT_SEED, step).file(OUT, AuditDir.SUMMARY)
                     for base in BASE_MODELS for run in AUDIT_MODELS if run != "base" and run in models_of(base)
                     for step in AUDIT_STEPS]
MODEL_AUDIT = AuditDir("{base}", "{model}", "{seed}")  # the audit rules' wildcards
CHECKPOINT_AUDIT = CheckpointAuditDir("{base}", "{run}", "{seed}", "{step}")


rule audit:
    input:
        model=eval_model_input,
        data=f"{RES}/data/{AUDIT.get('split', 'test_id')}.jsonl",
        settings=AUDIT_SETTINGS,  # the run.yaml whose R_cf settings score the completions
    output:
        summary=MODEL_AUDIT.file(OUT, AuditDir.SUMMARY),
        completions=MODEL_AUDIT.file(OUT, AuditDir.COMPLETIONS),
        episodes=MODEL_AUDIT.file(OUT, AuditDir.EPISODES),
        study=MODEL_AUDIT.file(OUT, AuditDir.STUDY),
    params:
        model=eval_model_path,
        audit=AUDIT,
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
        model=RUN_PATTERN.final(OUT),  # the run (and its checkpoints) exists
        data=f"{RES}/data/{AUDIT.get('split', 'test_id')}.jsonl",
        settings=AUDIT_SETTINGS,
    output:
        summary=CHECKPOINT_AUDIT.file(OUT, AuditDir.SUMMARY),
        completions=CHECKPOINT_AUDIT.file(OUT, AuditDir.COMPLETIONS),
        episodes=CHECKPOINT_AUDIT.file(OUT, AuditDir.EPISODES),
        study=CHECKPOINT_AUDIT.file(OUT, AuditDir.STUDY),
    params:
        model=lambda wc: RunDir(wc.base, wc.run, wc.seed).checkpoint(OUT, wc.step),
        audit=AUDIT,
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


AUDIT_SUMMARIES = [AuditDir(base, model, AUDIT_SEED).file(OUT, AuditDir.SUMMARY)
                   for base in BASE_MODELS for model in AUDIT_MODELS] + AUDIT_CHECKPOINTS


rule audit_figure:
    input:
        AUDIT_SUMMARIES,
    output:
        report(figure_file(OUT, "reward_audit"), caption="../report/reward_audit.rst",
               category="6 Reward audit", subcategory="Figures"),
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


rule signal_audit_table:
    input:
        AUDIT_SUMMARIES,
    output:
        md=table_file(OUT, "signal_audit", "md"),
        csv=table_file(OUT, "signal_audit", "csv"),
        trained_md=table_file(OUT, "signal_audit_trained", "md"),
        trained_csv=table_file(OUT, "signal_audit_trained", "csv"),
    params:
        names=RUN_NAMES,
        trained=testbed_plan.audit_trained_signals(config, RUNS, RUN_NAMES),
    log:
        f"logs/{NAME}/signal_audit_table.log",
    conda:
        "../envs/gc2po.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/signal_audit_table.py"
