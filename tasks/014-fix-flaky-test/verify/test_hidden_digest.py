import itertools
import unittest
from datetime import datetime, timedelta

import digest

NOW = datetime(2024, 3, 1, 9, 30)


def p(pid, hours_ago, tags=()):
    return {"id": pid, "title": f"t{pid}", "published": NOW - timedelta(hours=hours_ago), "tags": list(tags)}


class Base(unittest.TestCase):
    longMessage = False


class A_TopTags(Base):
    def test_1_tag_once_per_post(self):
        posts = [{"tags": ["x", "x", "x"]}, {"tags": ["y"]}, {"tags": ["y", "x"]}, {"tags": ["y"]}]
        got = digest.top_tags(posts, n=2)
        self.assertEqual(got, ["y", "x"], f"top_tags must count a tag once per post: got {got}, expected ['y', 'x']")

    def test_2_all_ties_alphabetical(self):
        names = ["delta", "alpha", "kilo", "charlie", "bravo", "echo", "foxtrot", "golf"]
        for perm in itertools.islice(itertools.permutations(names), 0, 5000, 97):
            posts = [{"tags": [t]} for t in perm]
            got = digest.top_tags(posts, n=3)
            self.assertEqual(got, ["alpha", "bravo", "charlie"],
                             f"top_tags does not order equally used tags alphabetically: got {got}, "
                             "expected ['alpha', 'bravo', 'charlie']")
            self.assertEqual(digest.top_tags(posts, n=8), sorted(names),
                             "top_tags does not order equally used tags alphabetically")

    def test_3_counts_then_alphabetical(self):
        posts = [{"tags": ["zeta", "mu", "mu"]}, {"tags": ["zeta", "beta"]}, {"tags": ["mu", "alpha"]},
                 {"tags": ["omega", "zeta"]}, {"tags": ["beta", "mu", "omega"]}]
        want = ["mu", "zeta", "beta", "omega", "alpha"]
        got = digest.top_tags(posts, n=10)
        self.assertEqual(got, want, f"top_tags must rank by number of posts, then alphabetically: got {got}, expected {want}")


class B_RecentPosts(Base):
    def test_1_same_time_ordered_by_id(self):
        posts = [p(14, 1), p(3, 1), p(9, 4), p(27, 4), p(5, 4), p(11, 0)]
        want = [11, 3, 14, 5, 9, 27]
        for perm in itertools.permutations(posts):
            got = [x["id"] for x in digest.recent_posts(list(perm), NOW)]
            self.assertEqual(got, want, "recent_posts must return newest first and same-time posts by id "
                             f"whatever the input order: got {got}, expected {want}")

    def test_2_window_bounds(self):
        posts = [p(1, 24 * 7), p(2, 24 * 7 + 0.001), p(3, 0), p(4, -1), p(5, 24 * 3)]
        got = [x["id"] for x in digest.recent_posts(posts, NOW)]
        self.assertEqual(got, [3, 5, 1], f"recent_posts window (inclusive bounds, nothing in the future) changed: got {got}")
        got = [x["id"] for x in digest.recent_posts(posts, NOW, days=1)]
        self.assertEqual(got, [3], f"recent_posts ignores the days argument: got {got}")


class C_Digest(Base):
    def test_digest(self):
        posts = [p(8, 30, ["b", "a"]), p(2, 30, ["a", "c"]), p(5, 2, ["c", "b"]), p(1, 500, ["z"])]
        want = {"post_ids": [5, 2, 8], "tags": ["a", "b"]}
        for perm in itertools.permutations(posts):
            got = digest.build_digest(list(perm), NOW, n_tags=2)
            self.assertEqual(got, want, f"build_digest returned {got}, expected {want}")
