"""Planners: one module per planner family, each a subclass of albic.core.planner.Planner."""
