"""The planning of a workflow config, which the Snakemake workflow and ``gc2po plan`` read (the
training runtime imports none of it), each module one job, every import downward:

- ``config_files`` (reading and merging config files), ``config_schema`` (the schema, refused in
  one line naming the key), ``config_check`` (the whole check, memoised);
- ``base_models`` (the base-model entries and ``bases``), ``plan`` (the config -> training jobs,
  one per base model, run and seed, each with the run config it trains from);
- ``accelerate_config``, ``launch``, ``node_launch``: a job's launch command (``accelerate
  launch`` and its config, one launcher per node); ``resources``: what a job asks its scheduler
  for, from what it runs;
- ``model_shapes``, ``job_shape``, ``memory``, ``memory_check``: a job's shape, its GPU memory
  estimate and the refusal of a job that does not fit; ``global_batch``: the batch split;
- ``run_length``, ``run_disk``, ``budget``: steps, disk and GPU-hours before the first job;
  ``plan_summary``: what ``gc2po plan`` prints;
- ``report_plan``, ``benchmark_plan``, ``testbed_plan``, ``reasoning_plan``: what the rules wire
  beyond the jobs, with defaults from ``method_facts`` (each method's role and sweeps, never its
  name); ``script_log``: the workflow scripts' log files; ``profile_check``: a cluster profile's
  placeholders; ``config_reference``: writes docs/config-reference.md.
"""
