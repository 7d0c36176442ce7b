"""FizzBuzz for the maths club handout.

Usage: python3 fizzbuzz.py N    prints the FizzBuzz sequence for 1..N, one per line.
"""
import sys


def label(i):
    """Return the FizzBuzz label for a single positive integer."""
    if i % 15 == 0:
        return "FizzBuzz"
    if i % 3 == 0:
        return "Fizz"
    if i % 5 == 0:
        return "Buzz"
    return str(i)


def fizzbuzz(n):
    """Return the FizzBuzz labels for 1..n (inclusive) as a list of strings."""
    return [label(i) for i in range(n)]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: fizzbuzz.py N", file=sys.stderr)
        return 2
    try:
        n = int(argv[0])
    except ValueError:
        print(f"error: N must be an integer, got {argv[0]!r}", file=sys.stderr)
        return 2
    for line in fizzbuzz(n):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
