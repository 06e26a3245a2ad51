"""Tables, figures and bootstrap confidence intervals from saved per-sample results."""
