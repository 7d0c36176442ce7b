"""Parsing and validation of user-supplied server settings.

The messages raised here are shown to users verbatim by the CLI, so keep them
friendly and stable.
"""

LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_TIMEOUT = 30.0


class SettingsError(ValueError):
    """Raised when a user-supplied setting cannot be used."""


def parse_port(raw):
    """Parse a TCP port number given as a string."""
    try:
        port = int(raw)
    except (TypeError, ValueError):
        port = None
    if port is None or not 1 <= port <= 65535:
        raise SettingsError(f"Invalid port number: {raw!r} (expected an integer between 1 and 65535)")
    return port


def parse_timeout(raw):
    """Parse a timeout in seconds; an empty string means the default."""
    if raw == "":
        return DEFAULT_TIMEOUT
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = -1.0
    if not seconds > 0:
        raise SettingsError(f"Invalid timeout: {raw!r} (expected a positive number of seconds)")
    return seconds


def parse_log_level(raw):
    """Parse a log level name (case-insensitive)."""
    level = str(raw).strip().lower()
    if level not in LOG_LEVELS:
        choices = ", ".join(LOG_LEVELS)
        raise SettingsError(f"Unknown log level: {raw!r} (choose one of: {choices})")
    return level


def parse_settings(values):
    """Validate a dict of raw string settings and return the parsed values."""
    return {
        "port": parse_port(values.get("port", "8080")),
        "timeout": parse_timeout(values.get("timeout", "")),
        "log_level": parse_log_level(values.get("log_level", "info")),
    }
