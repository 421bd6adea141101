"""Framework adapters: each keeps one agent framework's context in contextstore.

Every adapter is built on the client (``contextstore_client``) only, so an agent process
needs nothing but the client, the framework and a token.
"""
