"""Corpus: String formatting and text processing."""

import itertools
import math
import re
from collections import Counter, defaultdict

from .common import Case, ROMAN_TABLE, VOWELS


def format_report(items):
    lines = []
    for name, qty, price in items:
        lines.append(f"{name!r:>10} | {qty:03d} | {price:8.2f} | {qty * price:,.1f} | {name!s:<6}| {name!a}")
    lines.append("%-8s|%5d|%7.3f|%x|%o|%e|%r" % ("total", 42, 3.14159, 255, 8, 12345.678, "q"))
    lines.append("{0:^9}|{1:+d}|{2:.1%}|{name}".format("mid", 7, 0.256, name="kw"))
    width, precision = 10, 3
    lines.append(f"{math.pi:{width}.{precision}f}|{10:b}|{255:#x}|{1234567:_d}|{'x':*^5}|{-3:=+6}")
    lines.append(f"{'nested ' + str(len(items))!r} {items[0][0].upper()=}")
    return lines


def caesar_cipher(text, shift):
    out = []
    for ch in text:
        if ch.isalpha():
            base = ord("A") if ch.isupper() else ord("a")
            out.append(chr((ord(ch) - base + shift) % 26 + base))
        else:
            out.append(ch)
    encoded = "".join(out)
    decoded = encoded.translate(str.maketrans(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "".join(chr((i - shift) % 26 + 97) for i in range(26)) + "".join(chr((i - shift) % 26 + 65) for i in range(26)),
    ))
    return encoded, decoded


def to_roman(number):
    parts = []
    for value, numeral in ROMAN_TABLE:
        count, number = divmod(number, value)
        parts.append(numeral * count)
    return "".join(parts)


def from_roman(text):
    values = {numeral: value for value, numeral in ROMAN_TABLE if len(numeral) == 1}
    total = 0
    for current, following in zip(text, text[1:] + " "):
        v = values[current]
        total += -v if following != " " and values[following] > v else v
    return total


def roman_round_trip(numbers):
    return [(n, to_roman(n), from_roman(to_roman(n))) for n in numbers]


def run_length_encode(text):
    encoded = "".join(f"{len(list(group))}{ch}" for ch, group in itertools.groupby(text))
    decoded = "".join(ch * int(count) for count, ch in re.findall(r"(\d+)(\D)", encoded))
    return encoded, decoded == text


def camel_to_snake(names):
    out = []
    for name in names:
        chars = []
        for i, ch in enumerate(name):
            if ch.isupper() and i and not name[i - 1].isupper():
                chars.append("_")
            chars.append(ch.lower())
        out.append("".join(chars))
    return out


def word_wrap(text, width):
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines


def anagram_groups(words):
    groups = defaultdict(list)
    for word in words:
        groups["".join(sorted(word))].append(word)
    return sorted((sorted(g) for g in groups.values() if len(g) > 1), key=lambda g: (len(g), g))


def balanced_brackets(texts):
    pairs = {")": "(", "]": "[", "}": "{"}

    def check(text):
        stack = []
        for ch in text:
            if ch in "([{":
                stack.append(ch)
            elif ch in pairs:
                if not stack or stack.pop() != pairs[ch]:
                    return False
        return not stack

    return [check(t) for t in texts]


def is_palindrome_sentences(sentences):
    cleaned = ["".join(ch.lower() for ch in s if ch.isalnum()) for s in sentences]
    return [c == c[::-1] for c in cleaned]


def vowel_statistics(text):
    counter = Counter(ch for ch in text.lower() if ch in VOWELS)
    return counter.most_common(3), sum(counter.values()), dict(sorted(counter.items()))


CASES = [
    Case("format_report", format_report, ((("apple", 3, 1.25), ("kiwi", 12, 0.4), ("durian", 1, 15.0)),)),
    Case("caesar_cipher", caesar_cipher, ("Hello, World! xyz", 3)),
    Case("roman_round_trip", roman_round_trip, ((1, 4, 9, 14, 40, 90, 400, 1994, 2024, 3999),)),
    Case("run_length_encode", run_length_encode, ("WWWWBBBWWCCCCCCD",)),
    Case("camel_to_snake", camel_to_snake, (("camelCase", "HTTPServer", "simple", "getHTTPResponseCode"),)),
    Case("word_wrap", word_wrap, ("the quick brown fox jumps over the lazy dog and keeps running far", 16)),
    Case("anagram_groups", anagram_groups, (("listen", "silent", "enlist", "google", "gooegl", "cat", "act", "x"),)),
    Case("balanced_brackets", balanced_brackets, (("([]{})", "([)]", "((", "", "{[()()]}", "}"),)),
    Case("is_palindrome_sentences", is_palindrome_sentences,
         (("A man, a plan, a canal: Panama", "Not one", "Was it a car or a cat I saw?"),)),
    Case("vowel_statistics", vowel_statistics, ("Programming in Python is rather enjoyable",)),
]
