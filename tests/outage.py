"""Database errors as Django raises them when the server goes away: the driver's own error
(psycopg's, with no SQLSTATE, as for a connection the server closed) wrapped by Django."""

import psycopg
from django.db import OperationalError


def lost_connection(execute, sql, params, many, context):
    """An execute_wrapper: the statement fails as on a server that closed the connection (the
    error built as Django's wrapper builds it, so on SQLite too)."""
    message = "consuming input failed: server closed the connection unexpectedly"
    raise OperationalError(message) from psycopg.OperationalError(message)


def losing_connection_on(table: str):
    """An execute_wrapper failing only the statements that name `table`, as `lost_connection`."""
    def wrapper(execute, sql, params, many, context):
        if table in sql.lower():
            return lost_connection(execute, sql, params, many, context)
        return execute(sql, params, many, context)
    return wrapper
