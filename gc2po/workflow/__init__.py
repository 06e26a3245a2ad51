"""The planning of a workflow config, which the Snakemake workflow and ``gc2po plan`` read (the
training runtime imports none of it):

- ``config_schema``: the workflow config against its schema, refused in one line naming the key;
- ``plan``: the config -> training jobs (one per base model, run and seed), each with the
  resolved run config it trains from; ``config_check``: the whole check, memoised;
- ``report_plan``: what the rules wire beyond the jobs (tables, comparisons, learning curves,
  the length figure's runs, the audit's reward run), with defaults from ``method_facts`` (each
  method's role and sweeps, never its name); ``script_log``: the workflow scripts' log files;
- ``launch``: a job's launch command (``accelerate launch`` and its config);
- ``job_shape``, ``memory``: a job's shape and its GPU memory estimate; ``plan_summary``: what
  ``gc2po plan`` prints.
"""
