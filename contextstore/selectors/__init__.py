"""Shared reads. Each returns a queryset (or plain data) and reads only what it returns.

One module per subject; callers import from the module:
events (the filtered event query, navigation seqs), threads (a thread and its parts),
sessions (session lists and figures), workspaces (memories, actor names), calls (model and
tool calls paired), windows (peteos' rolling windows), rendering (the context render's
planning), renders (render records), cache (prompt-cache verdicts), timeline, dashboard,
document, agent_sessions.
"""
