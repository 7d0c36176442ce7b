"""Half-open time intervals [start, end), in minutes, for the booking report."""
from .model import Interval, parse_interval
from .ops import gaps, merge_intervals, total_length

__all__ = ["Interval", "parse_interval", "merge_intervals", "total_length", "gaps"]
