"""Weekly digest for the team blog: which posts to feature and which tags to show."""

from datetime import timedelta


def top_tags(posts, n=3):
    """Return the `n` most used tags across `posts`, most used first.

    A tag counts at most once per post, even if a post lists it twice.
    Tags used equally often are ordered alphabetically.
    """
    counts = {}
    for post in posts:
        for tag in set(post["tags"]):
            counts[tag] = counts.get(tag, 0) + 1
    # Sort on (count desc, name asc): iterating a set/dict of strings follows the
    # per-process hash seed, so ties must never be left to iteration order.
    ranked = sorted(counts, key=lambda tag: (-counts[tag], [-ord(c) for c in tag]))
    return ranked[:n]


def recent_posts(posts, now, days=7):
    """Posts published in the `days` days up to and including `now`, newest first.

    Posts published at exactly the same moment are ordered by id, lowest first.
    """
    cutoff = now - timedelta(days=days)
    recent = [p for p in posts if cutoff <= p["published"] <= now]
    # Two stable sorts: by id ascending, then by publication time descending, so
    # posts with the same timestamp come out by id whatever the input order was.
    by_id = sorted(recent, key=lambda p: p["id"])
    return sorted(by_id, key=lambda p: p["published"], reverse=True)


def build_digest(posts, now, days=7, n_tags=3):
    """The digest: ids of the featured (recent) posts and their top tags."""
    recent = recent_posts(posts, now, days)
    return {
        "post_ids": [p["id"] for p in recent],
        "tags": top_tags(recent, n_tags),
    }
