"""Every write goes through here. Each service owns its transaction and its audit record."""
