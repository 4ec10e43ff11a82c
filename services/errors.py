"""Typed errors raised at the edges; views turn them into messages a person can act on."""

from __future__ import annotations


class TrialLandscapeError(Exception):
    """Base class: every error the services raise on purpose."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint


class DatabaseUnavailable(TrialLandscapeError):
    """The database cannot be reached (stopped, restarting, wrong address)."""

    hint = "The database is not answering. Wait a few seconds and press Retry."


class DatabaseBusy(TrialLandscapeError):
    """Every connection of this process's pool stayed in use past the wait, while the database itself answers."""

    hint = "Many people are using the app at once; the page tries again by itself in a few seconds."


class QueryTimeout(TrialLandscapeError):
    """A query ran past its statement timeout and was cancelled by the server."""

    hint = "The query took too long and was stopped. Narrow the filters or try again."


class QueryFailed(TrialLandscapeError):
    """The database answered with an error for a query."""


class QueryTooHeavy(QueryFailed):
    """A query passed a resource limit on the database server (its memory, its temporary files) and was stopped."""

    hint = ("Aggregate earlier or over fewer rows, select fewer columns, and check that every join has a join "
            "condition.")


class BadInput(TrialLandscapeError):
    """A file, argument or value that cannot be used as given."""


class UnsafeQuery(BadInput):
    """User SQL refused by the guard; the message says why in one sentence."""


class ResultTooLarge(BadInput):
    """A console result holds a value larger than the console's per-value cap; the query was cancelled."""

    hint = ("Select a shorter expression (left(text, 1000), octet_length(…), an aggregate) instead of the "
            "whole value.")


class ConsoleBusy(BadInput):
    """The console's query budget is taken (this visitor's one query, or the process's few)."""


class AssistantUnavailable(TrialLandscapeError):
    """The model API cannot be reached or refused the request."""

    hint = "The assistant's model service cannot be reached. Your session is kept; try again later or use guided mode."
