"""Deprecated: the adapters are ``contextstore_client.adapters`` now (pip install ./clients/python).

Each old module ``contextstore.adapters.<name>`` is that module itself for one release,
imported with a DeprecationWarning.
"""
