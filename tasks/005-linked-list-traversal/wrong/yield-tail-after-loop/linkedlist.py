"""A minimal singly linked list, used to store the editor's undo history."""


class Node:
    __slots__ = ("value", "next")

    def __init__(self, value, next=None):
        self.value = value
        self.next = next


class LinkedList:
    def __init__(self, values=()):
        self.head = None
        self.tail = None
        for value in values:
            self.append(value)

    def append(self, value):
        """Add value at the end of the list."""
        node = Node(value)
        if self.head is None:
            self.head = self.tail = node
        else:
            self.tail.next = node
            self.tail = node

    def prepend(self, value):
        """Add value at the front of the list."""
        self.head = Node(value, self.head)
        if self.tail is None:
            self.tail = self.head

    def __iter__(self):
        node = self.head
        while node.next is not None:
            yield node.value
            node = node.next
        yield node.value

    def __len__(self):
        return sum(1 for _ in self)

    def __contains__(self, value):
        return any(item == value for item in self)

    def __repr__(self):
        return f"LinkedList({list(self)!r})"

    def to_list(self):
        """Return the values as a Python list, head first."""
        return list(self)

    def find(self, predicate):
        """Return the first value for which predicate(value) is true, else None."""
        for value in self:
            if predicate(value):
                return value
        return None

    def remove(self, value):
        """Remove the first node holding value; return True if a node was removed."""
        prev, node = None, self.head
        while node is not None:
            if node.value == value:
                if prev is None:
                    self.head = node.next
                else:
                    prev.next = node.next
                if node is self.tail:
                    self.tail = prev
                return True
            prev, node = node, node.next
        return False
