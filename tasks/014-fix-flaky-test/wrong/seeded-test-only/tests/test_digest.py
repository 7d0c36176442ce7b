import random
import unittest
from datetime import datetime, timedelta

from digest import build_digest, recent_posts, top_tags

random.seed(20240517)  # make the shuffle reproducible

NOW = datetime(2024, 5, 17, 12, 0)


def post(post_id, hours_ago, tags):
    return {
        "id": post_id,
        "title": f"Post {post_id}",
        "published": NOW - timedelta(hours=hours_ago),
        "tags": tags,
    }


POSTS = [
    post(1, 2, ["python", "testing"]),
    post(2, 5, ["git", "python"]),
    post(3, 5, ["sql", "python", "git"]),
    post(4, 30, ["sql", "git", "python"]),
    post(5, 50, ["docker", "ci"]),
    post(6, 71, ["ci"]),
    post(7, 24 * 9, ["python", "rust", "rust"]),  # older than a week
]


class TopTagsTest(unittest.TestCase):
    def test_counts_a_tag_once_per_post(self):
        posts = [{"tags": ["a", "a", "a", "b"]}, {"tags": ["b"]}, {"tags": ["c", "b"]}]
        self.assertEqual(top_tags(posts, n=1), ["b"])

    def test_most_used_first(self):
        self.assertCountEqual(top_tags(POSTS[:6], n=4), ["python", "git", "ci", "sql"])


class RecentPostsTest(unittest.TestCase):
    def test_drops_posts_older_than_a_week(self):
        ids = [p["id"] for p in recent_posts(POSTS, NOW)]
        self.assertNotIn(7, ids)
        self.assertEqual(len(ids), 6)

    def test_newest_first(self):
        shuffled = POSTS[:]
        random.shuffle(shuffled)  # input order must not matter
        ids = [p["id"] for p in recent_posts(shuffled, NOW)]
        self.assertEqual(ids[0], 1)
        self.assertEqual(sorted(ids[1:3]), [2, 3])  # same timestamp
        self.assertEqual(ids[3:], [4, 5, 6])


class DigestTest(unittest.TestCase):
    def test_digest(self):
        digest = build_digest(POSTS, NOW, n_tags=3)
        self.assertEqual(digest["post_ids"], [1, 2, 3, 4, 5, 6])
        self.assertEqual(digest["tags"][:2], ["python", "git"])
        self.assertIn(digest["tags"][2], ("ci", "sql"))  # tie


if __name__ == "__main__":
    unittest.main()
