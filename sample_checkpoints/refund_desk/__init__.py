"""A deterministic refund-desk agent: the sample that every Stepscope feature is shown on."""
