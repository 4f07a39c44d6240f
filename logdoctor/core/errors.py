"""Exceptions that map to documented exit codes (design.md): usage/input errors exit 2."""

from __future__ import annotations


class LogdoctorError(Exception):
    """Base class: something the user can fix. The message is one line, shown as is."""

    exit_code = 2


class InputError(LogdoctorError):
    """The input cannot be read as a log (binary, empty, corrupt archive, unreadable file)."""


class UsageError(LogdoctorError):
    """Bad combination of options or arguments."""


class RuleError(LogdoctorError):
    """A rule file is malformed; the message names the file (and line when known)."""


class InstallError(LogdoctorError):
    """The installation itself is broken (no bundled rule base): exit 4, like an internal error, in one line."""

    exit_code = 4


class MissingExtra(UsageError):
    """A command needs an optional dependency group: the message names the `pip install 'logdoctor[X]'` line."""
