"""Planners over time: replays, comparisons at equal budgets, their figures, the ALBIC paper's
instances and synthetic workloads. Imports base, core and io (and planners through the registry);
never stats, rollout or testing."""
