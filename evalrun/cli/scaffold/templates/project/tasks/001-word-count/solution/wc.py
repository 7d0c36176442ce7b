"""Count the words on standard input: python3 wc.py < notes.txt"""

import sys


def count_words(text: str) -> int:
    return len(text.split())


if __name__ == "__main__":
    print(count_words(sys.stdin.read()))
