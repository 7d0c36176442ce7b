"""Hidden checks for linkedlist.py, decided here; the workspace's code runs only in a child."""

import os
import sys
import unittest

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402

W = None


def setUpModule():
    global W
    W = kit.Session("from linkedlist import LinkedList")


def tearDownModule():
    W.close()


class Test1Traversal(unittest.TestCase):
    def test_to_list(self):
        """to_list() must return every value, head first, including the last one"""
        self.assertEqual(W.value("LinkedList(['a', 'b', 'c']).to_list()"), ["a", "b", "c"])
        self.assertEqual(W.value("LinkedList([42]).to_list()"), [42])

    def test_empty(self):
        """an empty list must iterate, convert and measure without errors"""
        W.exec("empty = LinkedList()")
        self.assertEqual(W.value("empty.to_list()"), [])
        self.assertEqual(W.value("list(empty)"), [])
        self.assertEqual(W.value("len(empty)"), 0)
        self.assertFalse(W.value("'x' in empty"))
        self.assertEqual(W.value("repr(empty)"), "LinkedList([])")

    def test_iteration_includes_last(self):
        """iterating must yield every value, including the last node"""
        self.assertEqual(W.value("list(LinkedList(range(5)))"), [0, 1, 2, 3, 4])
        self.assertEqual(W.value("[v for v in LinkedList('xy')]"), ["x", "y"])

    def test_len(self):
        """len() must count every node"""
        for n in (1, 2, 7):
            self.assertEqual(W.value(f"len(LinkedList(range({n})))"), n)

    def test_contains_last(self):
        """`in` must find a value stored in the last node"""
        W.exec("ll = LinkedList(['a', 'b', 'c'])")
        self.assertTrue(W.value("'c' in ll"))
        self.assertTrue(W.value("'a' in ll"))
        self.assertFalse(W.value("'d' in ll"))

    def test_find_last(self):
        """find() must be able to return the value of the last node"""
        W.exec("ll = LinkedList([1, 3, 5, 8])")
        self.assertEqual(W.value("ll.find(lambda v: v % 2 == 0)"), 8)
        self.assertIsNone(W.value("ll.find(lambda v: v > 10)"))

    def test_repr(self):
        """repr() must show all values"""
        self.assertEqual(W.value("repr(LinkedList([1, 2]))"), "LinkedList([1, 2])")


class Test2Mutation(unittest.TestCase):
    def test_append_prepend(self):
        """append/prepend must still work and be visible in iteration"""
        W.exec("ll = LinkedList()\nll.append(2)\nll.prepend(1)\nll.append(3)")
        self.assertEqual(W.value("ll.to_list()"), [1, 2, 3])
        self.assertEqual(W.value("len(ll)"), 3)

    def test_remove(self):
        """remove() must unlink nodes (head, middle, tail) and keep the tail right"""
        W.exec("ll = LinkedList([1, 2, 3, 4])")
        self.assertTrue(W.value("ll.remove(4)"))
        self.assertEqual(W.value("ll.to_list()"), [1, 2, 3])
        W.exec("ll.append(5)")
        self.assertEqual(W.value("ll.to_list()"), [1, 2, 3, 5])
        self.assertTrue(W.value("ll.remove(1)"))
        self.assertTrue(W.value("ll.remove(3)"))
        self.assertFalse(W.value("ll.remove(99)"))
        self.assertEqual(W.value("ll.to_list()"), [2, 5])
        self.assertTrue(W.value("ll.remove(2)"))
        self.assertTrue(W.value("ll.remove(5)"))
        self.assertEqual(W.value("ll.to_list()"), [])
        self.assertEqual(W.value("len(ll)"), 0)

    def test_no_extra_nodes_visited(self):
        """iteration must stop at the end of the list (no extra values)"""
        self.assertEqual(W.value("list(LinkedList([None, None]))"), [None, None])


if __name__ == "__main__":
    kit.main()
