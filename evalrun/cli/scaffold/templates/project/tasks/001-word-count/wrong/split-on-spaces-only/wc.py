"""Count the words on standard input: python3 wc.py < notes.txt"""

import sys


def count_words(text: str) -> int:
    return len([word for word in text.split(" ") if word])


if __name__ == "__main__":
    print(count_words(sys.stdin.read()))
