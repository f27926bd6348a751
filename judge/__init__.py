"""The judge's second reading of finished runs, and outcome evaluation cycles against a rubric."""
