"""Dashboard views by area; each serves its page and, for htmx requests, a named partial."""
