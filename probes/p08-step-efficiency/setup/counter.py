def count_words(text: str) -> dict[str, int]:
    cnt: dict[str, int] = {}
    for word in text.split():
        cnt[word] = cnt.get(word, 0) + 1
    return cnt
