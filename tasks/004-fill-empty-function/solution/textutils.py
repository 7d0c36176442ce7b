"""Small text helpers used by the blog engine."""
import re
import unicodedata


def slugify(title, max_length=50):
    """Turn an article title into a URL slug.

    Rules, applied in this order:

    * Accented letters are reduced to their plain ASCII letter
      ("Crème" -> "Creme"); any other non-ASCII character is dropped.
    * The result is lowercase.
    * Every run of characters that are not ASCII letters or digits becomes a
      single hyphen, and the slug never starts or ends with a hyphen.
    * If the slug is longer than ``max_length``, whole words are dropped from
      the end (a word is never cut in half) until it fits. If even the first
      word is longer than ``max_length``, the slug is that word cut to exactly
      ``max_length`` characters.
    * A title with no usable characters gives an empty string.

    >>> slugify("Hello, World!")
    'hello-world'
    >>> slugify("  Crème brûlée -- 10 recipes  ")
    'creme-brulee-10-recipes'
    >>> slugify("The quick brown fox jumps", max_length=15)
    'the-quick-brown'
    >>> slugify("???")
    ''
    """
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    if not words:
        return ""
    if len(words[0]) >= max_length:
        return words[0][:max_length]
    slug = words[0]
    for word in words[1:]:
        if len(slug) + 1 + len(word) > max_length:
            break
        slug += "-" + word
    return slug


def unique_slug(title, existing, max_length=50):
    """Return a slug for ``title`` that is not in the set ``existing``.

    Appends -2, -3, ... when needed; the suffix counts towards ``max_length``.
    """
    base = slugify(title, max_length)
    if base not in existing:
        return base
    n = 2
    while True:
        suffix = f"-{n}"
        candidate = slugify(title, max_length - len(suffix)) + suffix
        if candidate not in existing:
            return candidate
        n += 1


def reading_time(text, words_per_minute=200):
    """Estimated reading time in whole minutes (at least 1)."""
    words = len(text.split())
    return max(1, -(-words // words_per_minute))
