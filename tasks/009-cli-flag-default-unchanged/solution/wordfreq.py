#!/usr/bin/env python3
"""Print the most frequent words in a text file.

Output: one line per word, the count right-aligned in 7 columns, then the
word; most frequent first, ties broken alphabetically. A summary follows.
Other scripts parse this output, so keep it stable.
"""
import argparse
import re
import sys

WORD_RE = re.compile(r"[A-Za-z']+")


def count_words(text, ignore_case=False):
    counts = {}
    for word in WORD_RE.findall(text):
        word = word.strip("'")
        if ignore_case:
            word = word.lower()
        if word:
            counts[word] = counts.get(word, 0) + 1
    return counts


def top_words(counts, n):
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def build_parser():
    parser = argparse.ArgumentParser(description="Show the most frequent words in a text file.")
    parser.add_argument("path", help="text file to read, or - for stdin")
    parser.add_argument("-n", "--top", type=int, default=10,
                        help="number of words to show (default: 10)")
    parser.add_argument("-i", "--ignore-case", action="store_true",
                        help="count words case-insensitively (reported in lowercase)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.path == "-":
        text = sys.stdin.read()
    else:
        with open(args.path, encoding="utf-8") as fh:
            text = fh.read()
    counts = count_words(text, ignore_case=args.ignore_case)
    for word, count in top_words(counts, args.top):
        print(f"{count:>7} {word}")
    print("-" * 7)
    print(f"{sum(counts.values()):>7} words, {len(counts)} distinct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
