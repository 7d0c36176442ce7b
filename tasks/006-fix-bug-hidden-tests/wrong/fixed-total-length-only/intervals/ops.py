from .model import Interval


def merge_intervals(intervals):
    """Merge overlapping or touching intervals.

    Accepts any iterable of Interval objects or (start, end) pairs, in any
    order, and returns a new list of Interval sorted by start in which no two
    intervals overlap or touch. Empty intervals (start == end) are dropped.
    The input is never modified.
    """
    ordered = sorted(Interval(*iv) for iv in intervals if iv[1] > iv[0])
    merged = []
    for iv in ordered:
        if merged and iv.start <= merged[-1].end:
            merged[-1] = Interval(merged[-1].start, iv.end)
        else:
            merged.append(iv)
    return merged


def total_length(intervals):
    """Total number of minutes covered by the intervals, overlaps counted once."""
    total, reach = 0, None
    for iv in sorted(Interval(*iv) for iv in intervals):
        if reach is None or iv.start >= reach:
            total += iv.length
            reach = iv.end
        elif iv.end > reach:
            total += iv.end - reach
            reach = iv.end
    return total


def gaps(intervals, start, end):
    """Free intervals inside [start, end) that no interval covers, in order."""
    free = []
    cursor = start
    for iv in merge_intervals(intervals):
        if iv.end <= start or iv.start >= end:
            continue
        if iv.start > cursor:
            free.append(Interval(cursor, iv.start))
        cursor = max(cursor, iv.end)
    if cursor < end:
        free.append(Interval(cursor, end))
    return free
