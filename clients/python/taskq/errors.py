"""Typed errors for taskq's SQLSTATEs.

Every error a taskq function raises reaches Python as a ``psycopg.Error``; the
helpers of this package turn it into one of the classes below, chosen by its
SQLSTATE, with the original as ``__cause__``.  ``Error.sqlstate`` is the
five-character code, ``Error.message`` the server's primary message.
"""

import psycopg


class Error(Exception):
    """A taskq function failed; ``sqlstate`` says why (README.md, Errors)."""

    sqlstate = None

    def __init__(self, message, sqlstate=None):
        super().__init__(message)
        self.message = message
        if sqlstate is not None:
            self.sqlstate = sqlstate

    def __str__(self):
        return f"{self.sqlstate}: {self.message}" if self.sqlstate else self.message


class TokenError(Error):
    """TQ001: the performance token is not the task's (the lease was lost and
    another worker claimed the task)."""

    sqlstate = "TQ001"


class UnknownTaskError(Error):
    """42704: no task (or job) has that id."""

    sqlstate = "42704"


class StateError(Error):
    """55000: the task's state does not allow the call (finished, started,
    held under a live lease, waits for an aborted task)."""

    sqlstate = "55000"


class DuplicateTaskError(Error):
    """23505: a task with that id exists."""

    sqlstate = "23505"


class MissingDependencyError(Error):
    """23503: a dependency names a task that does not exist."""

    sqlstate = "23503"


class InvalidArgumentError(Error):
    """Class 22: a NULL, malformed or out-of-range argument (22004, 22023,
    22001, 22003, 22008, 2202E, 22P02, ...)."""


class PrivilegeError(Error):
    """42501: the role may not call the function or act on the task."""

    sqlstate = "42501"


class RetryableError(Error):
    """40001 or 40P01: retry the transaction; or UnavailableError below."""


class UnavailableError(RetryableError):
    """The database cannot serve the call now: the connection failed (class
    08: 08000, 08001, 08003, 08004, 08006, ...), the server shuts down
    (57P01, 57P02, 57P03), too many connections (53300), or it is read-only
    (25006: a standby, or a primary demoted by a failover).  Retry on a new
    connection (a multi-host connection string with
    ``target_session_attrs=read-write`` finds the new primary), and only
    calls that are safe to repeat: ``insert_if_absent`` with the same ids, a
    return with the same token, a claim, a wait.  A call whose commit was
    not acknowledged may or may not have committed."""


#: The SQLSTATEs of UnavailableError besides class 08.
UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300", "25006"})


def is_unavailable(exc):
    """Whether exc (a psycopg or taskq error) says the database cannot serve
    now (UnavailableError's SQLSTATEs, or a connection that failed without
    one): retry on a new connection."""
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate:
        return sqlstate.startswith("08") or sqlstate in UNAVAILABLE_SQLSTATES
    return isinstance(exc, (psycopg.OperationalError, UnavailableError))


_BY_SQLSTATE = {cls.sqlstate: cls for cls in
                (TokenError, UnknownTaskError, StateError, DuplicateTaskError,
                 MissingDependencyError, PrivilegeError)}


def error_class(sqlstate):
    """The class of this package for a SQLSTATE (Error when none fits)."""
    if sqlstate in _BY_SQLSTATE:
        return _BY_SQLSTATE[sqlstate]
    if sqlstate in ("40001", "40P01"):
        return RetryableError
    if sqlstate and (sqlstate.startswith("08") or sqlstate in UNAVAILABLE_SQLSTATES):
        return UnavailableError
    if sqlstate and sqlstate.startswith("22"):
        return InvalidArgumentError
    return Error


def from_psycopg(exc):
    """A taskq Error for a psycopg.Error (to raise ``from`` it)."""
    sqlstate = getattr(exc, "sqlstate", None)
    message = None
    diag = getattr(exc, "diag", None)
    if diag is not None:
        message = diag.message_primary
    cls = error_class(sqlstate)
    if sqlstate is None and isinstance(exc, psycopg.OperationalError):
        cls = UnavailableError      # connection refused, closed, ...: no SQLSTATE
    return cls(message or str(exc).strip(), sqlstate)


class translated:
    """Context manager: a psycopg.Error raised inside becomes a taskq Error.

        with taskq.errors.translated():
            conn.execute("SELECT taskq.return_task(...)")
    """

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and isinstance(exc, psycopg.Error) and not isinstance(exc, Error):
            raise from_psycopg(exc) from exc
        return False
