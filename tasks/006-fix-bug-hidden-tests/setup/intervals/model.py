from typing import NamedTuple


class Interval(NamedTuple):
    """A half-open interval [start, end) of minutes since midnight."""

    start: int
    end: int

    @property
    def length(self):
        return self.end - self.start

    def overlaps(self, other):
        """True if the two intervals share at least one minute."""
        return self.start < other.end and other.start < self.end

    def __str__(self):
        return f"{_hhmm(self.start)}-{_hhmm(self.end)}"


def parse_interval(text):
    """Parse 'HH:MM-HH:MM' into an Interval; raise ValueError if malformed."""
    try:
        left, right = text.split("-")
        start, end = _minutes(left), _minutes(right)
    except ValueError:
        raise ValueError(f"bad interval: {text!r}") from None
    if end < start:
        raise ValueError(f"interval ends before it starts: {text!r}")
    return Interval(start, end)


def _minutes(hhmm):
    hours, minutes = hhmm.strip().split(":")
    h, m = int(hours), int(minutes)
    if not (0 <= h <= 24 and 0 <= m < 60) or (h == 24 and m):
        raise ValueError(hhmm)
    return h * 60 + m


def _hhmm(minutes):
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
