"""Framework adapters: each keeps one agent framework's context in contextstore.

Every adapter is built on ``contextstore.client`` only (no Django import), so an agent process
needs nothing but the client, the framework and a token.
"""
