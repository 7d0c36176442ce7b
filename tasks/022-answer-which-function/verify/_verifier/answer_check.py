"""Grade a final-answer text against required facts.

usage: python3 -I _verifier/answer_check.py _verifier/facts.json
The answer is read from $EVALRUN_ANSWER_FILE. Markdown emphasis/code markup is stripped,
matching is case-insensitive. facts.json: {"facts": [{"fact": "...", "any": [regex, ...]}],
"forbidden": [{"why": "...", "any": [regex, ...]}], "max_chars": N}; a fact is present if any regex
matches. `max_chars` rejects an answer that pastes everything it found, hoping the facts are in it.
"""
import json
import os
import re
import sys


def normalise(text):
    text = text.replace("\r\n", "\n")
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!|])", r"\1", text)     # markdown backslash escapes
    text = re.sub(r"```[^\n]*\n", "\n", text)                     # code fences
    text = text.replace("`", "")                                     # inline code
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)           # links
    text = re.sub(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", r"\1", text)           # **bold**
    text = re.sub(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])", r"\1", text)  # *italic*
    text = re.sub(r"(?<![A-Za-z0-9])__([^_\n]*\s[^_\n]*)__(?![A-Za-z0-9])", r"\1", text)  # __bold text__
    text = re.sub(r"(?<![A-Za-z0-9_])_([^_\n]+?)_(?![A-Za-z0-9_])", r"\1", text)         # _emphasis_
    text = re.sub(r"^\s{0,3}#{1,6}\s*", "", text, flags=re.M)      # headings
    text = re.sub(r"^\s*(?:[-+>]|\d+[.)])\s+", "", text, flags=re.M)  # list markers / quotes
    text = re.sub(r"[ \t]+", " ", text)
    return text


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    path = os.environ.get("EVALRUN_ANSWER_FILE", "")
    if not path or not os.path.isfile(path):
        print("FAIL: no final answer was provided (EVALRUN_ANSWER_FILE is not set or missing)")
        return 1
    with open(path, encoding="utf-8", errors="replace") as fh:
        raw = fh.read()
    if not raw.strip():
        print("FAIL: the final answer is empty; the answer has to be given in the final message, not only in a file")
        return 1
    limit = spec.get("max_chars")
    if limit and len(raw) > limit:
        print(f"FAIL: the answer is {len(raw)} characters long; a direct answer of at most {limit} is "
              "expected, not everything that might contain it")
        return 1
    text = normalise(raw)
    for rule in spec.get("forbidden", []):
        if any(re.search(p, text, re.I | re.S) for p in rule["any"]):
            print(f"FAIL: the answer is wrong: {rule['why']}")
            return 1
    missing = [f["fact"] for f in spec["facts"] if not any(re.search(p, text, re.I | re.S) for p in f["any"])]
    if missing:
        print("FAIL: the answer is missing: " + missing[0])
        for m in missing[1:]:
            print("  also missing: " + m)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
