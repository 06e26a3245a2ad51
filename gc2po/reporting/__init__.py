"""Tables, figures, and their statistics (t-intervals over seeds, paired tests, Holm, power)
from saved per-sample results."""
