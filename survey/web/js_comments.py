"""Leave out the lines of a JavaScript module that hold nothing but a comment, for the joined page script.

The modules of client_js/ explain themselves in comments, which are most of their bytes (the
respondent page's joined script: 32 KB compressed with them, 19 KB without). The joined script
leaves out every line that is only a comment (``// ...``, or a ``/* ... */`` block standing on
lines of its own), and nothing else: a comment after code on the same line stays, and so does every
line of code, as written. The files themselves, with their comments, stay at /static/js/NAME.

To know where a comment starts, the source is read as JavaScript reads it: strings, template
literals (with ``${...}`` inside), regular-expression literals and comments. A slash starts a
regular expression after an operator, an opening bracket, a comma, a semicolon, a keyword such as
``return``, or at the start (ECMA-262's goal symbols, the usual approximation of tokenizers without a
parser). Should the reading end inside a string, template or comment, the text is returned unchanged.
"""

from __future__ import annotations

import bisect
import re

_REGEX_AFTER = set("(,=:[!&|?{};~+-*%<>^")
_REGEX_KEYWORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield",
                   "await", "instanceof"}
_WORD = re.compile(r"[\w$]+$")
_NAME = re.compile(r"[\w$]+")


def comment_spans(source: str) -> list[tuple[int, int]] | None:
    """Return the (start, end) offsets of every comment in ``source``, or None if the reading does not end in code."""
    spans: list[tuple[int, int]] = []
    # The contexts open at this point: "template" for a template literal, an int for the braces open inside
    # a ${...} of a template literal (the code at top level is the empty stack).
    stack: list = []
    last = ""  # the code read so far, up to its last significant character (for the regex decision)
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if stack and stack[-1] == "template":
            if c == "\\":
                i += 2
            elif c == "`":
                stack.pop()
                last = "`"
                i += 1
            elif source.startswith("${", i):
                stack.append(0)
                last = "{"
                i += 2
            else:
                i += 1
            continue
        if c in " \t\r\n":
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            spans.append((i, end))
            i = end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            if end < 0:
                return None
            spans.append((i, end + 2))
            i = end + 2
        elif c in "'\"":
            j = i + 1
            while j < n and source[j] != c:
                if source[j] == "\n":
                    return None
                j += 2 if source[j] == "\\" else 1
            if j >= n:
                return None
            last = c
            i = j + 1
        elif c == "`":
            stack.append("template")
            i += 1
        elif c == "/" and _starts_regex(last):
            j, in_class = i + 1, False
            while j < n and (in_class or source[j] != "/"):
                if source[j] == "\n":
                    return None
                if source[j] == "\\":
                    j += 1
                elif source[j] == "[":
                    in_class = True
                elif source[j] == "]":
                    in_class = False
                j += 1
            if j >= n:
                return None
            last = "/"
            i = j + 1
        else:
            if c == "{" and stack:
                stack[-1] += 1
            elif c == "}" and stack:
                if stack[-1] == 0:
                    stack.pop()  # the end of a ${...}: back in its template literal
                else:
                    stack[-1] -= 1
            word = _NAME.match(source, i)
            if word:
                last = word.group(0)
                i += len(last)
            else:
                last = c
                i += 1
    return spans if not stack else None


def _starts_regex(last: str) -> bool:
    """Return whether a slash after ``last`` (the previous token) begins a regular-expression literal."""
    if last == "":
        return True
    if _WORD.match(last):
        return last in _REGEX_KEYWORDS
    return last in _REGEX_AFTER


def without_comment_lines(source: str) -> str:
    """Return ``source`` without the lines that hold only a comment (unchanged if it cannot be read to its end)."""
    spans = comment_spans(source)
    if spans is None:
        return source
    drop: set[int] = set()
    starts = [0, *(m.end() for m in re.finditer("\n", source))]
    line_of = _line_finder(starts)
    for start, end in spans:
        first, final = line_of(start), line_of(end - 1 if end > start else start)
        before = source[starts[first]:start]
        after_end = source.find("\n", end)
        after = source[end:(len(source) if after_end < 0 else after_end)]
        if before.strip() == "" and after.strip() == "":
            drop.update(range(first, final + 1))
    lines = source.split("\n")
    return "\n".join(line for number, line in enumerate(lines) if number not in drop)


def _line_finder(starts: list[int]):
    """Return a function giving the 0-based line of an offset, for lines beginning at ``starts``."""
    return lambda offset: bisect.bisect_right(starts, offset) - 1
