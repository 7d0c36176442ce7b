import unittest

from linkedlist import LinkedList


class Test1Traversal(unittest.TestCase):
    def test_to_list(self):
        """to_list() must return every value, head first, including the last one"""
        self.assertEqual(LinkedList(["a", "b", "c"]).to_list(), ["a", "b", "c"])
        self.assertEqual(LinkedList([42]).to_list(), [42])

    def test_empty(self):
        """an empty list must iterate, convert and measure without errors"""
        empty = LinkedList()
        self.assertEqual(empty.to_list(), [])
        self.assertEqual(list(empty), [])
        self.assertEqual(len(empty), 0)
        self.assertNotIn("x", empty)
        self.assertEqual(repr(empty), "LinkedList([])")

    def test_iteration_includes_last(self):
        """iterating must yield every value, including the last node"""
        self.assertEqual(list(LinkedList(range(5))), [0, 1, 2, 3, 4])
        self.assertEqual([v for v in LinkedList("xy")], ["x", "y"])

    def test_len(self):
        """len() must count every node"""
        for n in (1, 2, 7):
            self.assertEqual(len(LinkedList(range(n))), n)

    def test_contains_last(self):
        """`in` must find a value stored in the last node"""
        ll = LinkedList(["a", "b", "c"])
        self.assertIn("c", ll)
        self.assertIn("a", ll)
        self.assertNotIn("d", ll)

    def test_find_last(self):
        """find() must be able to return the value of the last node"""
        ll = LinkedList([1, 3, 5, 8])
        self.assertEqual(ll.find(lambda v: v % 2 == 0), 8)
        self.assertIsNone(ll.find(lambda v: v > 10))

    def test_repr(self):
        """repr() must show all values"""
        self.assertEqual(repr(LinkedList([1, 2])), "LinkedList([1, 2])")


class Test2Mutation(unittest.TestCase):
    def test_append_prepend(self):
        """append/prepend must still work and be visible in iteration"""
        ll = LinkedList()
        ll.append(2)
        ll.prepend(1)
        ll.append(3)
        self.assertEqual(ll.to_list(), [1, 2, 3])
        self.assertEqual(len(ll), 3)

    def test_remove(self):
        """remove() must unlink nodes (head, middle, tail) and keep the tail right"""
        ll = LinkedList([1, 2, 3, 4])
        self.assertTrue(ll.remove(4))
        self.assertEqual(ll.to_list(), [1, 2, 3])
        ll.append(5)
        self.assertEqual(ll.to_list(), [1, 2, 3, 5])
        self.assertTrue(ll.remove(1))
        self.assertTrue(ll.remove(3))
        self.assertFalse(ll.remove(99))
        self.assertEqual(ll.to_list(), [2, 5])
        self.assertTrue(ll.remove(2))
        self.assertTrue(ll.remove(5))
        self.assertEqual(ll.to_list(), [])
        self.assertEqual(len(ll), 0)

    def test_no_extra_nodes_visited(self):
        """iteration must stop at the end of the list (no extra values)"""
        ll = LinkedList([None, None])
        self.assertEqual(list(ll), [None, None])


if __name__ == "__main__":
    unittest.main()
